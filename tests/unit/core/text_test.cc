// The ASCII text helpers: locale-independent, and exactly ASCII (bytes >= 0x80 are
// never letters, digits or spaces).
#include "core/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace idforge::text {
namespace {

TEST(TextTest, CharacterClassesAreAsciiOnly) {
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    const bool digit = i >= '0' && i <= '9';
    const bool lower = i >= 'a' && i <= 'z';
    const bool upper = i >= 'A' && i <= 'Z';
    EXPECT_EQ(is_digit(c), digit) << i;
    EXPECT_EQ(is_lower(c), lower) << i;
    EXPECT_EQ(is_upper(c), upper) << i;
    EXPECT_EQ(is_alpha(c), lower || upper) << i;
    EXPECT_EQ(is_alnum(c), digit || lower || upper) << i;
    EXPECT_EQ(is_space(c),
              i == ' ' || i == '\t' || i == '\n' || i == '\v' || i == '\f' || i == '\r')
        << i;
    EXPECT_EQ(ascii_lower(c), upper ? static_cast<char>(i + 32) : c) << i;
  }
}

TEST(TextTest, AsciiLowerFoldsOnlyAToZ) {
  EXPECT_EQ(ascii_lower(""), "");
  EXPECT_EQ(ascii_lower("Content-Length: 42"), "content-length: 42");
  EXPECT_EQ(ascii_lower("already lower"), "already lower");
  EXPECT_EQ(ascii_lower("[@Z`]"), "[@z`]");                          // the neighbours of A-Z stay
  EXPECT_EQ(ascii_lower("\xc3\x89T\xc3\x89"), "\xc3\x89t\xc3\x89");  // UTF-8 É untouched
  EXPECT_EQ(ascii_lower(std::string_view("A\0B", 3)), std::string("a\0b", 3));
}

TEST(TextTest, EqualsIgnoreCase) {
  EXPECT_TRUE(equals_ignore_case("", ""));
  EXPECT_TRUE(equals_ignore_case("keep-alive", "Keep-Alive"));
  EXPECT_TRUE(equals_ignore_case("KEEP-ALIVE", "keep-alive"));
  EXPECT_FALSE(equals_ignore_case("keep-alive", "keep-aliv"));
  EXPECT_FALSE(equals_ignore_case("close", "closed"));
  EXPECT_FALSE(equals_ignore_case("[", "{"));  // 0x5b and 0x7b differ by 0x20 too
  EXPECT_FALSE(equals_ignore_case("\xc3\x89", "\xc3\xa9"));
}

TEST(TextTest, StartsWithIgnoreCase) {
  EXPECT_TRUE(starts_with_ignore_case("HTTP://example.com/", "http://"));
  EXPECT_TRUE(starts_with_ignore_case("anything", ""));
  EXPECT_TRUE(starts_with_ignore_case("Basic", "basic"));
  EXPECT_FALSE(starts_with_ignore_case("http:/", "http://"));
  EXPECT_FALSE(starts_with_ignore_case("https://x", "http://"));
  EXPECT_FALSE(starts_with_ignore_case("", "a"));
}

TEST(TextTest, TrimRemovesAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\r\n\v\f"), "");
  EXPECT_EQ(trim("  a b  "), "a b");
  EXPECT_EQ(trim("\tvalue\r\n"), "value");
  EXPECT_EQ(trim("inner  space"), "inner  space");
  EXPECT_EQ(trim("\xa0x\xa0"), "\xa0x\xa0");  // Latin-1 NBSP is not ASCII whitespace
  // A view into the argument, not a copy.
  const std::string_view source = "  middle ";
  EXPECT_EQ(trim(source).data(), source.data() + 2);
}

TEST(TextTest, TrimOfGivenCharacters) {
  EXPECT_EQ(trim(" \tvalue\t ", " \t"), "value");
  EXPECT_EQ(trim("\r value \r", " \t"), "\r value \r");  // only the characters given
  EXPECT_EQ(trim(" \t ", " \t"), "");
  EXPECT_EQ(trim("", " \t"), "");
  EXPECT_EQ(trim("--a-b--", "-"), "a-b");
  EXPECT_EQ(trim("abc", ""), "abc");
}

TEST(TextTest, ParseIntTakesTheWholeText) {
  int64_t v = 0;
  EXPECT_TRUE(parse_int("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parse_int("-42", &v));
  EXPECT_EQ(v, -42);
  EXPECT_TRUE(parse_int("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_FALSE(parse_int("9223372036854775808", &v));  // does not fit
  EXPECT_FALSE(parse_int("", &v));
  EXPECT_FALSE(parse_int("+1", &v));
  EXPECT_FALSE(parse_int(" 1", &v));
  EXPECT_FALSE(parse_int("1 ", &v));
  EXPECT_FALSE(parse_int("12ab", &v));
  EXPECT_FALSE(parse_int("0x10", &v));

  uint32_t u = 7;
  EXPECT_FALSE(parse_int("-1", &u));
  EXPECT_EQ(u, 7u);  // untouched when nothing was read
  EXPECT_TRUE(parse_int("4294967295", &u));
  EXPECT_EQ(u, UINT32_MAX);
  EXPECT_FALSE(parse_int("4294967296", &u));

  int port = 0;
  EXPECT_TRUE(parse_int(std::string_view("6379/0").substr(0, 4), &port));
  EXPECT_EQ(port, 6379);
}

}  // namespace
}  // namespace idforge::text
