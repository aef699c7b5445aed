#include "run_idforge.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace idforge::e2e {
namespace {

[[noreturn]] void die(const char* what) {
  throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

// Reads both pipes until both close; reading one at a time could deadlock once the
// child fills the other pipe's buffer.
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  std::array<pollfd, 2> fds{{{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&out, &err};
  int open = 2;
  char buf[1 << 16];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
}

}  // namespace

std::vector<std::string> RunResult::lines() const {
  std::vector<std::string> result;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    result.push_back(out.substr(start, end - start));
    start = end + 1;
  }
  return result;
}

bool RunResult::one_error_line() const {
  return err.rfind("idforge: ", 0) == 0 && err.size() > 9 && err.back() == '\n' &&
         err.find('\n') == err.size() - 1;
}

std::string RunResult::summary() const {
  constexpr size_t kMax = 2000;  // enough to see what went wrong, not a flood
  auto cut = [](const std::string& text) {
    return text.size() <= kMax ? text : text.substr(0, kMax) + "...";
  };
  return "exit " + std::to_string(exit_code) + "\n--- stdout:\n" + cut(out) + "\n--- stderr:\n" +
         cut(err);
}

RunResult run_idforge(const std::vector<std::string>& args) {
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.emplace_back(IDFORGE_BIN);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) die("pipe2");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) die("pipe2");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    errno = rc;
    die("posix_spawn " IDFORGE_BIN);
  }

  RunResult result;
  drain(out_pipe[0], err_pipe[0], result.out, result.err);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) die("waitpid");
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

::testing::AssertionResult is_usage_error(const RunResult& result, const std::string& needle) {
  if (result.exit_code != 2)
    return ::testing::AssertionFailure() << "want exit 2; " << result.summary();
  if (!result.out.empty()) {
    return ::testing::AssertionFailure() << "want empty stdout; " << result.summary();
  }
  if (!result.one_error_line()) {
    return ::testing::AssertionFailure()
           << "want one 'idforge: ' line on stderr; " << result.summary();
  }
  if (result.err.find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "want stderr to mention '" << needle << "'; " << result.summary();
  }
  return ::testing::AssertionSuccess();
}

std::string text_value(const std::string& out, const std::string& key) {
  const std::string prefix = key + ":";
  RunResult view;
  view.out = out;
  for (const std::string& line : view.lines()) {
    if (line.rfind(prefix, 0) != 0) continue;
    size_t begin = line.find_first_not_of(' ', prefix.size());
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

std::vector<uint64_t> parse_ids(const std::vector<std::string>& lines) {
  std::vector<uint64_t> ids;
  ids.reserve(lines.size());
  for (const std::string& line : lines) {
    bool digits = !line.empty() && line.size() <= 20 &&
                  line.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      ADD_FAILURE() << "not a decimal ID: '" << line << "'";
      continue;
    }
    ids.push_back(std::stoull(line));
  }
  return ids;
}

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace idforge::e2e
