// The process log (src/log/log.h): both formats, escaping, level filtering, parsing
// the settings' words.
#include "log/log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace idforge::log {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

// 2026-11-26T04:10:00.123Z
const system_clock::time_point kWhen = system_clock::time_point(milliseconds(1'795'666'200'123));

std::string text(std::span<const Field> fields) {
  return format_line(Format::kText, kWhen, Level::kWarn, "store.down", fields);
}
std::string text(Fields fields) {
  return text(std::span<const Field>(fields.begin(), fields.size()));
}

nlohmann::json json(Fields fields) {
  const std::string line = format_line(Format::kJson, kWhen, Level::kWarn, "store.down",
                                       std::span<const Field>(fields.begin(), fields.size()));
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  return nlohmann::json::parse(line);
}

// Lines written while it lives, restoring stderr and the default level and format after.
class Captured {
 public:
  Captured() {
    set_writer_for_testing([this](Level, std::string_view line) { lines.emplace_back(line); });
  }
  ~Captured() {
    set_writer_for_testing(nullptr);
    configure(Level::kInfo, Format::kText);
  }
  std::vector<std::string> lines;
};

TEST(LogTest, ParsesEveryLevelAndFormatAndNamesTheChoicesOtherwise) {
  const std::pair<std::string_view, Level> levels[] = {
      {"trace", Level::kTrace}, {"debug", Level::kDebug}, {"info", Level::kInfo},
      {"warn", Level::kWarn},   {"error", Level::kError}, {"off", Level::kOff}};
  for (const auto& [name, level] : levels) {
    Result<Level> parsed = parse_level(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, level);
    EXPECT_EQ(level_name(level), name);
  }
  for (std::string_view bad : {"", "INFO", "warning", "verbose", "info "}) {
    Result<Level> parsed = parse_level(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(
        parsed.status().message(),
        "log level '" + std::string(bad) + "' is not one of trace, debug, info, warn, error, off");
  }
  ASSERT_TRUE(parse_format("text").ok());
  EXPECT_EQ(*parse_format("text"), Format::kText);
  EXPECT_EQ(*parse_format("json"), Format::kJson);
  EXPECT_EQ(format_name(Format::kJson), "json");
  Result<Format> bad = parse_format("logfmt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "log format 'logfmt' is not one of text, json");
}

TEST(LogTest, TextLineIsTimeLevelEventAndFieldsQuotedOnlyWhenNeeded) {
  EXPECT_EQ(text({{"store", "postgres://idforge@db1:5432/ids"}, {"error", "connection refused"}}),
            "2026-11-26T04:10:00.123Z warn store.down store=postgres://idforge@db1:5432/ids "
            "error=\"connection refused\"");
  EXPECT_EQ(text({}), "2026-11-26T04:10:00.123Z warn store.down");
  EXPECT_EQ(text({{"slot", 7},
                  {"ahead_ms", int64_t{-250}},
                  {"fenced", true},
                  {"ratio", 0.5},
                  {"big", uint64_t{18446744073709551615u}}}),
            "2026-11-26T04:10:00.123Z warn store.down slot=7 ahead_ms=-250 fenced=true ratio=0.5 "
            "big=18446744073709551615");
  // UTF-8 is text like any other; an empty value is "".
  EXPECT_EQ(text({{"zone", "Zürich"}, {"why", ""}}),
            "2026-11-26T04:10:00.123Z warn store.down zone=Zürich why=\"\"");
}

TEST(LogTest, TextEscapesEverythingThatCouldBreakTheLineOrAField) {
  EXPECT_EQ(text({{"error", "line one\nline two\r\n"}}),
            R"(2026-11-26T04:10:00.123Z warn store.down error="line one\nline two\r\n")");
  EXPECT_EQ(text({{"error", "say \"no\" \\ then"}}),
            R"(2026-11-26T04:10:00.123Z warn store.down error="say \"no\" \\ then")");
  // A value that looks like another field is quoted, so it cannot pass for one.
  EXPECT_EQ(text({{"error", "x=1"}}), R"(2026-11-26T04:10:00.123Z warn store.down error="x=1")");
  EXPECT_EQ(text({{"error", "tab\there"}}),
            R"(2026-11-26T04:10:00.123Z warn store.down error="tab\there")");
  EXPECT_EQ(text({{"error", std::string_view("nul\0bell\x07 del\x7f", 14)}}),
            R"(2026-11-26T04:10:00.123Z warn store.down error="nul\u0000bell\u0007 del\u007f")");
  // Bytes that are not UTF-8 (a stray byte, a truncated sequence, an overlong form, a
  // surrogate) are shown as bytes.
  EXPECT_EQ(text({{"error", "\xff\xc3 \xc0\xaf \xed\xa0\x80"}}),
            R"(2026-11-26T04:10:00.123Z warn store.down error="\xff\xc3 \xc0\xaf \xed\xa0\x80")");
  // Whatever the value, one line.
  const std::string nasty = text({{"a", "\n"}, {"b", "\r"}, {"c", "\"\n\""}});
  EXPECT_EQ(nasty.find('\n'), std::string::npos) << nasty;
  EXPECT_EQ(nasty.find('\r'), std::string::npos) << nasty;
}

TEST(LogTest, JsonLineIsOneObjectWithTheSameFieldsProperlyEscaped) {
  EXPECT_EQ(format_line(Format::kJson, kWhen, Level::kInfo, "lease.acquired",
                        std::vector<Field>{{"slot", 3},
                                           {"registry", "etcd://10.0.0.6:2379"},
                                           {"fenced", false},
                                           {"ahead_ms", int64_t{-5}}}),
            R"({"ts":"2026-11-26T04:10:00.123Z","level":"info","event":"lease.acquired",)"
            R"("slot":3,"registry":"etcd://10.0.0.6:2379","fenced":false,"ahead_ms":-5})");
  const std::string all_bytes = [] {
    std::string s;
    for (int c = 1; c < 0x80; ++c) s += static_cast<char>(c);
    return s;
  }();
  const nlohmann::json j = json({{"error", "line one\nline \"two\"\t\\"},
                                 {"control", all_bytes},
                                 {"utf8", "Zürich 東京"},
                                 {"bad",
                                  "a\xff"
                                  "b\xc3"},
                                 {"count", uint64_t{42}},
                                 {"ratio", 1.25}});
  EXPECT_EQ(j["ts"], "2026-11-26T04:10:00.123Z");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["event"], "store.down");
  EXPECT_EQ(j["error"], "line one\nline \"two\"\t\\");
  EXPECT_EQ(j["control"], all_bytes);
  EXPECT_EQ(j["utf8"], "Zürich 東京");
  EXPECT_EQ(j["bad"],
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd");  // U+FFFD for each stray byte
  EXPECT_EQ(j["count"], 42);
  EXPECT_EQ(j["ratio"], 1.25);
}

TEST(LogTest, TimesAreUtcWithMilliseconds) {
  EXPECT_EQ(format_time(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time(kWhen), "2026-11-26T04:10:00.123Z");
  EXPECT_EQ(format_time(system_clock::time_point(milliseconds(-1))), "1969-12-31T23:59:59.999Z");
}

TEST(LogTest, OnlyLevelsAtOrAboveTheConfiguredOneAreWritten) {
  Captured captured;
  auto all_levels = [] {
    trace("e.trace");
    debug("e.debug");
    info("e.info");
    warn("e.warn");
    error("e.error");
  };
  auto events = [&] {
    std::vector<std::string> names;
    for (const std::string& line : captured.lines) {
      const size_t start = line.find(' ', line.find(' ') + 1) + 1;
      names.push_back(line.substr(start, line.find(' ', start) - start));
    }
    captured.lines.clear();
    return names;
  };

  all_levels();  // the default: info
  EXPECT_EQ(events(), (std::vector<std::string>{"e.info", "e.warn", "e.error"}));
  configure(Level::kWarn, Format::kText);
  all_levels();
  EXPECT_EQ(events(), (std::vector<std::string>{"e.warn", "e.error"}));
  EXPECT_FALSE(enabled(Level::kInfo));
  EXPECT_TRUE(enabled(Level::kError));
  configure(Level::kTrace, Format::kText);
  all_levels();
  EXPECT_EQ(events().size(), 5u);
  configure(Level::kOff, Format::kText);
  all_levels();
  write(Level::kOff, "e.off", {});
  EXPECT_TRUE(events().empty());
  EXPECT_FALSE(enabled(Level::kError));
  EXPECT_FALSE(enabled(Level::kOff));
}

TEST(LogTest, ConfiguredFormatAppliesToEveryLine) {
  Captured captured;
  configure(Level::kDebug, Format::kJson);
  debug("segment.fetched", {{"tag", "order"}, {"count", 1000}});
  ASSERT_EQ(captured.lines.size(), 1u);
  const nlohmann::json j = nlohmann::json::parse(captured.lines[0]);
  EXPECT_EQ(j["level"], "debug");
  EXPECT_EQ(j["event"], "segment.fetched");
  EXPECT_EQ(j["tag"], "order");
  EXPECT_EQ(j["count"], 1000);
  EXPECT_EQ(level(), Level::kDebug);
  EXPECT_EQ(format(), Format::kJson);
}

TEST(LogTest, OwnedFieldsKeepTheirTextAfterTheOriginalsAreGone) {
  OwnedFields owned;
  {
    std::string store = "redis://127.0.0.1:6379";
    std::string error = "connection refused";
    const Field fields[] = {{"store", store}, {"error", error}, {"slot", 3}};
    owned.assign(fields);
    store.assign(100, 'x');
    error.clear();
  }
  OwnedFields copy = owned;  // copies stay valid too
  owned = OwnedFields();
  EXPECT_EQ(text(copy.view()),
            "2026-11-26T04:10:00.123Z warn store.down store=redis://127.0.0.1:6379 "
            "error=\"connection refused\" slot=3");
}

}  // namespace
}  // namespace idforge::log
