// Child processes for the integration tests: the test-services script and the idforge
// binary. No shell: arguments go to execv as they are.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace idforge::integration {

// A started child whose stdout (and, unless inherited, stderr) go to files.
struct Child {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;  // empty: stderr is the test's own
};

// Starts argv[0] (a path) with stdin from /dev/null. pid -1 when it could not start.
Child spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path = "");

// Waits for the child; its exit status, or 128 + the signal that ended it.
int wait_child(const Child& child);

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout, whole
};

// Runs argv to completion; stderr goes to the test's own stderr, where a failing
// script's reason is visible. `scratch` is a file the output passes through.
RunResult run(const std::vector<std::string>& argv, const std::string& scratch);

std::string read_file(const std::string& path);

}  // namespace idforge::integration
