#include "support/faketime.h"

#include <glob.h>

#include <cstdio>

namespace idforge::test_support {

std::string faketime_library() {
  glob_t found{};
  std::string path;
  if (glob("/usr/lib/*/faketime/libfaketimeMT.so.1", 0, nullptr, &found) == 0 &&
      found.gl_pathc > 0) {
    path = found.gl_pathv[0];
  }
  globfree(&found);
  return path;
}

std::vector<std::string> faketime_env(const std::string& offset_file) {
  return {"LD_PRELOAD=" + faketime_library(), "FAKETIME_TIMESTAMP_FILE=" + offset_file,
          "FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

std::string faketime_offset_text(int64_t offset_ms) {
  const int64_t magnitude = offset_ms < 0 ? -offset_ms : offset_ms;
  char text[40];
  std::snprintf(text, sizeof text, "%c%lld.%03lld\n", offset_ms < 0 ? '-' : '+',
                static_cast<long long>(magnitude / 1000), static_cast<long long>(magnitude % 1000));
  return text;
}

}  // namespace idforge::test_support
