// `idforge next`: counts, order, uniqueness, node fields, layouts, policies, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "presets.h"
#include "run_idforge.h"
#include "support/ordering.h"

namespace idforge::e2e {
namespace {

using test::strictly_increasing;

// The logical policy may borrow up to max_drift_ms (1000 by default) ahead of the clock.
constexpr int64_t kMaxDriftMs = 1000;

// Runs `next` and checks what every successful run must satisfy: `count` IDs, strictly
// increasing, times between the start of the run and the end plus the drift allowed.
std::vector<uint64_t> next_ids(const Preset& preset, std::vector<std::string> args, size_t count) {
  args.insert(args.begin(), {"next", "--count", std::to_string(count)});
  const int64_t before = now_unix_ms();
  RunResult r = run_idforge(args);
  const int64_t after = now_unix_ms();
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  std::vector<uint64_t> ids = parse_ids(r.lines());
  EXPECT_EQ(ids.size(), count);
  EXPECT_TRUE(strictly_increasing(ids));
  if (!ids.empty()) {
    // Ticks are floored, so the first may start up to one tick before `before`.
    EXPECT_GE(preset.unix_ms(ids.front()), before - preset.tick_ms);
    EXPECT_LE(preset.unix_ms(ids.back()), after + kMaxDriftMs);
  }
  return ids;
}

TEST(NextTest, DefaultIsOneTwitterIdForWorkerZero) {
  const Preset& twitter = presets().front();
  std::vector<uint64_t> ids = next_ids(twitter, {}, 1);
  ASSERT_EQ(ids.size(), 1u);
  auto fields = twitter.decode(ids[0]);
  EXPECT_EQ(fields["datacenter"], 0u);
  EXPECT_EQ(fields["worker"], 0u);
  EXPECT_EQ(ids[0] >> 63, 0u) << "the sign bit stays 0";
}

TEST(NextTest, PrintsDistinctIncreasingIdsOfTheGivenNode) {
  const Preset& twitter = presets().front();
  // More than one tick's 4096 sequences, so the run crosses ticks.
  std::vector<uint64_t> ids = next_ids(twitter, {"--datacenter", "3", "--worker", "17"}, 10000);
  for (uint64_t id : ids) {
    auto fields = twitter.decode(id);
    ASSERT_EQ(fields["datacenter"], 3u) << id;
    ASSERT_EQ(fields["worker"], 17u) << id;
  }
  std::set<uint64_t> ticks;
  for (uint64_t id : ids) ticks.insert(twitter.decode(id)["time"]);
  EXPECT_GE(ticks.size(), 3u);
}

TEST(NextTest, EveryPresetWithEveryNodeFieldAtItsMaximum) {
  for (const Preset& preset : presets()) {
    SCOPED_TRACE(preset.name);
    std::vector<std::string> args = {"--layout", preset.name};
    // baidu's 28-bit time in seconds from 2016 ran out in November 2024; a recent
    // epoch keeps the preset usable (RunsOutOfTime covers the failure itself).
    if (preset.name == "baidu") args.insert(args.end(), {"--epoch", "2024-01-01"});
    for (const auto& field : preset.fields) {
      if (field.is_node) {
        args.push_back("--node");
        args.push_back(field.name + "=" + std::to_string((uint64_t{1} << field.bits) - 1));
      }
    }
    // Past one tick's sequences for the narrow presets (instagram 1024, sonyflake 256).
    Preset shown = preset;
    if (preset.name == "baidu") shown.epoch_ms = 1704067200000;
    std::vector<uint64_t> ids = next_ids(shown, args, 3000);
    for (uint64_t id : ids) {
      auto fields = preset.decode(id);
      for (const auto& field : preset.fields) {
        if (field.is_node) {
          ASSERT_EQ(fields[field.name], (uint64_t{1} << field.bits) - 1) << id;
        }
      }
    }
  }
}

TEST(NextTest, DatacenterAndWorkerFlagsMeanTheDiscordWorker) {
  const Preset& discord = presets()[1];
  std::vector<uint64_t> ids =
      next_ids(discord, {"--layout", "discord", "--worker", "9", "--node", "process=30"}, 100);
  for (uint64_t id : ids) {
    auto fields = discord.decode(id);
    ASSERT_EQ(fields["worker"], 9u);
    ASSERT_EQ(fields["process"], 30u);
  }
}

TEST(NextTest, CustomLayoutSpec) {
  Preset custom{"custom",
                1288834974657,
                1,
                {{"time", 40}, {"region", 3, true}, {"host", 7, true}, {"sequence", 13}}};
  std::vector<uint64_t> ids = next_ids(custom,
                                       {"--layout", "time:40,region:3,host:7,sequence:13", "--node",
                                        "region=5", "--node", "host=100"},
                                       500);
  for (uint64_t id : ids) {
    auto fields = custom.decode(id);
    ASSERT_EQ(fields["region"], 5u);
    ASSERT_EQ(fields["host"], 100u);
  }
}

TEST(NextTest, EveryPolicyGivesDistinctIncreasingIds) {
  const Preset& twitter = presets().front();
  for (const char* policy : {"logical", "wait", "reject", "ring"}) {
    SCOPED_TRACE(policy);
    next_ids(twitter, {"--policy", policy, "--worker", "1"}, 9000);
  }
}

TEST(NextTest, ClassicLogicalWithoutDrift) {
  next_ids(presets().front(), {"--max-drift-ms", "0"}, 9000);
}

// A run that borrows ticks ahead of the clock must not leave them for the next run:
// without a high-water mark the second run would start inside them and repeat IDs.
TEST(NextTest, BackToBackRunsNeverRepeat) {
  const Preset& twitter = presets().front();
  // About 50 ticks of borrowed time, far more than a process start takes.
  std::vector<uint64_t> first = next_ids(twitter, {}, 200000);
  std::vector<uint64_t> second = next_ids(twitter, {}, 200000);
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_GT(second.front(), first.back());
}

TEST(NextTest, BadCountsAreUsageErrors) {
  for (const char* count : {"0", "-1", "abc", "", "1.5", "10000001", "99999999999999999999"}) {
    SCOPED_TRACE(count);
    EXPECT_TRUE(is_usage_error(run_idforge({"next", "--count", count}), "--count"));
  }
}

TEST(NextTest, LargestCountIsAccepted) {
  // Checked without making ten million IDs: the limit is inclusive, one more is not.
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "-n", "10000001"}), "10000000"));
  RunResult r = run_idforge({"next", "-n", "4097"});
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.lines().size(), 4097u);
}

TEST(NextTest, FieldTheLayoutLacksNamesTheFieldsItHas) {
  RunResult r = run_idforge({"next", "--layout", "instagram", "--datacenter", "1"});
  EXPECT_TRUE(is_usage_error(r, "datacenter"));
  EXPECT_NE(r.err.find("shard"), std::string::npos) << r.err;
}

TEST(NextTest, ValueTooWideNamesTheField) {
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--worker", "32"}), "worker"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--datacenter", "-1"}), "--datacenter"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--layout", "instagram", "--node", "shard=8192"}),
                             "shard"));
}

TEST(NextTest, MalformedNodeAndFieldsNotSettable) {
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--node", "shard"}), "NAME=VALUE"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--node", "sequence=1"}), "sequence"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--node", "time=1"}), "time"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"next", "--worker", "1", "--node", "worker=2"}), "worker"));
}

TEST(NextTest, BadPolicyLayoutEpochAndTick) {
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--policy", "yolo"}), "yolo"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--layout", "foo"}), "unknown layout 'foo'"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--epoch", "soon"}), "--epoch"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--tick-ms", "0"}), "--tick-ms"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--max-drift-ms", "x"}), "--max-drift-ms"));
}

TEST(NextTest, EpochInTheFutureIsAnError) {
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--epoch", "2999-01-01"}), "epoch"));
}

// A layout whose time field ended long ago: a runtime failure (exit 1), said in one
// line, with nothing printed.
TEST(NextTest, RunsOutOfTime) {
  RunResult r = run_idforge({"next", "--layout", "time:10,worker:5,sequence:12"});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.one_error_line()) << r.summary();
}

}  // namespace
}  // namespace idforge::e2e
