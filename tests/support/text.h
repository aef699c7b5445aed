// Small helpers the tests share for reading what a command or server printed, and for
// timing it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/text.h"

namespace idforge::test {

// A command's output without the whitespace around it, as a string to keep.
inline std::string trim(std::string_view text) { return std::string(text::trim(text)); }

// Whether `part` occurs in `text`.
inline bool has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// `url` with one more query parameter ("key=value").
inline std::string with_query(const std::string& url, const std::string& query) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

// Milliseconds on the steady clock since `start`.
inline int64_t ms_since(std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
}

}  // namespace idforge::test
