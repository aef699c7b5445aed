// Runs the `idforge` binary as a user would, for the end-to-end tests: no shell,
// stdin from /dev/null, stdout and stderr captured separately.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace idforge::e2e {

struct RunResult {
  int exit_code = -1;  // the exit status, or 128 + the signal that ended the process
  std::string out;
  std::string err;

  // stdout split into lines, without the final newline's empty line.
  std::vector<std::string> lines() const;
  // True when stderr is exactly one line starting "idforge: ".
  bool one_error_line() const;
  // Exit status, stdout and stderr, for assertion messages.
  std::string summary() const;
};

RunResult run_idforge(const std::vector<std::string>& args);

// The binary refused the input as a user error: exit 2, nothing on stdout, and one
// "idforge: " line on stderr that contains `needle`.
::testing::AssertionResult is_usage_error(const RunResult& result, const std::string& needle);

// In "key: value" text output, the value on the line starting with "key:", trimmed;
// empty when there is no such line.
std::string text_value(const std::string& out, const std::string& key);

// Each line as a decimal uint64; a line that is not one fails the calling test.
std::vector<uint64_t> parse_ids(const std::vector<std::string>& lines);

// Milliseconds since the Unix epoch, from the system clock.
int64_t now_unix_ms();

}  // namespace idforge::e2e
