// Shared by the libFuzzer targets in fuzz/: the property check that stops a run, and
// helpers to cut an input into the lines a target reads. A failed check prints what
// was violated and aborts, which libFuzzer reports as a crash and keeps the input.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace idforge::fuzz {

[[noreturn]] inline void check_failed(const char* condition, const char* file, int line,
                                      std::string_view detail) {
  std::fprintf(stderr, "\n*** fuzz property violated at %s:%d: %s\n", file, line, condition);
  if (!detail.empty()) {
    std::fprintf(stderr, "*** %.*s\n", static_cast<int>(std::min<size_t>(detail.size(), 4096)),
                 detail.data());
  }
  std::fflush(stderr);
  abort();
}

// An invariant the code under test promises; `detail` (a std::string_view-convertible
// expression) is only evaluated on failure.
#define IDFORGE_FUZZ_CHECK(condition, detail)                                  \
  do {                                                                         \
    if (!(condition)) {                                                        \
      ::idforge::fuzz::check_failed(#condition, __FILE__, __LINE__, (detail)); \
    }                                                                          \
  } while (false)

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Takes the text up to the next '\n' (or all of it) off the front of `rest`.
inline std::string_view take_line(std::string_view& rest) {
  const size_t end = rest.find('\n');
  std::string_view line = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  return line;
}

// A signed decimal number, or nullopt for anything else (the target then picks a default).
inline std::optional<int64_t> to_int64(std::string_view text) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

inline std::optional<uint64_t> to_uint64(std::string_view text) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// FNV-1a: turns bytes that are not a number into a 64-bit value, so every input line
// still exercises the code that takes a number.
inline uint64_t hash64(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// A delivery size for replaying an input in pieces (1 byte at a time up to 512), picked
// from `hash` so a finding replays with the same pieces.
inline size_t piece_size(uint64_t hash) {
  static constexpr size_t kPieces[] = {1, 2, 3, 5, 8, 13, 64, 512};
  return kPieces[hash % (sizeof(kPieces) / sizeof(kPieces[0]))];
}

// Printable form of bytes for a failure message.
inline std::string escaped(std::string_view text, size_t limit = 512) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > limit) out += "...";
  return out;
}

// A directory of its own under $TMPDIR (the fuzz script points that at its scratch
// space), removed when the process ends normally.
class TempDir {
 public:
  explicit TempDir(const char* prefix) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace idforge::fuzz
