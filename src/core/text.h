// Small ASCII text helpers shared by the parsers of URLs, headers, commands and files.
//
// Everything here is ASCII only and locale-independent (unlike <cctype>): bytes >= 0x80
// are never letters, digits or spaces, and case folding touches A-Z alone.
#pragma once

#include <cerrno>
#include <charconv>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace idforge::text {

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
constexpr bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
// ' ', \t, \n, \v, \f, \r: what isspace() says in the "C" locale.
constexpr bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// `c` with A-Z folded to a-z.
constexpr char ascii_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
// `text` with A-Z folded to a-z.
std::string ascii_lower(std::string_view text);

// Equal when A-Z and a-z are taken as the same letter. Inline: the HTTP parser calls it
// for every header line.
constexpr bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}
// Whether `text` starts with `prefix`, A-Z and a-z taken as the same letter.
constexpr bool starts_with_ignore_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && equals_ignore_case(text.substr(0, prefix.size()), prefix);
}

// `text` without the ASCII whitespace (is_space) at either end. Inline, so the test
// harnesses that do not link this library (the torture run) use it too.
constexpr std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}
// `text` without any of the characters `chars` at either end (" \t": HTTP's OWS).
constexpr std::string_view trim(std::string_view text, std::string_view chars) {
  while (!text.empty() && chars.find(text.front()) != std::string_view::npos) {
    text.remove_prefix(1);
  }
  while (!text.empty() && chars.find(text.back()) != std::string_view::npos) {
    text.remove_suffix(1);
  }
  return text;
}

// All of `text` as a decimal integer of type Int (std::from_chars: an optional '-' for a
// signed type, no '+', no spaces). false when `text` is empty, holds anything else or
// does not fit; *out may then have been written.
template <typename Int>
bool parse_int(std::string_view text, Int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// The message strerror() gives for `err` (by default errno), for an error message.
std::string errno_text(int err = errno);

// "a, b or c": the choices an error or a help text lists.
std::string join_alternatives(std::span<const std::string> items);

}  // namespace idforge::text
