#include "idforge/time_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <string>

#include "core/parse_u64.h"

namespace idforge {
namespace {

using ::testing::HasSubstr;

// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: 719528 days before 1970 and
// 2932897 days after it, minus one ms.
constexpr int64_t kFirstMs = -62167219200000;
constexpr int64_t kLastMs = 253402300799999;

// An independent reference: the C library's gmtime_r (64-bit time_t, proleptic
// Gregorian in glibc).
std::string reference_format(int64_t ms) {
  int64_t seconds = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const auto t = static_cast<time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "gmtime_r failed";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

int64_t parsed(std::string_view text) {
  Result<int64_t> r = parse_time(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.value_or(std::numeric_limits<int64_t>::min());
}

TEST(FormatIso8601, PublishedAndHandCheckedInstants) {
  EXPECT_EQ(format_iso8601_utc(1505914988849), "2017-09-20T13:43:08.849Z");  // vectors file
  EXPECT_EQ(format_iso8601_utc(1462015105796), "2016-04-30T11:18:25.796Z");  // Discord docs
  EXPECT_EQ(format_iso8601_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(format_iso8601_utc(-86400000), "1969-12-31T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(-86400001), "1969-12-30T23:59:59.999Z");
}

TEST(FormatIso8601, LeapYears) {
  // 2000 is a leap year (divisible by 400), 2100 is not (by 100 only).
  EXPECT_EQ(format_iso8601_utc(951782400000), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(951782400000 + 86400000), "2000-03-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(4107542400000), "2100-03-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(4107542400000 - 1), "2100-02-28T23:59:59.999Z");
}

TEST(FormatIso8601, YearRangeEdges) {
  EXPECT_EQ(format_iso8601_utc(kFirstMs), "0000-01-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601_utc(kLastMs), "9999-12-31T23:59:59.999Z");
  // Outside 0000..9999 the number itself is the honest answer.
  EXPECT_EQ(format_iso8601_utc(kFirstMs - 1), "-62167219200001");
  EXPECT_EQ(format_iso8601_utc(kLastMs + 1), "253402300800000");
  EXPECT_EQ(format_iso8601_utc(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(format_iso8601_utc(std::numeric_limits<int64_t>::max()), "9223372036854775807");
}

RC_GTEST_PROP(FormatIso8601, MatchesTheCLibraryAndParsesBack, ()) {
  const int64_t ms =
      *rc::gen::oneOf(rc::gen::inRange<int64_t>(0, kLastMs + 1),                // 1970..9999
                      rc::gen::inRange<int64_t>(kFirstMs, 0),                   // 0000..1969
                      rc::gen::inRange<int64_t>(-86400000 * 3, 86400000 * 3));  // around the epoch
  const std::string text = format_iso8601_utc(ms);
  RC_ASSERT(text == reference_format(ms));
  RC_ASSERT(parse_time(text).value_or(ms + 1) == ms);
}

TEST(ParseTime, DecimalMilliseconds) {
  EXPECT_EQ(parsed("1505914988849"), 1505914988849);
  EXPECT_EQ(parsed("0"), 0);
  EXPECT_EQ(parsed("-1"), -1);
  EXPECT_EQ(parsed("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parsed("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(parse_time("9223372036854775808").ok());
  EXPECT_FALSE(parse_time("-9223372036854775809").ok());
  EXPECT_FALSE(parse_time("99999999999999999999999").ok());
}

TEST(ParseTime, IsoForms) {
  const int64_t want = 1505914988849;  // 2017-09-20T13:43:08.849Z
  EXPECT_EQ(parsed("2017-09-20T13:43:08.849Z"), want);
  EXPECT_EQ(parsed("2017-09-20 13:43:08.849Z"), want);
  EXPECT_EQ(parsed("2017-09-20t13:43:08.849z"), want);
  EXPECT_EQ(parsed("2017-09-20T13:43:08.849"), want);  // no zone: UTC
  EXPECT_EQ(parsed("2017-09-20T13:43:08,849Z"), want);
  EXPECT_EQ(parsed("2017-09-20T13:43:08.849123456Z"), want);  // truncated, not rounded
  EXPECT_EQ(parsed("2017-09-20T13:43:08.8499Z"), want);
  EXPECT_EQ(parsed("2017-09-20T13:43:08.8Z"), want - 49);
  EXPECT_EQ(parsed("2017-09-20T13:43:08Z"), want - 849);
  EXPECT_EQ(parsed("2017-09-20T13:43Z"), want - 8849);
  EXPECT_EQ(parsed("2017-09-20"), want - 49388849);  // midnight UTC
}

TEST(ParseTime, Offsets) {
  const int64_t want = 1505914988849;
  EXPECT_EQ(parsed("2017-09-20 15:43:08.849+02:00"), want);
  EXPECT_EQ(parsed("2017-09-20T15:43:08.849+0200"), want);
  EXPECT_EQ(parsed("2017-09-20T15:43:08.849+02"), want);
  EXPECT_EQ(parsed("2017-09-20T08:13:08.849-05:30"), want);
  EXPECT_EQ(parsed("2017-09-20T13:43:08.849+00:00"), want);
  EXPECT_EQ(parsed("2017-09-20T13:43:08.849-00:00"), want);
  // An offset can move the instant across midnight and a year boundary.
  EXPECT_EQ(parsed("1970-01-01T00:00:00+01:00"), -3600000);
  EXPECT_EQ(parsed("1969-12-31T23:00:00-01:00"), 0);
  EXPECT_EQ(parsed("0000-01-01T00:00:00Z"), kFirstMs);
  EXPECT_EQ(parsed("9999-12-31T23:59:59.999Z"), kLastMs);
}

TEST(ParseTime, LeapDays) {
  EXPECT_EQ(parsed("2000-02-29"), 951782400000);
  EXPECT_EQ(parsed("2100-03-01T00:00:00Z"), 4107542400000);
  EXPECT_EQ(parsed("2024-02-29"), parsed("2024-03-01") - 86400000);
  EXPECT_EQ(parsed("0000-02-29"), parsed("0000-03-01") - 86400000);  // year 0 is a leap year
  for (const char* bad : {"2100-02-29", "1900-02-29", "2023-02-29", "2000-02-30"}) {
    const Status s = parse_time(bad).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("does not have")) << bad;
  }
}

TEST(ParseTime, RejectsMalformedInput) {
  const char* bad[] = {
      "",
      "-",
      "abc",
      "1e3",
      "+5",
      " 2017-09-20",
      "2017-09-20 ",
      "2017-9-20",
      "17-09-20",
      "2017/09/20",
      "2017-09-20T",
      "2017-09-20T13",
      "2017-09-20T1:43",
      "2017-09-20T13:43:8",
      "2017-09-20X13:43:08Z",
      "2017-09-20T13:43:08.Z",
      "2017-09-20T13:43:08ZZ",
      "2017-09-20T13:43:08Z+01:00",
      "2017-09-20Z",
      "2017-09-20T13:43:08+2",
      "2017-09-20T13:43:08+02:0",
      "2017-09-20T13:43:08+02:000",
      "2017-09-20T13:43:08+24:00",
      "2017-09-20T13:43:08+02:60",
      "2017-09-20T24:00:00Z",
      "2017-09-20T13:60:00Z",
      "2016-12-31T23:59:60Z",  // a leap second has no Unix ms
      "2017-13-01",
      "2017-00-10",
      "2017-09-00",
      "2017-09-31",
      "12017-09-20",
  };
  for (const char* text : bad) {
    Result<int64_t> r = parse_time(text);
    EXPECT_FALSE(r.ok()) << '"' << text << "\" parsed as " << r.value_or(0);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("\"") + text + "\"")) << text;
  }
  EXPECT_THAT(parse_time("tomorrow").status().message(), HasSubstr("ISO-8601"));
  EXPECT_THAT(parse_time("2017-13-01").status().message(), HasSubstr("month 13"));
}

TEST(ParseU64, AcceptsPlainDecimals) {
  EXPECT_EQ(parse_u64("0", "ID").value_or(1), 0u);
  EXPECT_EQ(parse_u64("007", "ID").value_or(0), 7u);
  EXPECT_EQ(parse_u64("910499571847892992", "ID").value_or(0), 910499571847892992u);
  EXPECT_EQ(parse_u64("18446744073709551615", "ID").value_or(0),
            std::numeric_limits<uint64_t>::max());
}

TEST(ParseU64, RejectsEverythingElseQuotingInputAndWhat) {
  for (const char* text :
       {"", "+1", "-1", " 1", "1 ", "1x", "0x10", "1.0", "1,000", "18446744073709551616",
        "18446744073709551620", "99999999999999999999", "100000000000000000000"}) {
    Result<uint64_t> r = parse_u64(text, "--count");
    EXPECT_FALSE(r.ok()) << '"' << text << "\" parsed as " << r.value_or(0);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("--count \"") + text + "\""));
  }
  EXPECT_THAT(parse_u64("18446744073709551616", "ID").status().message(), HasSubstr("larger"));
  // Unprintable bytes are escaped and long input is cut short in the message.
  EXPECT_THAT(parse_u64(std::string("1\n\x7f"), "ID").status().message(),
              HasSubstr("\"1\\x0a\\x7f\""));
  const std::string huge(10000, '9');
  EXPECT_LT(parse_u64(huge, "ID").status().message().size(), 200u);
}

RC_GTEST_PROP(ParseU64, RoundTripsEveryValue, (uint64_t value)) {
  RC_ASSERT(parse_u64(std::to_string(value), "ID").value_or(value + 1) == value);
}

}  // namespace
}  // namespace idforge
