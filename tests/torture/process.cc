#include "process.h"

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

namespace idforge::torture {
namespace {

// NAME of "NAME=value".
std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::string ExitInfo::to_string() const {
  if (signaled)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit status " + std::to_string(code);
}

pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  // Everything the child needs is built before fork: after it, only async-signal-safe
  // calls are allowed, since other threads may hold the allocator's locks.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool overridden = false;
    for (const std::string& add : options.env) overridden |= env_name(add) == env_name(entry);
    if (!overridden) env_storage.push_back(entry);
  }
  env_storage.insert(env_storage.end(), options.env.begin(), options.env.end());
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_storage = argv;
  std::vector<char*> args;
  for (std::string& a : arg_storage) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out = options.out_path.empty() ? "/dev/null" : options.out_path;
  const std::string err = options.err_path.empty() ? "/dev/null" : options.err_path;
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid != 0) return pid;  // parent, or -1
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  const int in_fd = open("/dev/null", O_RDONLY);
  const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  // The run blocks no signals, but a parent of ours may have: start the child clean.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

std::optional<ExitInfo> try_reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  ExitInfo info;
  if (r < 0) return info;  // not our child any more: treat as gone
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
    info.code = 128 + info.signal;
  } else {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

std::optional<ExitInfo> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (std::optional<ExitInfo> info = try_reap(pid)) return info;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

RunResult run_command(const std::vector<std::string>& argv, const std::string& scratch,
                      std::chrono::milliseconds timeout) {
  RunResult result;
  SpawnOptions options;
  options.out_path = scratch + ".out";
  options.err_path = scratch + ".err";
  std::remove(options.err_path.c_str());
  const pid_t pid = spawn_process(argv, options);
  if (pid < 0) {
    result.err = "cannot start " + argv[0];
    return result;
  }
  std::optional<ExitInfo> info = wait_for_exit(pid, timeout);
  if (!info) {
    kill(pid, SIGKILL);
    info = wait_for_exit(pid, std::chrono::seconds(5));
  }
  result.exit_code = info ? info->code : -1;
  result.out = read_file(options.out_path);
  result.err = read_file(options.err_path);
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tail_of(const std::string& path, int lines) {
  const std::string text = read_file(path);
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

}  // namespace idforge::torture
