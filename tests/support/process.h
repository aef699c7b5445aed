// Child processes for the integration tests and the torture run: scripts/test-services,
// the idforge binary and its subcommands. No shell: argv[0] is a path and the arguments
// go to execve as they are.
//
// Thread-safety: every function may be called from any thread; a child is reaped by
// whichever wait sees it end first, so wait for each child from one place only. A child
// started with die_with_parent must be started from a thread that outlives it (see
// SpawnOptions).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace idforge::test_support {

// How spawn() starts a child. Every member has an initializer so that a designated
// initializer ({.out_path = ...}) may leave any out: GCC warns about members without one.
struct SpawnOptions {
  // "NAME=value" entries added to the test's environment, replacing same-named ones.
  std::vector<std::string> env{};
  // Variables of the test's environment whose names start with one of these are not
  // passed on (`env` is added after): "IDFORGE_" keeps a developer's settings from a
  // server the test configures itself. Empty: all are.
  std::vector<std::string> drop_env_prefixes{};
  // stdout, truncated; empty: /dev/null.
  std::string out_path{};
  // stderr, truncated; empty: the test's own stderr, where a failing child's reason is
  // visible in the test log.
  std::string err_path{};
  // Append to err_path instead: one file across a server's restarts.
  bool append_err = false;
  // SIGKILL the child when its parent dies (PR_SET_PDEATHSIG), so a crashed run leaves
  // no server behind. The signal fires when the *thread* that forked the child ends, not
  // the process: use it only from a thread that outlives the child (the torture run's
  // main thread). Integration tests start children from test threads and leave it off.
  bool die_with_parent = false;
};

// A started child and where its output goes (the paths as given in SpawnOptions).
struct Child {
  pid_t pid = -1;  // -1: it could not be started
  std::string out_path;
  std::string err_path;
};

// Starts argv[0] with stdin from /dev/null. pid -1 when fork failed, an output file
// could not be opened or argv[0] could not be executed; nothing is left to reap then.
Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// How a child ended: its exit status, or 128 + the signal that ended it.
struct ExitInfo {
  int code = -1;  // -1: unknown (no such child of ours)
  bool signaled = false;
  int signal = 0;
  std::string to_string() const;  // "exit status 1", "killed by signal 9 (Killed)"
};

// Reaps `pid` if it has ended; nullopt while it runs. A pid that is not (or no longer)
// our child counts as ended, with code -1.
std::optional<ExitInfo> try_reap(pid_t pid);
// Waits up to `timeout` for `pid` to end and reaps it; nullopt if it still runs.
std::optional<ExitInfo> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout);
// Waits as long as it takes for `pid` to end and reaps it.
ExitInfo reap(pid_t pid);

// How run_command() runs a child; initializers as in SpawnOptions.
struct RunOptions {
  std::vector<std::string> env{};  // as SpawnOptions::env
  // Return stderr in RunResult::err; false leaves it on the test's own stderr.
  bool capture_err = true;
  // SIGKILL after this long; nullopt waits as long as it takes.
  std::optional<std::chrono::milliseconds> timeout = std::chrono::seconds(120);
  bool die_with_parent = false;  // as SpawnOptions::die_with_parent
};

struct RunResult {
  int exit_code = -1;  // ExitInfo::code; -1 when it could not start or never ended
  std::string out;     // stdout, whole
  std::string err;     // stderr when captured; "cannot start ..." when it could not start
};

// Runs argv to completion. Its output passes through files, truncated first: stdout
// through `scratch`.out and, when captured, stderr through `scratch`.err.
RunResult run_command(const std::vector<std::string>& argv, const std::string& scratch,
                      const RunOptions& options = {});

// The whole file; empty when it cannot be read.
std::string read_file(const std::string& path);
// The last `lines` lines of a file, for failure reports.
std::string tail_of(const std::string& path, int lines);
// The last `lines` lines of `text`.
std::string last_lines(const std::string& text, int lines);
// Writes `text` to `path` by renaming a temporary file over it, so a reader never sees
// it half written.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace idforge::test_support
