#include "support/process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace idforge::test_support {
namespace {

// NAME of "NAME=value".
std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// Our environment without the names starting with one of `drop_prefixes`, with
// `overrides` added, replacing same-named entries.
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides,
                                            const std::vector<std::string>& drop_prefixes) {
  std::vector<std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool dropped = false;
    for (const std::string& prefix : drop_prefixes) dropped |= entry.starts_with(prefix);
    if (dropped) continue;
    bool overridden = false;
    for (const std::string& add : overrides) overridden |= env_name(add) == env_name(entry);
    if (!overridden) merged.push_back(entry);
  }
  merged.insert(merged.end(), overrides.begin(), overrides.end());
  return merged;
}

// The null-terminated array execve takes; points into `strings`.
std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// In the child: opens `path` as descriptor `target`. Async-signal-safe. The file is
// opened close-on-exec so that only its copy as `target` reaches the program.
bool redirect(int target, const char* path, int flags) {
  const int fd = open(path, flags | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  if (fd == target) return fcntl(fd, F_SETFD, 0) == 0;
  return dup2(fd, target) == target;
}

// In the child: tells the parent that argv[0] never ran. Async-signal-safe.
[[noreturn]] void fail_in_child(int report_fd) {
  const char failed = 1;
  [[maybe_unused]] const ssize_t n = write(report_fd, &failed, 1);
  _exit(127);
}

ExitInfo exit_info(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
    info.code = 128 + info.signal;
  } else if (WIFEXITED(status)) {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

}  // namespace

Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  Child child;
  child.out_path = options.out_path;
  child.err_path = options.err_path;
  if (argv.empty()) return child;
  // Everything the child needs is built before fork: after it, only async-signal-safe
  // calls are allowed, since other threads may hold the allocator's locks.
  std::vector<std::string> env_storage = merged_environment(options.env, options.drop_env_prefixes);
  std::vector<char*> envp = c_array(env_storage);
  std::vector<std::string> arg_storage = argv;
  std::vector<char*> args = c_array(arg_storage);
  const char* out = options.out_path.empty() ? "/dev/null" : options.out_path.c_str();
  const char* err = options.err_path.empty() ? nullptr : options.err_path.c_str();
  const int out_flags = O_WRONLY | O_CREAT | O_TRUNC;
  const int err_flags = O_WRONLY | O_CREAT | (options.append_err ? O_APPEND : O_TRUNC);
  const bool die_with_parent = options.die_with_parent;
  const pid_t parent = getpid();
  // A failure before exec comes back through this pipe, so that pid -1 means "did not
  // start" whatever went wrong; a successful exec closes it, which ends the parent's read.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return child;

  const pid_t pid = fork();
  if (pid == 0) {
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    }
    if (!redirect(0, "/dev/null", O_RDONLY) || !redirect(1, out, out_flags) ||
        (err != nullptr && !redirect(2, err, err_flags))) {
      fail_in_child(report[1]);
    }
    // The tests block no signals, but a parent of ours may have: start the child clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args[0], args.data(), envp.data());
    fail_in_child(report[1]);
  }
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return child;
  }
  char failed = 0;
  ssize_t n;
  do {
    n = read(report[0], &failed, 1);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    reap(pid);
    return child;
  }
  child.pid = pid;
  return child;
}

std::string ExitInfo::to_string() const {
  if (signaled) {
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "exit status " + std::to_string(code);
}

std::optional<ExitInfo> try_reap(pid_t pid) {
  if (pid <= 0) return ExitInfo{};  // waitpid would take any child of ours
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) return ExitInfo{};
  return exit_info(status);
}

std::optional<ExitInfo> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (std::optional<ExitInfo> info = try_reap(pid)) return info;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

ExitInfo reap(pid_t pid) {
  if (pid <= 0) return ExitInfo{};
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ExitInfo{};
  return exit_info(status);
}

RunResult run_command(const std::vector<std::string>& argv, const std::string& scratch,
                      const RunOptions& options) {
  RunResult result;
  SpawnOptions spawn_options;
  spawn_options.env = options.env;
  spawn_options.out_path = scratch + ".out";
  if (options.capture_err) spawn_options.err_path = scratch + ".err";
  spawn_options.die_with_parent = options.die_with_parent;
  const Child child = spawn(argv, spawn_options);
  if (child.pid < 0) {
    result.err = "cannot start " + (argv.empty() ? std::string("an empty command") : argv[0]);
    return result;
  }
  std::optional<ExitInfo> info;
  if (options.timeout) {
    info = wait_for_exit(child.pid, *options.timeout);
    if (!info) {
      kill(child.pid, SIGKILL);
      info = wait_for_exit(child.pid, std::chrono::seconds(5));
    }
  } else {
    info = reap(child.pid);
  }
  result.exit_code = info ? info->code : -1;
  result.out = read_file(child.out_path);
  if (options.capture_err) result.err = read_file(child.err_path);
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tail_of(const std::string& path, int lines) {
  return last_lines(read_file(path), lines);
}

std::string last_lines(const std::string& text, int lines) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int n = 0; n < lines && pos > 0; ++n) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace idforge::test_support
