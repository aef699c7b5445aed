// `idforge layout` and `layouts`: fields, epoch, tick and capacity, against the
// figures docs/snowflake.md gives for each preset.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "presets.h"
#include "run_idforge.h"

namespace idforge::e2e {
namespace {

using nlohmann::json;

json layout_json(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"layout"};
  full.insert(full.end(), args.begin(), args.end());
  full.push_back("--json");
  RunResult r = run_idforge(full);
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(LayoutTest, TwitterCapacityAsText) {
  RunResult r = run_idforge({"layout", "twitter"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  // The capacity lines are indented under "Capacity:".
  auto value = [&](const std::string& key) { return text_value(r.out, "  " + key); };
  EXPECT_EQ(value("max nodes"), "1024");
  EXPECT_EQ(value("IDs per tick"), "4096");
  EXPECT_EQ(value("max IDs per second"), "4096000 per node");
  EXPECT_EQ(value("time field runs out"), "2080-07-10T17:30:30.208Z");
  EXPECT_NE(r.out.find("1288834974657"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2010-11-04T01:42:54.657Z"), std::string::npos) << r.out;
}

TEST(LayoutTest, DefaultIsTwitter) {
  RunResult plain = run_idforge({"layout"});
  RunResult twitter = run_idforge({"layout", "twitter"});
  ASSERT_EQ(plain.exit_code, 0) << plain.summary();
  EXPECT_EQ(plain.out, twitter.out);
}

TEST(LayoutTest, TwitterAsJson) {
  json j = layout_json({});
  EXPECT_EQ(j["name"], "twitter");
  EXPECT_EQ(j["bits"], 63);
  EXPECT_EQ(j["epoch_ms"], 1288834974657);
  EXPECT_EQ(j["epoch"], "2010-11-04T01:42:54.657Z");
  EXPECT_EQ(j["tick_ms"], 1);
  json want_fields = json::array({
      {{"name", "time"}, {"bits", 41}, {"shift", 22}, {"role", "time"}},
      {{"name", "datacenter"}, {"bits", 5}, {"shift", 17}, {"role", "node"}},
      {{"name", "worker"}, {"bits", 5}, {"shift", 12}, {"role", "node"}},
      {{"name", "sequence"}, {"bits", 12}, {"shift", 0}, {"role", "sequence"}},
  });
  EXPECT_EQ(j["fields"], want_fields);
  const json& cap = j["capacity"];
  EXPECT_EQ(cap["max_nodes"], 1024);
  EXPECT_EQ(cap["ids_per_tick"], 4096);
  ASSERT_TRUE(cap["max_ids_per_second"].is_number_integer()) << cap.dump();
  EXPECT_EQ(cap["max_ids_per_second"], 4096000);
  EXPECT_EQ(cap["last_unix_ms"], 1288834974657 + ((int64_t{1} << 41) - 1));
}

TEST(LayoutTest, EveryPresetMatchesTheDocumentedLayout) {
  for (const Preset& preset : presets()) {
    SCOPED_TRACE(preset.name);
    json j = layout_json({preset.name});
    EXPECT_EQ(j["name"], preset.name);
    EXPECT_EQ(j["bits"], preset.total_bits());
    EXPECT_EQ(j["epoch_ms"], preset.epoch_ms);
    EXPECT_EQ(j["tick_ms"], preset.tick_ms);
    ASSERT_EQ(j["fields"].size(), preset.fields.size());
    int shift = preset.total_bits();
    for (size_t i = 0; i < preset.fields.size(); ++i) {
      shift -= preset.fields[i].bits;
      EXPECT_EQ(j["fields"][i]["name"], preset.fields[i].name);
      EXPECT_EQ(j["fields"][i]["bits"], preset.fields[i].bits);
      EXPECT_EQ(j["fields"][i]["shift"], shift);
    }
    const json& cap = j["capacity"];
    const uint64_t per_tick = uint64_t{1} << preset.sequence().bits;
    EXPECT_EQ(cap["max_nodes"], preset.max_nodes());
    EXPECT_EQ(cap["ids_per_tick"], per_tick);
    // Every preset's rate is a whole number.
    EXPECT_EQ(cap["max_ids_per_second"], per_tick * 1000 / static_cast<uint64_t>(preset.tick_ms));
    const int64_t max_tick = (int64_t{1} << preset.fields.front().bits) - 1;
    EXPECT_EQ(cap["last_unix_ms"], preset.epoch_ms + max_tick * preset.tick_ms);
  }
}

TEST(LayoutTest, CustomSpecWithIsoEpochAndTick) {
  json j = layout_json({"time:40,shard:10,sequence:13", "--epoch", "2024-01-01", "--tick-ms", "4"});
  EXPECT_EQ(j["bits"], 63);
  EXPECT_EQ(j["epoch_ms"], 1704067200000);
  EXPECT_EQ(j["tick_ms"], 4);
  EXPECT_EQ(j["capacity"]["max_nodes"], 1024);
  EXPECT_EQ(j["capacity"]["ids_per_tick"], 8192);
  EXPECT_EQ(j["capacity"]["max_ids_per_second"], 2048000);
}

TEST(LayoutTest, ListShowsEveryPreset) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"layout", "--list"}, std::vector<std::string>{"layouts"}}) {
    RunResult r = run_idforge(args);
    ASSERT_EQ(r.exit_code, 0) << r.summary();
    std::vector<std::string> lines = r.lines();
    ASSERT_EQ(lines.size(), presets().size()) << r.out;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].rfind(presets()[i].name + " ", 0), 0u) << lines[i];
    }
  }
  RunResult j = run_idforge({"layouts", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.summary();
  json all = json::parse(j.out);
  ASSERT_TRUE(all.is_array());
  ASSERT_EQ(all.size(), presets().size());
  EXPECT_EQ(all[2]["name"], "instagram");
  EXPECT_EQ(all[2]["capacity"]["max_nodes"], 8192);
}

TEST(LayoutTest, UnknownOrBrokenLayoutIsUsageError) {
  RunResult r = run_idforge({"layout", "foo"});
  EXPECT_TRUE(is_usage_error(r, "unknown layout 'foo'"));
  EXPECT_NE(r.err.find("twitter, discord, instagram, sonyflake, baidu"), std::string::npos)
      << r.err;
  // Too wide, no sequence, a malformed item.
  EXPECT_TRUE(is_usage_error(run_idforge({"layout", "time:41,worker:20,sequence:12"}), "layout"));
  EXPECT_TRUE(is_usage_error(run_idforge({"layout", "time:41,worker:10"}), "sequence"));
  EXPECT_TRUE(is_usage_error(run_idforge({"layout", "time:41,worker,sequence:12"}), "worker"));
  EXPECT_TRUE(is_usage_error(run_idforge({"layout", "twitter", "--list"}), "--list"));
}

}  // namespace
}  // namespace idforge::e2e
