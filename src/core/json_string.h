// JSON string literals for code that writes small JSON by hand (the HTTP replies, the
// log's JSON lines, the C++ client's parse output), and the UTF-8 check they rest on.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace idforge::text {

// The length of the valid UTF-8 sequence at the front of `text` (1 for ASCII), or 0: an
// empty text, a stray byte, an overlong form, a UTF-16 surrogate, a code point past
// U+10FFFF.
size_t utf8_sequence(std::string_view text);

// Appends `text` as a JSON string: quoted, with ", \, \n, \r, \t and the other control
// characters escaped and each byte that is not UTF-8 replaced by U+FFFD, so the output
// is always valid JSON whatever the input.
void append_json_string(std::string& out, std::string_view text);

}  // namespace idforge::text
