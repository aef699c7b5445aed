#include "json_string.h"

#include <cstdint>

namespace idforge::text {

size_t utf8_sequence(std::string_view text) {
  if (text.empty()) return 0;
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t size = 0;
  uint32_t min = 0;
  uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    size = 2;
    code = lead & 0x1fu;
    min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    size = 3;
    code = lead & 0x0fu;
    min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    size = 4;
    code = lead & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < size) return 0;
  for (size_t i = 1; i < size; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3fu);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  if (code < min || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  return size;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t size = utf8_sequence(text.substr(i));
      if (size == 0) {
        out.append("\xef\xbf\xbd");  // U+FFFD for a byte that is not UTF-8
        ++i;
      } else {
        out.append(text.substr(i, size));
        i += size;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace idforge::text
