// `idforge parse`: known vectors, text and JSON output for every preset, bad IDs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "presets.h"
#include "run_idforge.h"

namespace idforge::e2e {
namespace {

using nlohmann::json;

// The worked example of the original algorithm (tests/data/published_snowflake.txt).
constexpr const char* kVectorId = "910499571847892992";

json parse_json(const RunResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.lines().size(), 1u) << "one object on one line: " << r.out;
  return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(ParseTest, WorkedExampleAsText) {
  RunResult r = run_idforge({"parse", kVectorId});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(text_value(r.out, "id"), kVectorId);
  EXPECT_EQ(text_value(r.out, "layout"), "twitter");
  EXPECT_EQ(text_value(r.out, "unix_ms"), "1505914988849");
  EXPECT_EQ(text_value(r.out, "time"), "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(text_value(r.out, "datacenter"), "17");
  EXPECT_EQ(text_value(r.out, "worker"), "25");
  EXPECT_EQ(text_value(r.out, "sequence"), "0");
  // The bit diagram shows the fields' bits: 17 and 25 in five bits each.
  EXPECT_NE(r.out.find("10001"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("11001"), std::string::npos) << r.out;
}

TEST(ParseTest, WorkedExampleAsJson) {
  json j = parse_json(run_idforge({"parse", kVectorId, "--json"}));
  json want = {{"id", kVectorId},
               {"layout", "twitter"},
               {"unix_ms", 1505914988849},
               {"time", "2017-09-20T13:43:08.849Z"},
               {"datacenter", 17},
               {"worker", 25},
               {"sequence", 0}};
  EXPECT_EQ(j, want) << j.dump();
  EXPECT_TRUE(j["id"].is_string()) << "IDs above 2^53 lose digits as JSON numbers";
}

TEST(ParseTest, OtherEpochAndHighestFields) {
  // Same fields with the 2015-01-01 epoch.
  json j = parse_json(
      run_idforge({"parse", "360179098345246720", "--epoch", "1420041600000", "--json"}));
  EXPECT_EQ(j["unix_ms"], 1505914988849);
  EXPECT_EQ(j["datacenter"], 17);
  EXPECT_EQ(j["worker"], 25);
  // The epoch also reads as ISO-8601.
  json iso = parse_json(
      run_idforge({"parse", "360179098345246720", "--epoch", "2014-12-31T16:00:00Z", "--json"}));
  EXPECT_EQ(iso, j);

  json high = parse_json(run_idforge({"parse", "910499571849756671", "--json"}));
  EXPECT_EQ(high["unix_ms"], 1505914988849);
  EXPECT_EQ(high["datacenter"], 31);
  EXPECT_EQ(high["worker"], 31);
  EXPECT_EQ(high["sequence"], 4095);
}

// For every preset: one key per non-time field by the layout's own names, the right
// JSON types, and values that match an independent decode.
TEST(ParseTest, JsonKeysAndTypesForEveryPreset) {
  for (const Preset& preset : presets()) {
    SCOPED_TRACE(preset.name);
    // An ID with every field set to a different pattern; the top bit of a 63-bit
    // layout stays clear.
    const uint64_t id = 0x2A5A'5A5A'5A5A'5A5Bull;
    json j =
        parse_json(run_idforge({"parse", std::to_string(id), "--layout", preset.name, "--json"}));
    std::set<std::string> want_keys = {"id", "layout", "unix_ms", "time"};
    for (const auto& field : preset.fields) {
      if (field.name != "time") want_keys.insert(field.name);
    }
    std::set<std::string> keys;
    for (const auto& item : j.items()) keys.insert(item.key());
    EXPECT_EQ(keys, want_keys);

    ASSERT_TRUE(j["id"].is_string());
    EXPECT_EQ(j["id"], std::to_string(id));
    EXPECT_EQ(j["layout"], preset.name);
    ASSERT_TRUE(j["unix_ms"].is_number_integer());
    EXPECT_EQ(j["unix_ms"].get<int64_t>(), preset.unix_ms(id));
    ASSERT_TRUE(j["time"].is_string());
    EXPECT_EQ(j["time"].get<std::string>().back(), 'Z');
    auto fields = preset.decode(id);
    for (const auto& field : preset.fields) {
      if (field.name == "time") continue;
      ASSERT_TRUE(j[field.name].is_number_unsigned()) << field.name;
      EXPECT_EQ(j[field.name].get<uint64_t>(), fields[field.name]) << field.name;
    }
  }
}

TEST(ParseTest, DiscordUsesAllSixtyFourBits) {
  const std::string top = "18446744073709551615";  // 2^64 - 1
  json j = parse_json(run_idforge({"parse", top, "--layout", "discord", "--json"}));
  EXPECT_EQ(j["id"], top);
  EXPECT_EQ(j["worker"], 31);
  EXPECT_EQ(j["process"], 31);
  EXPECT_EQ(j["increment"], 4095);
  // The same value does not fit a 63-bit layout.
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", top}), top));
}

TEST(ParseTest, BadIdsAreUsageErrors) {
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "abc"}), "'abc'"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "-1"}), "'-1'"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "99999999999999999999"}), "too large"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", ""}), "ID"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "12 34"}), "ID"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse", "9223372036854775808"}), "63 bits"));
  EXPECT_TRUE(is_usage_error(run_idforge({"parse"}), "required"));
}

TEST(ParseTest, UnknownLayoutListsPresets) {
  RunResult r = run_idforge({"parse", kVectorId, "--layout", "foo"});
  EXPECT_TRUE(is_usage_error(r, "unknown layout 'foo'"));
  for (const Preset& preset : presets()) {
    EXPECT_NE(r.err.find(preset.name), std::string::npos) << preset.name;
  }
}

}  // namespace
}  // namespace idforge::e2e
