#include "quote.h"

namespace idforge {

std::string quote_text(std::string_view text, char mark, size_t max_shown) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out(1, mark);
  for (size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != static_cast<unsigned char>(mark) && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > max_shown) out += "...";
  out += mark;
  return out;
}

}  // namespace idforge
