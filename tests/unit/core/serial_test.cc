// Serial templates: every placeholder, escapes, padding, zones, every error with its
// position, and properties over random valid and invalid templates.
#include "idforge/serial.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/time_format.h"
#include "idforge/time_zone.h"
#include "store/zoneinfo.h"

namespace idforge {
namespace {

int64_t ms(std::string_view iso) {
  Result<int64_t> t = parse_time(iso);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.value_or(0);
}

SerialTemplate must_parse(std::string_view text) {
  Result<SerialTemplate> t = SerialTemplate::parse(text);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return *SerialTemplate::parse("{seq}");
  return *std::move(t);
}

std::string format(std::string_view text, uint64_t seq, int64_t unix_ms,
                   const TimeZone& zone = TimeZone()) {
  return must_parse(text).format(seq, unix_ms, zone);
}

TimeZone load(std::string_view name) {
  Result<TimeZone> zone = store::load_time_zone(name);
  EXPECT_TRUE(zone.ok()) << zone.status().to_string() << " (is tzdata installed?)";
  return zone.value_or(TimeZone());
}

TEST(SerialTemplateTest, ADatedPrefixWithAZeroPaddedSequence) {
  SerialTemplate t = must_parse("PAY{yyyyMMdd}{seq:08}");
  EXPECT_EQ(t.format(42, ms("2026-11-22T10:00:00Z")), "PAY2026112200000042");
  EXPECT_EQ(t.format(42, ms("2026-11-22T10:00:00Z"), TimeZone::utc()), "PAY2026112200000042");
  EXPECT_EQ(t.text(), "PAY{yyyyMMdd}{seq:08}");
  EXPECT_EQ(t.max_length(), 3u + 8u + 20u);
  EXPECT_TRUE(t.uses_time());
  EXPECT_EQ(t.seq_width(), 8);
}

TEST(SerialTemplateTest, EveryDatePlaceholderAlone) {
  const int64_t t = ms("2026-11-22T10:05:09.007Z");
  EXPECT_EQ(format("{yyyy}|{yy}|{MM}|{dd}|{HH}|{mm}|{ss}|{SSS}|{seq}", 42, t),
            "2026|26|11|22|10|05|09|007|42");
}

TEST(SerialTemplateTest, PlaceholdersCombineInsideOneBrace) {
  const int64_t t = ms("2026-11-22T10:05:09.007Z");
  EXPECT_EQ(format("{yyyyMMdd}{seq}", 1, t), "202611221");
  EXPECT_EQ(format("{HHmmss}{seq}", 1, t), "1005091");
  EXPECT_EQ(format("{yyMMddHHmmssSSS}-{seq}", 1, t), "261122100509007-1");
  EXPECT_EQ(format("{ddMMyyyy}{seq}", 1, t), "221120261");  // any order
}

TEST(SerialTemplateTest, CaseMattersAsInJava) {
  // MM is the month and mm the minute; HH the hour; SSS the millisecond, ss the second.
  const int64_t t = ms("2026-03-04T05:06:07.089Z");
  EXPECT_EQ(format("{MM}.{mm}.{HH}.{ss}.{SSS}{seq}", 0, t), "03.06.05.07.0890");
}

TEST(SerialTemplateTest, SmallValuesArePaddedAndYearsBeforeTenThousandAreFourDigits) {
  EXPECT_EQ(
      format("{yyyy}-{yy}-{MM}-{dd}T{HH}:{mm}:{ss}.{SSS}/{seq}", 7, ms("0005-01-02T03:04:05.006Z")),
      "0005-05-01-02T03:04:05.006/7");
  EXPECT_EQ(format("{yy}{seq}", 7, ms("2000-06-01")), "007");
}

TEST(SerialTemplateTest, SeqPadding) {
  EXPECT_EQ(format("{seq}", 0, 0), "0");
  EXPECT_EQ(format("{seq}", 42, 0), "42");
  EXPECT_EQ(format("{seq:1}", 0, 0), "0");
  EXPECT_EQ(format("{seq:3}", 7, 0), "007");
  EXPECT_EQ(format("{seq:03}", 7, 0), "007");
  EXPECT_EQ(format("{seq:8}", 42, 0), "00000042");
  EXPECT_EQ(format("{seq:08}", 42, 0), "00000042");
  EXPECT_EQ(format("{seq:20}", 1, 0), "00000000000000000001");
  EXPECT_EQ(format("{seq:20}", std::numeric_limits<uint64_t>::max(), 0), "18446744073709551615");
  EXPECT_EQ(format("{seq}", std::numeric_limits<uint64_t>::max(), 0), "18446744073709551615");
  EXPECT_EQ(must_parse("{seq}").seq_width(), 0);
  EXPECT_EQ(must_parse("{seq:020}").seq_width(), 20);
}

TEST(SerialTemplateTest, NumbersLongerThanThePaddingAreNotTruncated) {
  EXPECT_EQ(format("{seq:03}", 999, 0), "999");
  EXPECT_EQ(format("{seq:03}", 1000, 0), "1000");
  EXPECT_EQ(format("{seq:03}", 12345, 0), "12345");
  EXPECT_EQ(format("PAY{yyyyMMdd}{seq:08}", 123456789, ms("2026-11-22T10:00:00Z")),
            "PAY20261122123456789");
}

TEST(SerialTemplateTest, LiteralTextAndEscapes) {
  EXPECT_EQ(format("ORD-{seq}_x!~ #$%&'()*+,./:;<=>?@[\\]^`|\"", 5, 0),
            "ORD-5_x!~ #$%&'()*+,./:;<=>?@[\\]^`|\"");
  EXPECT_EQ(format("{{{seq}}}", 42, 0), "{42}");
  EXPECT_EQ(format("a}}b{{c{seq}", 42, 0), "a}b{c42");
  EXPECT_EQ(format("{{}}{{{seq:2}}}{{}}", 3, 0), "{}{03}{}");
  EXPECT_EQ(must_parse("{{}}{seq}").max_length(), 2u + 20u);
  EXPECT_FALSE(must_parse("X{seq}Y").uses_time());
}

TEST(SerialTemplateTest, AppendToReusesABuffer) {
  SerialTemplate t = must_parse("T{seq:2}");
  std::string out = "start:";
  t.append_to(out, 1, 0);
  out += ',';
  t.append_to(out, 2, 0);
  EXPECT_EQ(out, "start:T01,T02");
}

TEST(SerialTemplateTest, DateFieldsUseTheZone) {
  const TimeZone shanghai = load("Asia/Shanghai");
  // 15:59:59.999Z is 23:59:59.999 in Shanghai; one ms later the local date rolls over.
  SerialTemplate t = must_parse("{yyyyMMddHHmmssSSS}-{seq}");
  EXPECT_EQ(t.format(1, ms("2026-11-22T15:59:59.999Z"), shanghai), "20261122235959999-1");
  EXPECT_EQ(t.format(1, ms("2026-11-22T16:00:00.000Z"), shanghai), "20261123000000000-1");
  EXPECT_EQ(t.format(1, ms("2026-11-22T16:00:00.000Z")), "20261122160000000-1");  // UTC

  const TimeZone new_york = load("America/New_York");
  // New Year's Eve in New York (EST, -05:00): the year, month and day all roll over.
  EXPECT_EQ(t.format(2, ms("2027-01-01T04:59:59.999Z"), new_york), "20261231235959999-2");
  EXPECT_EQ(t.format(2, ms("2027-01-01T05:00:00.000Z"), new_york), "20270101000000000-2");
  // Summer time (EDT, -04:00).
  EXPECT_EQ(t.format(3, ms("2026-07-15T03:30:00Z"), new_york), "20260714233000000-3");

  Result<TimeZone> india = TimeZone::fixed("+05:30");
  ASSERT_TRUE(india.ok());
  EXPECT_EQ(t.format(4, ms("2026-11-22T18:29:59.999Z"), *india), "20261122235959999-4");
  EXPECT_EQ(t.format(4, ms("2026-11-22T18:30:00Z"), *india), "20261123000000000-4");
}

TEST(SerialTemplateTest, InstantsOutsideYears0To9999AreClamped) {
  SerialTemplate t = must_parse("{yyyyMMddHHmmssSSS}{seq}");
  EXPECT_EQ(t.format(1, std::numeric_limits<int64_t>::max()),
            "99991231235959999"
            "1");
  EXPECT_EQ(t.format(1, std::numeric_limits<int64_t>::min()),
            "00000101000000000"
            "1");
  Result<TimeZone> east = TimeZone::fixed("+23:59");
  Result<TimeZone> west = TimeZone::fixed("-23:59");
  ASSERT_TRUE(east.ok() && west.ok());
  EXPECT_EQ(t.format(1, std::numeric_limits<int64_t>::max(), *east),
            "99991231235959999"
            "1");
  EXPECT_EQ(t.format(1, std::numeric_limits<int64_t>::min(), *west),
            "00000101000000000"
            "1");
  EXPECT_EQ(t.format(1, ms("9999-12-31T23:00:00Z"), *east),
            "99991231235959999"
            "1");
}

// ---- errors ---------------------------------------------------------------------------------

std::string error_of(std::string_view text) {
  Result<SerialTemplate> t = SerialTemplate::parse(text);
  EXPECT_FALSE(t.ok()) << "accepted " << text;
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  return t.status().message();
}

TEST(SerialTemplateTest, AMisspelledDatePatternNamesItsPositionAndTheChoices) {
  EXPECT_EQ(error_of("PAY{yyyMMdd}{seq}"),
            "template 'PAY{yyyMMdd}{seq}': unknown date pattern 'yyy' at position 5 (use yyyy, yy, "
            "MM, dd, HH, mm, ss, SSS)");
}

TEST(SerialTemplateTest, EveryErrorSaysWhereAndWhat) {
  struct Case {
    std::string text;
    std::string why;  // after "template '<text>': "
  };
  const std::vector<Case> cases = {
      {"{yyyyyy}{seq}",
       "unknown date pattern 'yyyyyy' at position 2 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{seq}{MMM}",
       "unknown date pattern 'MMM' at position 7 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{yyyyMMd}{seq}",
       "unknown date pattern 'd' at position 8 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{hh}{seq}",
       "unknown date pattern 'hh' at position 2 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{SS}{seq}",
       "unknown date pattern 'SS' at position 2 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{Q}{seq}",
       "unknown date pattern 'Q' at position 2 (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"},
      {"{yyyy-MM}{seq}",
       "unexpected '-' at position 6 in a date placeholder (put separators outside the braces, "
       "e.g. {yyyy}-{MM}-{dd})"},
      {"{ yyyy}{seq}",
       "unexpected ' ' at position 2 in a date placeholder (put separators outside the braces, "
       "e.g. {yyyy}-{MM}-{dd})"},
      {"A{seq}{seq}",
       "second {seq} at position 7 (a template has exactly one, so each serial is "
       "unique)"},
      {"PAY{yyyy}",
       "has no {seq}: a serial without the number is not unique (add {seq} or "
       "{seq:08})"},
      {"{{seq}}",
       "has no {seq}: a serial without the number is not unique (add {seq} or "
       "{seq:08})"},
      {"", "is empty (expected text and a {seq}, e.g. PAY{seq:08})"},
      {"A}{seq}", "unmatched '}' at position 2 (write }} for a literal '}')"},
      {"{seq}}", "unmatched '}' at position 6 (write }} for a literal '}')"},
      {"{seq}{yyyy", "unclosed '{' at position 6 (write {{ for a literal '{')"},
      {"{seq", "unclosed '{' at position 1 (write {{ for a literal '{')"},
      {"{}{seq}", "empty placeholder '{}' at position 1 (write {{}} for '{}')"},
      {"{yy{seq}",
       "'{' inside the placeholder opened at position 1 at position 4 (write {{ for a "
       "literal '{')"},
      {"{seq:}", "expected a width 1..20 after 'seq:' at position 6"},
      {"{seq:x}", "expected a width 1..20 after 'seq:' at position 6 (found 'x')"},
      {"{seq:-3}", "expected a width 1..20 after 'seq:' at position 6 (found '-')"},
      {"{seq:0}", "seq width 0 at position 6 is outside 1..20"},
      {"{seq:00}", "seq width 00 at position 6 is outside 1..20"},
      {"{seq:21}", "seq width 21 at position 6 is outside 1..20"},
      {"{seq:99999999999999999999}",
       "seq width 99999999999999999999 at position 6 is outside 1..20"},
      {"{seq:8x}", "unexpected 'x' at position 7 after the seq width (expected '}')"},
      {"{seq:8:}", "unexpected ':' at position 7 after the seq width (expected '}')"},
      {"{seqx}", "unexpected 'x' at position 5 after 'seq' (expected '}' or ':N')"},
      {"{sequence}", "unexpected 'u' at position 5 after 'seq' (expected '}' or ':N')"},
      {"{seq 8}", "unexpected ' ' at position 5 after 'seq' (expected '}' or ':N')"},
      {"A\tB{seq}", "character \\x09 at position 2 is not printable ASCII"},
      {"{seq}\n", "character \\x0a at position 6 is not printable ASCII"},
      {"caf\xc3\xa9{seq}", "character \\xc3 at position 4 is not printable ASCII"},
      {std::string("A\0{seq}", 7), "character \\x00 at position 2 is not printable ASCII"},
      {"{yy\x01}{seq}",
       "unexpected \\x01 at position 4 in a date placeholder (put separators outside the braces, "
       "e.g. {yyyy}-{MM}-{dd})"},
  };
  for (const Case& c : cases) {
    std::string quoted;
    for (const char ch : c.text) {
      const auto u = static_cast<unsigned char>(ch);
      if (u >= 0x20 && u < 0x7f && ch != '\'' && ch != '\\') {
        quoted += ch;
      } else {
        constexpr char kHex[] = "0123456789abcdef";
        quoted += {'\\', 'x', kHex[u >> 4], kHex[u & 0xf]};
      }
    }
    EXPECT_EQ(error_of(c.text), "template '" + quoted + "': " + c.why);
  }
}

TEST(SerialTemplateTest, LengthLimitIs128) {
  const std::string ok = std::string(123, 'A') + "{seq}";
  ASSERT_EQ(ok.size(), SerialTemplate::kMaxTemplateLength);
  EXPECT_EQ(must_parse(ok).format(9, 0), std::string(123, 'A') + "9");
  const std::string too_long = std::string(124, 'A') + "{seq}";
  EXPECT_EQ(error_of(too_long), "template '" + too_long +
                                    "': is 129 characters long, over the limit of 128 (the "
                                    "excess starts at position 129)");
  // A huge template is quoted only in part.
  const std::string message = error_of(std::string(100000, 'B'));
  EXPECT_LT(message.size(), 400u);
  EXPECT_NE(message.find("is 100000 characters long"), std::string::npos);
}

// ---- properties ---------------------------------------------------------------------------

// A random valid template and, independently, the text it must produce: date fields are
// cut from format_iso8601_utc of the local time, a different code path from the
// template's own formatting.
struct Generated {
  std::string text;
  // "seq", a date field name, or "=" and literal text (so that a literal "dd" is not
  // taken for the field)
  std::vector<std::string> parts;
  int width = 0;
};

rc::Gen<Generated> valid_template() {
  return rc::gen::exec([] {
    Generated g;
    const auto count = *rc::gen::inRange<size_t>(0, 8);
    const auto seq_at = *rc::gen::inRange<size_t>(0, count + 1);
    for (size_t i = 0; i <= count; ++i) {
      if (i == seq_at) {
        g.width = *rc::gen::inRange(0, 21);
        g.text += g.width == 0 ? "{seq}"
                               : "{seq:" + std::string(*rc::gen::element("", "0")) +
                                     std::to_string(g.width) + "}";
        g.parts.push_back("seq");
        continue;
      }
      if (*rc::gen::arbitrary<bool>()) {
        const auto fields = *rc::gen::container<std::vector<std::string>>(
            *rc::gen::inRange<size_t>(1, 4),
            rc::gen::element<std::string>("yyyy", "yy", "MM", "dd", "HH", "mm", "ss", "SSS"));
        g.text += '{';
        char last = '\0';
        for (const std::string& f : fields) {
          if (f[0] == last) continue;  // "MMMM" is one unknown pattern, not MM twice
          last = f[0];
          g.text += f;
          g.parts.push_back(f);
        }
        g.text += '}';
      } else {
        const auto literal = *rc::gen::container<std::string>(*rc::gen::inRange<size_t>(1, 6),
                                                              rc::gen::inRange<char>(0x20, 0x7f));
        std::string part;
        for (const char c : literal) {
          g.text += c;
          if (c == '{' || c == '}') g.text += c;
          part += c;
        }
        g.parts.push_back("=" + part);
      }
    }
    return g;
  });
}

std::string expected_output(const Generated& g, uint64_t seq, int64_t local_ms) {
  // "YYYY-MM-DDTHH:MM:SS.mmmZ"
  const std::string iso = format_iso8601_utc(local_ms);
  std::string out;
  for (const std::string& p : g.parts) {
    if (p.starts_with('=')) {
      out += p.substr(1);
    } else if (p == "seq") {
      const std::string digits = std::to_string(seq);
      if (digits.size() < static_cast<size_t>(g.width)) out.append(g.width - digits.size(), '0');
      out += digits;
    } else if (p == "yyyy") {
      out += iso.substr(0, 4);
    } else if (p == "yy") {
      out += iso.substr(2, 2);
    } else if (p == "MM") {
      out += iso.substr(5, 2);
    } else if (p == "dd") {
      out += iso.substr(8, 2);
    } else if (p == "HH") {
      out += iso.substr(11, 2);
    } else if (p == "mm") {
      out += iso.substr(14, 2);
    } else if (p == "ss") {
      out += iso.substr(17, 2);
    } else if (p == "SSS") {
      out += iso.substr(20, 3);
    }
  }
  return out;
}

rc::Gen<uint64_t> any_seq() {
  return rc::gen::oneOf(rc::gen::arbitrary<uint64_t>(), rc::gen::inRange<uint64_t>(0, 1000),
                        rc::gen::just(std::numeric_limits<uint64_t>::max()));
}

RC_GTEST_PROP(SerialTemplateProperty, ValidTemplatesFormatAsExpected, ()) {
  const Generated g = *valid_template();
  Result<SerialTemplate> t = SerialTemplate::parse(g.text);
  RC_ASSERT(t.ok());
  const uint64_t seq = *any_seq();
  // 1900..2200 in UTC, so the local date stays in the range format_iso8601_utc prints.
  const int64_t unix_ms = *rc::gen::inRange<int64_t>(-2'208'988'800'000, 7'258'118'400'000);
  const int32_t offset = *rc::gen::inRange(-86340, 86341) / 60 * 60;
  std::string spec = offset < 0 ? "-" : "+";
  const int32_t abs = offset < 0 ? -offset : offset;
  spec += std::to_string(abs / 36000) + std::to_string(abs / 3600 % 10) + ":" +
          std::to_string(abs / 600 % 6) + std::to_string(abs / 60 % 10);
  Result<TimeZone> zone = TimeZone::fixed(spec);
  RC_ASSERT(zone.ok());
  RC_ASSERT(zone->offset_seconds_at(0) == offset);

  const std::string out = t->format(seq, unix_ms, *zone);
  RC_ASSERT(out == expected_output(g, seq, unix_ms + int64_t{offset} * 1000));
  RC_ASSERT(out.find(std::to_string(seq)) != std::string::npos);
  RC_ASSERT(out.size() <= t->max_length());
  RC_ASSERT(t->text() == g.text);
}

RC_GTEST_PROP(SerialTemplateProperty, AnyInstantAndZoneFormatsWithoutCrashing, ()) {
  const Generated g = *valid_template();
  Result<SerialTemplate> t = SerialTemplate::parse(g.text);
  RC_ASSERT(t.ok());
  const uint64_t seq = *any_seq();
  const auto unix_ms = *rc::gen::arbitrary<int64_t>();
  static const std::vector<TimeZone> kZones = {TimeZone(), load("America/New_York"),
                                               load("Asia/Shanghai"), load("Pacific/Kiritimati"),
                                               load("Pacific/Pago_Pago")};
  const TimeZone& zone = kZones[*rc::gen::inRange<size_t>(0, kZones.size())];
  const std::string out = t->format(seq, unix_ms, zone);
  RC_ASSERT(out.find(std::to_string(seq)) != std::string::npos);
  RC_ASSERT(out.size() <= t->max_length());
}

// Every part but the number has a fixed width, so different numbers never collide, even
// at different times.
RC_GTEST_PROP(SerialTemplateProperty, DifferentNumbersGiveDifferentSerials, ()) {
  const Generated g = *valid_template();
  Result<SerialTemplate> t = SerialTemplate::parse(g.text);
  RC_ASSERT(t.ok());
  const uint64_t a = *any_seq();
  const uint64_t b = *any_seq();
  RC_PRE(a != b);
  const auto time_a = *rc::gen::arbitrary<int64_t>();
  const auto time_b = *rc::gen::oneOf(rc::gen::just(time_a), rc::gen::arbitrary<int64_t>());
  RC_ASSERT(t->format(a, time_a) != t->format(b, time_b));
}

RC_GTEST_PROP(SerialTemplateProperty, GarbageNeverCrashes, ()) {
  // Mostly template-ish characters, so the parser gets deep; sometimes any byte.
  const std::string text = *rc::gen::container<std::string>(
      rc::gen::oneOf(rc::gen::element('{', '}', 's', 'e', 'q', ':', '0', '8', '2', 'y', 'M', 'd',
                                      'H', 'm', 'S', 'x', '-'),
                     rc::gen::arbitrary<char>()));
  Result<SerialTemplate> t = SerialTemplate::parse(text);
  if (t.ok()) {
    RC_ASSERT(text.find("{seq") != std::string::npos);
    const uint64_t seq = *any_seq();
    RC_ASSERT(t->format(seq, *rc::gen::arbitrary<int64_t>()).find(std::to_string(seq)) !=
              std::string::npos);
  } else {
    const Status status = t.status();
    const std::string& m = status.message();
    RC_ASSERT(status.code() == StatusCode::kInvalidArgument);
    RC_ASSERT(m.rfind("template '", 0) == 0);
    RC_ASSERT(m.find(" at position ") != std::string::npos ||
              m.find("has no {seq}") != std::string::npos ||
              m.find("is empty") != std::string::npos);
  }
}

}  // namespace
}  // namespace idforge
