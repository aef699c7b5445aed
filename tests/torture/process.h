// Child processes of the torture run: the idforge servers, scripts/test-services and
// `idforge tag create`. No shell: arguments go to execve as they are. Children are
// started from the main thread only, because each gets PR_SET_PDEATHSIG, which fires
// when the *thread* that forked it ends: a torture run that dies leaves no server behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace idforge::torture {

struct SpawnOptions {
  std::vector<std::string> env;  // "NAME=value" added to (and overriding) our environment
  std::string out_path;          // stdout, truncated
  std::string err_path;          // stderr, appended (one file across restarts)
};

// Starts argv[0] (a path) with stdin from /dev/null; -1 when it could not start.
pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options);

// How a child ended: exit status, or 128 + the signal.
struct ExitInfo {
  int code = -1;
  bool signaled = false;
  int signal = 0;
  std::string to_string() const;
};

// Reaps `pid` if it has ended; nullopt while it runs.
std::optional<ExitInfo> try_reap(pid_t pid);
// Waits up to `timeout` for `pid` to end; nullopt if it still runs.
std::optional<ExitInfo> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout);

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv to completion (at most `timeout`, then SIGKILL); output passes through
// `scratch`.out and `scratch`.err.
RunResult run_command(const std::vector<std::string>& argv, const std::string& scratch,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120));

std::string read_file(const std::string& path);
// The last `lines` lines of a file, for failure reports.
std::string tail_of(const std::string& path, int lines);
// Writes `text` to `path` by renaming a temporary file over it, so a reader never sees
// it half written.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace idforge::torture
