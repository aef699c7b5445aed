// `idforge compose`: the worked example from its parts, time formats, the round trip
// through `parse` for every preset, and fields that do not fit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "presets.h"
#include "run_idforge.h"

namespace idforge::e2e {
namespace {

using nlohmann::json;

std::string compose(std::vector<std::string> args) {
  args.insert(args.begin(), "compose");
  RunResult r = run_idforge(args);
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.lines().size(), 1u) << r.out;
  return r.lines().empty() ? "" : r.lines().front();
}

TEST(ComposeTest, WorkedExampleFromEveryTimeForm) {
  for (const char* time : {"2017-09-20T13:43:08.849Z", "1505914988849",
                           "2017-09-20 15:43:08.849+02:00", "2017-09-20T13:43:08.849999Z"}) {
    SCOPED_TRACE(time);
    EXPECT_EQ(compose({"--time", time, "--datacenter", "17", "--worker", "25"}),
              "910499571847892992");
  }
}

TEST(ComposeTest, SmallestIdOfAnInstant) {
  // 2024-01-01T00:00:00Z = 1704067200000; every other field 0.
  const uint64_t want = uint64_t{1704067200000 - 1288834974657} << 22;
  EXPECT_EQ(compose({"--time", "2024-01-01"}), std::to_string(want));
}

TEST(ComposeTest, SequenceAndCustomEpoch) {
  EXPECT_EQ(compose({"--time", "1505914988849", "--datacenter", "31", "--worker", "31",
                     "--sequence", "4095"}),
            "910499571849756671");
  EXPECT_EQ(compose({"--time", "2017-09-20T13:43:08.849Z", "--datacenter", "17", "--worker", "25",
                     "--epoch", "1420041600000"}),
            "360179098345246720");
}

// compose then parse gives back every field, for every preset, with each field at a
// value that uses its top and bottom bits.
TEST(ComposeTest, RoundTripThroughParseForEveryPreset) {
  for (const Preset& preset : presets()) {
    SCOPED_TRACE(preset.name);
    // Inside every preset's time range (baidu's ends in 2024), on a tick boundary.
    const int64_t unix_ms = 1600000000000;
    std::vector<std::string> args = {"--layout", preset.name, "--time", std::to_string(unix_ms)};
    json want = {{"layout", preset.name}, {"unix_ms", unix_ms}};
    for (const auto& field : preset.fields) {
      if (field.name == "time") continue;
      // Top bits set and the lowest clear: a field off by one bit shows.
      const uint64_t value = (uint64_t{1} << field.bits) - 2;
      args.push_back(field.is_node ? "--node" : "--sequence");
      args.push_back(field.is_node ? field.name + "=" + std::to_string(value)
                                   : std::to_string(value));
      want[field.name] = value;
    }
    const std::string id = compose(args);
    RunResult parsed = run_idforge({"parse", id, "--layout", preset.name, "--json"});
    ASSERT_EQ(parsed.exit_code, 0) << parsed.summary();
    json got = json::parse(parsed.out);
    for (const auto& item : want.items()) {
      EXPECT_EQ(got[item.key()], item.value()) << item.key();
    }
    // Decoded independently, too.
    auto fields = preset.decode(std::stoull(id));
    EXPECT_EQ(preset.unix_ms(std::stoull(id)), unix_ms);
    for (const auto& field : preset.fields) {
      if (field.name != "time") {
        EXPECT_EQ(fields[field.name], want[field.name]) << field.name;
      }
    }
    // compose --json prints what parse --json prints.
    args.push_back("--json");
    args.insert(args.begin(), "compose");
    RunResult as_json = run_idforge(args);
    ASSERT_EQ(as_json.exit_code, 0) << as_json.summary();
    EXPECT_EQ(as_json.out, parsed.out);
  }
}

TEST(ComposeTest, TimeFloorsToTheTick) {
  // sonyflake ticks are 10 ms: 1600000000007 becomes 1600000000000.
  std::string id = compose({"--layout", "sonyflake", "--time", "1600000000007"});
  const Preset& sonyflake = presets()[3];
  EXPECT_EQ(sonyflake.unix_ms(std::stoull(id)), 1600000000000);
}

TEST(ComposeTest, FieldOutOfRangeNamesTheField) {
  const std::string t = "2020-01-01";
  EXPECT_TRUE(is_usage_error(run_idforge({"compose", "--time", t, "--worker", "32"}), "worker"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"compose", "--time", t, "--datacenter", "99"}), "datacenter"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"compose", "--time", t, "--sequence", "4096"}), "sequence"));
  EXPECT_TRUE(is_usage_error(
      run_idforge({"compose", "--time", t, "--layout", "instagram", "--node", "shard=8192"}),
      "shard"));
  EXPECT_TRUE(is_usage_error(
      run_idforge({"compose", "--time", t, "--layout", "discord", "--sequence", "4096"}),
      "increment"));
}

TEST(ComposeTest, BadTimesAndMissingFields) {
  EXPECT_TRUE(is_usage_error(run_idforge({"compose"}), "--time"));
  EXPECT_TRUE(is_usage_error(run_idforge({"compose", "--time", "yesterday"}), "yesterday"));
  // Before the twitter epoch (2010-11-04).
  EXPECT_TRUE(is_usage_error(run_idforge({"compose", "--time", "2001-01-01"}), "epoch"));
  // After baidu's time field ran out.
  EXPECT_TRUE(is_usage_error(run_idforge({"compose", "--time", "2030-01-01", "--layout", "baidu"}),
                             "2030"));
  EXPECT_TRUE(is_usage_error(
      run_idforge({"compose", "--time", "2020-01-01", "--layout", "instagram", "--worker", "1"}),
      "worker"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"compose", "--time", "2020-01-01", "--node", "time=3"}), "time"));
}

}  // namespace
}  // namespace idforge::e2e
