// Time zones: fixed offsets, POSIX TZ rules, TZif files (hand-built and the real ones in
// /usr/share/zoneinfo, which the Debian package tzdata installs), and loading by name.
#include "idforge/time_zone.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/calendar.h"
#include "idforge/time_format.h"
#include "store/zoneinfo.h"

namespace idforge {
namespace {

constexpr int32_t kHour = 3600;

int64_t ms(std::string_view iso) {
  Result<int64_t> t = parse_time(iso);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.value_or(0);
}

std::string read_system_zone(const std::string& name) {
  std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "/usr/share/zoneinfo/" << name
                         << " is missing: install the Debian package tzdata";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// time_zone.cc and serial.cc hard-code these day numbers for their ranges.
TEST(TimeZoneTest, CivilDayNumbersTheRangesRelyOn) {
  EXPECT_EQ(unix_days_from_civil(0, 1, 1), -719528);
  EXPECT_EQ(unix_days_from_civil(1, 1, 1), -719162);
  EXPECT_EQ(unix_days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(unix_days_from_civil(9999, 1, 1), 2932532);
  EXPECT_EQ(unix_days_from_civil(10000, 1, 1), 2932897);
  const std::optional<CivilTime> last = civil_time_from_unix_ms(2932897LL * 86'400'000 - 1);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->year, 9999);
  EXPECT_EQ(last->month, 12);
  EXPECT_EQ(last->day, 31);
  EXPECT_EQ(last->millisecond, 999);
  EXPECT_FALSE(civil_time_from_unix_ms(2932897LL * 86'400'000).has_value());
  EXPECT_FALSE(civil_time_from_unix_ms(-719528LL * 86'400'000 - 1).has_value());
}

// ---- fixed offsets ----------------------------------------------------------------------

TEST(TimeZoneTest, DefaultIsUtc) {
  TimeZone zone;
  EXPECT_EQ(zone.name(), "UTC");
  EXPECT_TRUE(zone.is_fixed());
  EXPECT_EQ(zone.offset_seconds_at(0), 0);
  EXPECT_EQ(zone.offset_seconds_at(std::numeric_limits<int64_t>::min()), 0);
  EXPECT_EQ(TimeZone::utc().offset_seconds_at(ms("2026-07-01")), 0);
}

TEST(TimeZoneTest, FixedOffsetsInEveryAcceptedForm) {
  struct Case {
    const char* text;
    int32_t offset;
    const char* name;
  };
  for (const Case& c :
       {Case{"UTC", 0, "UTC"}, Case{"Z", 0, "UTC"}, Case{"+08:00", 8 * kHour, "+08:00"},
        Case{"+0800", 8 * kHour, "+08:00"}, Case{"+08", 8 * kHour, "+08:00"},
        Case{"-0530", -(5 * kHour + 1800), "-05:30"}, Case{"-05:30", -(5 * kHour + 1800), "-05:30"},
        Case{"+23:59", 23 * kHour + 59 * 60, "+23:59"}, Case{"-00:00", 0, "+00:00"}}) {
    Result<TimeZone> zone = TimeZone::fixed(c.text);
    ASSERT_TRUE(zone.ok()) << c.text << ": " << zone.status().to_string();
    EXPECT_EQ(zone->offset_seconds_at(ms("2026-01-01")), c.offset) << c.text;
    EXPECT_EQ(zone->offset_seconds_at(ms("1900-07-01")), c.offset) << c.text;
    EXPECT_EQ(zone->name(), c.name);
    EXPECT_TRUE(zone->is_fixed());
  }
}

TEST(TimeZoneTest, FixedOffsetErrorsQuoteTheText) {
  for (const char* bad : {"", "utc", "08:00", "+8", "+8:00", "+080", "+08:0", "+08:00x", " +08:00",
                          "+08:00 ", "+0800:", "GMT+8", "+08-00"}) {
    Result<TimeZone> zone = TimeZone::fixed(bad);
    ASSERT_FALSE(zone.ok()) << bad;
    EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(zone.status().message(),
              "time zone '" + std::string(bad) +
                  "' is not UTC, Z or an offset like +08:00, -0530 or +08");
  }
  for (const char* out_of_range : {"+24:00", "-24", "+08:60", "+99:99"}) {
    Result<TimeZone> zone = TimeZone::fixed(out_of_range);
    ASSERT_FALSE(zone.ok()) << out_of_range;
    EXPECT_EQ(zone.status().message(),
              "time zone '" + std::string(out_of_range) + "' is outside -23:59..+23:59");
  }
}

// ---- POSIX TZ rules -----------------------------------------------------------------------

TEST(TimeZoneTest, PosixRuleWithoutDstIsFixed) {
  Result<TimeZone> cst = TimeZone::from_posix_tz("CST-8");
  ASSERT_TRUE(cst.ok()) << cst.status().to_string();
  EXPECT_TRUE(cst->is_fixed());
  EXPECT_EQ(cst->offset_seconds_at(ms("2026-07-01")), 8 * kHour);  // POSIX sign: -8 is east
  EXPECT_EQ(cst->name(), "CST-8");

  Result<TimeZone> tehran = TimeZone::from_posix_tz("<+0330>-3:30");
  ASSERT_TRUE(tehran.ok()) << tehran.status().to_string();
  EXPECT_EQ(tehran->offset_seconds_at(0), 3 * kHour + 1800);
}

TEST(TimeZoneTest, PosixRuleSwitchesAtTheExactSecond) {
  Result<TimeZone> ny = TimeZone::from_posix_tz("EST5EDT,M3.2.0,M11.1.0");
  ASSERT_TRUE(ny.ok()) << ny.status().to_string();
  EXPECT_FALSE(ny->is_fixed());
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-01-15T12:00:00Z")), -5 * kHour);
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-07-15T12:00:00Z")), -4 * kHour);
  // 2026: second Sunday of March is the 8th, 02:00 EST = 07:00Z; first Sunday of
  // November is the 1st, 02:00 EDT = 06:00Z.
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-03-08T07:00:00Z") - 1), -5 * kHour);
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-03-08T07:00:00Z")), -4 * kHour);
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-11-01T06:00:00Z") - 1), -4 * kHour);
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-11-01T06:00:00Z")), -5 * kHour);
  // A month with five Sundays is not needed for week 5 = "last": 2026-03 has five.
  Result<TimeZone> eu = TimeZone::from_posix_tz("CET-1CEST,M3.5.0,M10.5.0/3");
  ASSERT_TRUE(eu.ok());
  EXPECT_EQ(eu->offset_seconds_at(ms("2026-03-29T01:00:00Z") - 1), 1 * kHour);
  EXPECT_EQ(eu->offset_seconds_at(ms("2026-03-29T01:00:00Z")), 2 * kHour);
  EXPECT_EQ(eu->offset_seconds_at(ms("2027-03-28T01:00:00Z") - 1), 1 * kHour);  // 4 Sundays
  EXPECT_EQ(eu->offset_seconds_at(ms("2027-03-28T01:00:00Z")), 2 * kHour);
  EXPECT_EQ(eu->offset_seconds_at(ms("2026-10-25T01:00:00Z") - 1), 2 * kHour);
  EXPECT_EQ(eu->offset_seconds_at(ms("2026-10-25T01:00:00Z")), 1 * kHour);
}

TEST(TimeZoneTest, PosixRuleSouthernHemisphereWrapsTheYear) {
  Result<TimeZone> sydney = TimeZone::from_posix_tz("AEST-10AEDT,M10.1.0,M4.1.0/3");
  ASSERT_TRUE(sydney.ok()) << sydney.status().to_string();
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-01-15T00:00:00Z")), 11 * kHour);
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-07-15T00:00:00Z")), 10 * kHour);
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-12-31T13:30:00Z")), 11 * kHour);
  // 2026-04-05 03:00 AEDT = 04-04T16:00Z; 2026-10-04 02:00 AEST = 10-03T16:00Z.
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-04-04T16:00:00Z") - 1), 11 * kHour);
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-04-04T16:00:00Z")), 10 * kHour);
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-10-03T16:00:00Z") - 1), 10 * kHour);
  EXPECT_EQ(sydney->offset_seconds_at(ms("2026-10-03T16:00:00Z")), 11 * kHour);
}

TEST(TimeZoneTest, PosixRuleJulianAndZeroBasedDays) {
  // Jn never counts February 29th: J60 is March 1st in every year.
  Result<TimeZone> julian = TimeZone::from_posix_tz("AAA0BBB,J60/0,J300/0");
  ASSERT_TRUE(julian.ok()) << julian.status().to_string();
  EXPECT_EQ(julian->offset_seconds_at(ms("2024-02-29T23:59:59Z")), 0);
  EXPECT_EQ(julian->offset_seconds_at(ms("2024-03-01T00:00:00Z")), kHour);
  EXPECT_EQ(julian->offset_seconds_at(ms("2023-03-01T00:00:00Z")), kHour);
  // n counts from 0 and does count February 29th: day 59 is Feb 29 in a leap year.
  Result<TimeZone> zero = TimeZone::from_posix_tz("AAA0BBB,59/0,300/0");
  ASSERT_TRUE(zero.ok()) << zero.status().to_string();
  EXPECT_EQ(zero->offset_seconds_at(ms("2024-02-28T23:59:59Z")), 0);
  EXPECT_EQ(zero->offset_seconds_at(ms("2024-02-29T00:00:00Z")), kHour);
  EXPECT_EQ(zero->offset_seconds_at(ms("2023-02-28T23:59:59Z")), 0);
  EXPECT_EQ(zero->offset_seconds_at(ms("2023-03-01T00:00:00Z")), kHour);
}

TEST(TimeZoneTest, PosixRuleRfc8536Extensions) {
  // Nuuk's footer: DST starts at -1:00 local, i.e. 23:00 on the Saturday before.
  Result<TimeZone> nuuk = TimeZone::from_posix_tz("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
  ASSERT_TRUE(nuuk.ok()) << nuuk.status().to_string();
  EXPECT_EQ(nuuk->offset_seconds_at(ms("2024-03-31T01:00:00Z") - 1), -2 * kHour);
  EXPECT_EQ(nuuk->offset_seconds_at(ms("2024-03-31T01:00:00Z")), -1 * kHour);
  // DST all year: starts Jan 1 00:00, "ends" Dec 31 at 25:00 DST, i.e. never.
  Result<TimeZone> always = TimeZone::from_posix_tz("EST5EDT,0/0,J365/25");
  ASSERT_TRUE(always.ok()) << always.status().to_string();
  for (const char* t : {"2026-01-01T00:00:00Z", "2026-06-30T12:00:00Z", "2026-12-31T23:59:59Z",
                        "2027-01-01T04:30:00Z"}) {
    EXPECT_EQ(always->offset_seconds_at(ms(t)), -4 * kHour) << t;
  }
  // An explicit DST offset that is not one hour ahead.
  Result<TimeZone> lord_howe = TimeZone::from_posix_tz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
  ASSERT_TRUE(lord_howe.ok()) << lord_howe.status().to_string();
  EXPECT_EQ(lord_howe->offset_seconds_at(ms("2026-01-15T00:00:00Z")), 11 * kHour);
  EXPECT_EQ(lord_howe->offset_seconds_at(ms("2026-07-15T00:00:00Z")), 10 * kHour + 1800);
}

TEST(TimeZoneTest, PosixRuleErrorsSayWhereAndWhat) {
  struct Case {
    const char* rule;
    const char* expected;
  };
  for (const Case& c : {
           Case{"", "expected a zone name of 3 or more letters at position 1"},
           Case{"ES5", "expected a zone name of 3 or more letters at position 1"},
           Case{"EST", "expected a UTC offset like 5, -8 or 3:30 at position 4"},
           Case{"EST25", "expected a UTC offset like 5, -8 or 3:30 at position 4"},
           Case{"EST5ED", "expected a zone name of 3 or more letters at position 5"},
           Case{"EST5EDT",
                "expected ',' and the DST start (a DST name needs its rule) at position 8"},
           Case{"EST5EDT,M3.2.0", "expected ',' and the DST end at position 15"},
           Case{"EST5EDT,M13.2.0,M11.1.0", "expected a month 1..12 after 'M' at position 10"},
           Case{"EST5EDT,M3.6.0,M11.1.0", "expected '.' and a week 1..5 at position 11"},
           Case{"EST5EDT,M3.2.7,M11.1.0", "expected '.' and a weekday 0..6 at position 13"},
           Case{"EST5EDT,J0,M11.1.0", "expected a day J1..J365 at position 10"},
           Case{"EST5EDT,366,M11.1.0", "expected a date Jn, n or Mm.w.d at position 9"},
           Case{"EST5EDT,M3.2.0/168,M11.1.0",
                "expected a time like 2 or 2:00:00 after '/' at position 16"},
           Case{"EST5EDT,M3.2.0,M11.1.0x", "expected the end of the rule at position 23"},
           Case{"<AB>5",
                "expected a zone name of 3 or more letters, digits or signs inside <> at position "
                "1"},
       }) {
    Result<TimeZone> zone = TimeZone::from_posix_tz(c.rule);
    ASSERT_FALSE(zone.ok()) << c.rule;
    EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(zone.status().message(),
              "POSIX TZ rule '" + std::string(c.rule) + "': " + c.expected);
  }
}

// ---- TZif, hand-built -------------------------------------------------------------------

struct TzifSpec {
  char version = '2';
  std::vector<int64_t> times;
  std::vector<uint8_t> types;
  std::vector<int32_t> offsets = {0};
  std::string footer;
  bool footer_newlines = true;
  uint32_t leapcnt = 0;
};

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>(v >> (8 * i) & 0xff);
}

void put_block(std::string& out, const TzifSpec& s, int time_size) {
  out += "TZif";
  out += s.version;
  out.append(15, '\0');
  for (uint64_t count : {uint64_t{0}, uint64_t{0}, uint64_t{s.leapcnt}, uint64_t{s.times.size()},
                         uint64_t{s.offsets.size()}, uint64_t{4}}) {
    put_be(out, count, 4);
  }
  for (int64_t t : s.times) put_be(out, static_cast<uint64_t>(t), time_size);
  for (uint8_t i : s.types) out += static_cast<char>(i);
  for (int32_t o : s.offsets) {
    put_be(out, static_cast<uint32_t>(o), 4);
    out += '\0';  // isdst
    out += '\0';  // abbreviation index
  }
  out += std::string("ABC\0", 4);
  out.append(s.leapcnt * static_cast<size_t>(time_size + 4), '\0');
}

std::string build_tzif(const TzifSpec& s) {
  std::string out;
  put_block(out, s, 4);
  if (s.version == '\0') return out;
  put_block(out, s, 8);
  if (s.footer_newlines) out += '\n';
  out += s.footer;
  if (s.footer_newlines) out += '\n';
  return out;
}

TEST(TimeZoneTest, TzifVersion1UsesItsTransitions) {
  TzifSpec s;
  s.version = '\0';
  s.times = {1000, 2000};
  s.types = {1, 2};
  s.offsets = {100, 200, 300};
  Result<TimeZone> zone = TimeZone::from_tzif(build_tzif(s), "Test/V1");
  ASSERT_TRUE(zone.ok()) << zone.status().to_string();
  EXPECT_EQ(zone->name(), "Test/V1");
  EXPECT_FALSE(zone->is_fixed());
  EXPECT_EQ(zone->offset_seconds_at(-5'000'000), 100);  // before the first: type 0
  EXPECT_EQ(zone->offset_seconds_at(999'999), 100);
  EXPECT_EQ(zone->offset_seconds_at(1'000'000), 200);
  EXPECT_EQ(zone->offset_seconds_at(1'999'999), 200);
  EXPECT_EQ(zone->offset_seconds_at(2'000'000), 300);
  EXPECT_EQ(zone->offset_seconds_at(std::numeric_limits<int64_t>::max()), 300);  // after the last
  EXPECT_EQ(zone->offset_seconds_at(std::numeric_limits<int64_t>::min()), 100);
}

TEST(TimeZoneTest, TzifVersion2UsesThe64BitBlockAndTheFooter) {
  TzifSpec s;
  s.times = {-5'000'000'000, 1000};  // the first does not fit the 32-bit block
  s.types = {1, 0};
  s.offsets = {-5 * kHour, -4 * kHour};
  s.footer = "EST5EDT,M3.2.0,M11.1.0";
  Result<TimeZone> zone = TimeZone::from_tzif(build_tzif(s), "Test/V2");
  ASSERT_TRUE(zone.ok()) << zone.status().to_string();
  EXPECT_EQ(zone->offset_seconds_at(-5'000'000'001'000), -5 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(-5'000'000'000'000), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(999'999), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(1'000'000), -5 * kHour);  // the last transition itself
  // After it, the footer rule decides.
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-01-15T12:00:00Z")), -5 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-07-15T12:00:00Z")), -4 * kHour);
}

TEST(TimeZoneTest, TzifWithoutTransitionsUsesTheFooterOrTypeZero) {
  TzifSpec s;
  s.version = '3';
  s.offsets = {9 * kHour};
  Result<TimeZone> plain = TimeZone::from_tzif(build_tzif(s), "Test/Plain");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->offset_seconds_at(ms("2026-07-15T12:00:00Z")), 9 * kHour);
  s.footer = "CET-1CEST,M3.5.0,M10.5.0/3";
  Result<TimeZone> ruled = TimeZone::from_tzif(build_tzif(s), "Test/Ruled");
  ASSERT_TRUE(ruled.ok()) << ruled.status().to_string();
  EXPECT_EQ(ruled->offset_seconds_at(ms("2026-07-15T12:00:00Z")), 2 * kHour);
  EXPECT_EQ(ruled->offset_seconds_at(ms("2026-01-15T12:00:00Z")), 1 * kHour);
}

TEST(TimeZoneTest, TzifErrorsAreClear) {
  auto message = [](const std::string& bytes) {
    Result<TimeZone> zone = TimeZone::from_tzif(bytes, "Bad/Zone");
    EXPECT_FALSE(zone.ok());
    EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument);
    return zone.status().message();
  };
  const std::string prefix = "time zone file 'Bad/Zone': ";
  EXPECT_EQ(message(""), prefix + "truncated at byte 0 (needs 44 more bytes, has 0)");
  std::string bytes = build_tzif(TzifSpec{});
  bytes[0] = 'X';
  EXPECT_EQ(message(bytes), prefix + "not a TZif file (no 'TZif' magic)");
  bytes = build_tzif(TzifSpec{});
  bytes[4] = '1';
  EXPECT_EQ(message(bytes), prefix + "unsupported TZif version byte 49");

  TzifSpec bad_index;
  bad_index.times = {10};
  bad_index.types = {1};
  EXPECT_EQ(message(build_tzif(bad_index)),
            prefix + "a transition names a local time type that is not there");
  TzifSpec unsorted;
  unsorted.times = {10, 10};
  unsorted.types = {0, 0};
  EXPECT_EQ(message(build_tzif(unsorted)), prefix + "transition times are not strictly ascending");
  TzifSpec no_types;
  no_types.offsets = {};
  EXPECT_EQ(message(build_tzif(no_types)), prefix + "has no local time types");
  TzifSpec huge_offset;
  huge_offset.offsets = {100'000};
  EXPECT_EQ(message(build_tzif(huge_offset)),
            prefix + "UTC offset 100000 s is outside -89999..93599");
  TzifSpec leap;
  leap.leapcnt = 1;
  EXPECT_EQ(message(build_tzif(leap)),
            prefix + "has leap-second records (a right/ zone); not supported");
  TzifSpec no_newlines;
  no_newlines.footer_newlines = false;
  no_newlines.footer = "UTC0";
  EXPECT_EQ(message(build_tzif(no_newlines)), prefix + "the footer does not start with a newline");
  TzifSpec bad_footer;
  bad_footer.footer = "EST5EDT";
  EXPECT_EQ(message(build_tzif(bad_footer)),
            prefix +
                "footer rule 'EST5EDT': expected ',' and the DST start (a DST name needs "
                "its rule) at position 8");
  std::string unterminated = build_tzif(TzifSpec{});
  unterminated.pop_back();
  EXPECT_EQ(message(unterminated), prefix + "the footer does not end with a newline");
}

// ---- TZif, the real files -----------------------------------------------------------------

TEST(TimeZoneTest, RealShanghaiIsEightHoursAheadAndHadDstIn1988) {
  Result<TimeZone> zone = TimeZone::from_tzif(read_system_zone("Asia/Shanghai"), "Asia/Shanghai");
  ASSERT_TRUE(zone.ok()) << zone.status().to_string();
  EXPECT_EQ(zone->name(), "Asia/Shanghai");
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-11-22T10:00:00Z")), 8 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-07-01T00:00:00Z")), 8 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("1988-07-01T00:00:00Z")), 9 * kHour);
}

TEST(TimeZoneTest, RealNewYorkFollowsDstThroughTransitionsAndFooter) {
  Result<TimeZone> zone =
      TimeZone::from_tzif(read_system_zone("America/New_York"), "America/New_York");
  ASSERT_TRUE(zone.ok()) << zone.status().to_string();
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-01-15T12:00:00Z")), -5 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-07-15T12:00:00Z")), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-03-08T07:00:00Z") - 1), -5 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-03-08T07:00:00Z")), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-11-01T06:00:00Z") - 1), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2026-11-01T06:00:00Z")), -5 * kHour);
  // 2050 is past the transitions a "fat" file lists (to 2037): the footer rule decides.
  EXPECT_EQ(zone->offset_seconds_at(ms("2050-03-13T07:00:00Z") - 1), -5 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2050-03-13T07:00:00Z")), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2050-11-06T06:00:00Z") - 1), -4 * kHour);
  EXPECT_EQ(zone->offset_seconds_at(ms("2050-11-06T06:00:00Z")), -5 * kHour);
  // Before standard time (1883) New York kept local mean time, -4:56:02.
  EXPECT_EQ(zone->offset_seconds_at(ms("1850-01-01T00:00:00Z")), -(4 * kHour + 56 * 60 + 2));
}

// Cutting a real file anywhere, or flipping bytes in it, never crashes the parser.
TEST(TimeZoneTest, TruncatedRealFilesAreRejected) {
  const std::string bytes = read_system_zone("America/New_York");
  ASSERT_GT(bytes.size(), 100u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<TimeZone> zone = TimeZone::from_tzif(std::string_view(bytes).substr(0, n), "NY");
    EXPECT_FALSE(zone.ok()) << "accepted the first " << n << " bytes";
  }
}

RC_GTEST_PROP(TimeZoneProperty, CorruptedTzifNeverCrashes, ()) {
  static const std::string kReal = read_system_zone("Europe/Berlin");
  RC_PRE(!kReal.empty());
  std::string bytes = kReal;
  const auto flips = *rc::gen::inRange<size_t>(1, 8);
  for (size_t i = 0; i < flips; ++i) {
    const auto at = *rc::gen::inRange<size_t>(0, bytes.size());
    bytes[at] = *rc::gen::arbitrary<char>();
  }
  Result<TimeZone> zone = TimeZone::from_tzif(bytes, "Fuzz");
  if (zone.ok()) {
    const auto t = *rc::gen::arbitrary<int64_t>();
    const int32_t offset = zone->offset_seconds_at(t);
    RC_ASSERT(offset >= -89999);
    RC_ASSERT(offset <= 93599);
  } else {
    RC_ASSERT(zone.status().code() == StatusCode::kInvalidArgument);
  }
}

RC_GTEST_PROP(TimeZoneProperty, RandomBytesNeverCrash, (const std::string& tail)) {
  // Start with a valid header half the time so the parser gets past the magic.
  std::string bytes =
      *rc::gen::element(std::string(), std::string("TZif2") + std::string(15, '\0'));
  bytes += tail;
  Result<TimeZone> zone = TimeZone::from_tzif(bytes, "Fuzz");
  if (!zone.ok()) RC_ASSERT(zone.status().code() == StatusCode::kInvalidArgument);
}

RC_GTEST_PROP(TimeZoneProperty, RandomPosixRulesNeverCrash, ()) {
  const std::string rule = *rc::gen::container<std::string>(
      rc::gen::element('E', 'S', 'T', 'D', '<', '>', '+', '-', '0', '1', '2', '5', '9', ',', '.',
                       '/', ':', 'M', 'J'));
  Result<TimeZone> zone = TimeZone::from_posix_tz(rule);
  if (zone.ok()) {
    const int32_t offset = zone->offset_seconds_at(*rc::gen::arbitrary<int64_t>());
    RC_ASSERT(offset >= -25 * kHour);
    RC_ASSERT(offset <= 25 * kHour);
  } else {
    RC_ASSERT(zone.status().message().find("at position ") != std::string::npos);
  }
}

// ---- loading by name (src/store/zoneinfo) -------------------------------------------------

TEST(LoadTimeZoneTest, BuiltInNamesNeedNoFile) {
  Result<TimeZone> utc = store::load_time_zone("UTC");
  ASSERT_TRUE(utc.ok());
  EXPECT_EQ(utc->name(), "UTC");
  Result<TimeZone> fixed = store::load_time_zone("-0530");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->offset_seconds_at(0), -(5 * kHour + 1800));
  Result<TimeZone> bad = store::load_time_zone("+25:00");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "time zone '+25:00' is outside -23:59..+23:59");
}

TEST(LoadTimeZoneTest, IanaNamesFromTheSystemZoneinfo) {
  Result<TimeZone> shanghai = store::load_time_zone("Asia/Shanghai");
  ASSERT_TRUE(shanghai.ok()) << shanghai.status().to_string() << " (is tzdata installed?)";
  EXPECT_EQ(shanghai->name(), "Asia/Shanghai");
  EXPECT_EQ(shanghai->offset_seconds_at(ms("2026-11-22T10:00:00Z")), 8 * kHour);
  Result<TimeZone> ny = store::load_time_zone("America/New_York");
  ASSERT_TRUE(ny.ok()) << ny.status().to_string();
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-01-15T12:00:00Z")), -5 * kHour);
  EXPECT_EQ(ny->offset_seconds_at(ms("2026-07-15T12:00:00Z")), -4 * kHour);
}

TEST(LoadTimeZoneTest, NamesThatCouldEscapeTheDirectoryAreRefused) {
  struct Case {
    const char* name;
    const char* why;
  };
  for (const Case& c :
       {Case{"../../etc/passwd", "contains '..'"}, Case{"Asia/../../etc/passwd", "contains '..'"},
        Case{"/etc/localtime", "starts with '/'; expected a name like Asia/Shanghai"},
        Case{"Asia//Shanghai", "has an empty path component"},
        Case{"Asia/", "has an empty path component"},
        Case{"Asia/Shang hai",
             "has a character that no zone name has (letters, digits and /_-+. only)"},
        Case{"",
             "is empty; expected UTC, an offset like +08:00 or a name like "
             "Asia/Shanghai"}}) {
    Result<TimeZone> zone = store::load_time_zone(c.name);
    ASSERT_FALSE(zone.ok()) << c.name;
    EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(zone.status().message(), "time zone '" + std::string(c.name) + "' " + c.why);
  }
}

TEST(LoadTimeZoneTest, UnknownNamesDirectoriesAndNonTzifFiles) {
  Result<TimeZone> missing = store::load_time_zone("Mars/Olympus_Mons");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'Mars/Olympus_Mons' not found in "), std::string::npos)
      << missing.status().message();
  Result<TimeZone> dir = store::load_time_zone("America");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(),
            "time zone 'America' is a directory of zones, not a zone (e.g. America/...)");
  Result<TimeZone> table = store::load_time_zone("zone1970.tab");  // text, not TZif
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().message(),
            "time zone file 'zone1970.tab': not a TZif file (no 'TZif' magic)");
}

TEST(LoadTimeZoneTest, LeapSecondZonesAreRefused) {
  if (!std::filesystem::exists("/usr/share/zoneinfo/right/Asia/Shanghai")) {
    GTEST_SKIP() << "this tzdata has no right/ zones";
  }
  Result<TimeZone> zone = store::load_time_zone("right/Asia/Shanghai");
  ASSERT_FALSE(zone.ok());
  EXPECT_EQ(zone.status().message(),
            "time zone file 'right/Asia/Shanghai': has leap-second records (a right/ zone); not "
            "supported");
}

// $TZDIR is searched first, then the system directory.
TEST(LoadTimeZoneTest, TzdirComesFirst) {
  std::string dir_template = ::testing::TempDir() + "idforge_tzdir_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
  const std::filesystem::path dir = dir_template;
  std::filesystem::create_directories(dir / "Test");
  {
    std::ofstream(dir / "Test" / "Kathmandu", std::ios::binary)
        << read_system_zone("Asia/Kathmandu");
    // Shadows the system's Asia/Shanghai with Tokyo's rules.
    std::filesystem::create_directories(dir / "Asia");
    std::ofstream(dir / "Asia" / "Shanghai", std::ios::binary) << read_system_zone("Asia/Tokyo");
  }
  const char* old = std::getenv("TZDIR");
  const std::string saved = old == nullptr ? "" : old;
  ASSERT_EQ(::setenv("TZDIR", dir.c_str(), 1), 0);

  Result<TimeZone> kathmandu = store::load_time_zone("Test/Kathmandu");
  Result<TimeZone> shadowed = store::load_time_zone("Asia/Shanghai");
  Result<TimeZone> system = store::load_time_zone("Europe/Paris");  // falls through

  if (old == nullptr) {
    ::unsetenv("TZDIR");
  } else {
    ::setenv("TZDIR", saved.c_str(), 1);
  }
  std::filesystem::remove_all(dir);

  ASSERT_TRUE(kathmandu.ok()) << kathmandu.status().to_string();
  EXPECT_EQ(kathmandu->offset_seconds_at(ms("2026-01-01T00:00:00Z")), 5 * kHour + 45 * 60);
  ASSERT_TRUE(shadowed.ok()) << shadowed.status().to_string();
  EXPECT_EQ(shadowed->offset_seconds_at(ms("2026-01-01T00:00:00Z")), 9 * kHour);
  ASSERT_TRUE(system.ok()) << system.status().to_string();
  EXPECT_EQ(system->offset_seconds_at(ms("2026-07-01T00:00:00Z")), 2 * kHour);
}

}  // namespace
}  // namespace idforge
