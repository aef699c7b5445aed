#include "text.h"

#include <cstring>

namespace idforge::text {

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string errno_text(int err) { return std::strerror(err); }

std::string join_alternatives(std::span<const std::string> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace idforge::text
