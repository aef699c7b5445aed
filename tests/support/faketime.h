// libfaketime for tests that move a server's wall clock (the torture run, the log
// tests): the preload library, the environment that points a child process at an
// offset file, and the offset's text. One place, so every test fakes the clock the
// same way: CLOCK_REALTIME moves, the monotonic clock stays real, as under an NTP step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace idforge::test_support {

// The multi-threaded preload library; empty when the faketime package is missing.
std::string faketime_library();

// The variables that make a child read its clock offset from `offset_file` (re-read
// every second: the default is every 10 s, and every call would cost a file read per
// clock read), with the monotonic clock left real.
std::vector<std::string> faketime_env(const std::string& offset_file);

// An offset as libfaketime reads it: signed seconds with a fraction, "+3.000\n".
std::string faketime_offset_text(int64_t offset_ms);

}  // namespace idforge::test_support
