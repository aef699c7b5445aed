#include "parse_u64.h"

#include <limits>
#include <string>
#include <utility>

#include "quote.h"

namespace idforge {

Result<uint64_t> parse_u64(std::string_view text, std::string_view what) {
  auto error = [&](std::string_view why) {
    std::string m(what);
    m += ' ';
    m += quote_text(text, '"');
    m += ' ';
    m += why;
    return Status::InvalidArgument(std::move(m));
  };
  if (text.empty()) return error("is empty; expected a decimal number");
  uint64_t value = 0;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (char c : text) {
    if (c < '0' || c > '9') return error("is not a decimal number (digits 0-9 only)");
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) return error("is larger than 18446744073709551615");
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace idforge
