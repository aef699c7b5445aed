// The fleet floor: the record's rules (a floor and the few ranges above it), its
// compare-and-set under concurrent nodes, and the guard of two nodes on one store that
// goes back with its identity — which only the fleet floor catches.
#include "core/fleet_floor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "floor_race.h"
#include "store/served_marks.h"
#include "store/store_guard.h"
#include "store/store_set.h"
#include "unit/store/rewindable_store.h"

namespace idforge {
namespace {

namespace fs = std::filesystem;

// FleetRecords in memory, with a switch that makes every call fail (a registry down).
class MemoryRecords final : public FleetRecords {
 public:
  Result<FleetRecord> read(std::string_view name) override {
    std::lock_guard lock(mu_);
    ++calls_;
    if (down_) return Status::Unavailable("registry down");
    return records_[std::string(name)];
  }
  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override {
    std::lock_guard lock(mu_);
    ++calls_;
    if (down_) return Status::Unavailable("registry down");
    FleetRecord& r = records_[std::string(name)];
    if (!(r == expected)) {
      *now = r;
      return false;
    }
    r = FleetRecord{true, std::string(value)};
    return true;
  }
  std::string describe() const override { return "memory:registry"; }
  void set_down(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  void wipe() {
    std::lock_guard lock(mu_);
    records_.clear();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, FleetRecord> records_;
  bool down_ = false;
  int calls_ = 0;
};

TEST(FloorStateTest, RangesInOrderFoldIntoTheFloor) {
  FloorState s;
  EXPECT_TRUE(s.take(1, 100));
  EXPECT_TRUE(s.take(101, 200));
  EXPECT_EQ(s.floor, 200u);
  EXPECT_TRUE(s.above.empty());
  EXPECT_EQ(s.format(), "fleet-floor 1 200");
}

TEST(FloorStateTest, RangesOutOfOrderAreKeptAboveUntilTheGapFills) {
  FloorState s;
  ASSERT_TRUE(s.take(1, 100));
  // Node B's 201..300 is recorded before node A's 101..200, which the store gave first.
  EXPECT_TRUE(s.take(201, 300));
  EXPECT_EQ(s.format(), "fleet-floor 1 100 201-300");
  EXPECT_EQ(s.highest(), 300u);
  EXPECT_TRUE(s.take(101, 200));
  EXPECT_EQ(s.format(), "fleet-floor 1 300");
}

TEST(FloorStateTest, AnyOverlapOrAnythingAtOrBelowTheFloorIsRefused) {
  FloorState s;
  ASSERT_TRUE(s.take(1, 100));
  ASSERT_TRUE(s.take(201, 300));
  const std::string before = s.format();
  for (auto [first, last] : std::vector<std::pair<uint64_t, uint64_t>>{
           {1, 100}, {50, 60}, {100, 150}, {150, 201}, {250, 260}, {300, 400}, {1, 1000}}) {
    EXPECT_FALSE(s.take(first, last)) << first << ".." << last;
  }
  EXPECT_EQ(s.format(), before);  // a refusal changes nothing
  EXPECT_TRUE(s.take(101, 150));
  EXPECT_TRUE(s.take(301, 400));
}

TEST(FloorStateTest, TooManyRangesAboveFoldTheLowestGapsAway) {
  FloorState s;
  ASSERT_TRUE(s.take(1, 10));
  // Ranges that leave a gap each (a node that took 11..20 and crashed before recording).
  for (uint64_t i = 0; i < FloorState::kMaxRangesAbove + 2; ++i) {
    ASSERT_TRUE(s.take(21 + i * 20, 30 + i * 20));
  }
  EXPECT_EQ(s.above.size(), FloorState::kMaxRangesAbove);
  // The lowest gaps are given up, never handed out: 11..20 is now below the floor.
  EXPECT_GE(s.floor, 50u);
  EXPECT_FALSE(s.take(11, 20));
}

TEST(FloorStateTest, ParseReadsWhatFormatWritesAndRefusesAnythingElse) {
  FloorState s;
  ASSERT_TRUE(s.take(1, 5));
  ASSERT_TRUE(s.take(10, 20));
  ASSERT_TRUE(s.take(40, 41));
  Result<FloorState> back = FloorState::parse(s.format());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->format(), s.format());
  for (const char* bad :
       {"", "fleet-floor 1", "fleet-floor 2 5", "fleet-floor 1 x", "fleet-floor 1 5 7-6",
        "fleet-floor 1 5 6-9", "fleet-floor 1 5 10-20 15-30", "fleet-floor 1  5",
        "fleet-floor 1 5 10-20 ", "fleet-floor 1 99999999999999999999999"}) {
    EXPECT_FALSE(FloorState::parse(bad).ok()) << "accepted: '" << bad << "'";
  }
}

TEST(FleetFloorTest, NodesRacingOnOneTagNeverShareANumberAndRarelyLoseARange) {
  MemoryRecords records;
  const testing::FloorRace race = testing::race_floor({&records, &records, &records, &records},
                                                      /*takes=*/200, /*step=*/10);
  ASSERT_EQ(race.error, "");
  EXPECT_TRUE(race.disjoint());
  // Disjoint ranges recorded out of order are kept above the floor, not refused.
  EXPECT_EQ(race.refused, 0);
  EXPECT_EQ(race.used.size(), 800u);
}

TEST(FleetFloorTest, ARegistryThatDoesNotAnswerIsAnErrorNeverATake) {
  MemoryRecords records;
  FleetFloor floor(records);
  ASSERT_TRUE(floor.take("0/1", "t", 1, 10).ok());
  records.set_down(true);
  Result<FloorTake> took = floor.take("0/1", "t", 11, 20);
  EXPECT_EQ(took.status().code(), StatusCode::kUnavailable);
  records.set_down(false);
  took = floor.take("0/1", "t", 11, 20);
  ASSERT_TRUE(took.ok());
  EXPECT_TRUE(took->taken);
  EXPECT_EQ(*floor.highest("0/1", "t"), 20u);
  EXPECT_EQ(*floor.highest("1/2", "t"), 0u);  // another place is another record
}

TEST(FleetFloorTest, AGoodTakeCostsOneRoundTripOnceTheRecordIsKnown) {
  MemoryRecords records;
  FleetFloor floor(records);
  ASSERT_TRUE(floor.take("0/1", "t", 1, 10).ok());  // read + replace
  const int before = records.calls();
  ASSERT_TRUE(floor.take("0/1", "t", 11, 20).ok());
  EXPECT_EQ(records.calls() - before, 1);
}

// Two nodes on one store, as in the field: node a served one range, node b many. The
// store then goes back with its identity (wiped and the tag recreated at 1, or a dump
// restored), which neither node's own marks nor the identity check can see for the
// ranges the other node served.
class FleetGuardTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("idforge-fleet-" + std::to_string(::getpid()) + "-" + std::to_string(GetParam()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(store::record_new_store_identity(store_).ok());
    TagSpec spec;
    spec.name = "t";
    ASSERT_TRUE(store_.create_tag(spec).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Node {
    std::unique_ptr<store::ServedMarks> marks;
    std::unique_ptr<store::StoreGuard> guard;
  };
  Node node(const std::string& name, FleetFloor* fleet) {
    Node n;
    n.marks = std::move(store::ServedMarks::open((dir_ / name).string())).value();
    store::GuardSettings s;
    s.marks = n.marks.get();
    s.fleet = fleet;
    s.margin = 0;
    s.log = [](const std::string&) {};
    n.guard = std::make_unique<store::StoreGuard>(&store_, 0, 1, s);
    return n;
  }

  fs::path dir_;
  store::RewindableStore store_;
};

TEST_P(FleetGuardTest, AStoreThatWentBackWithItsIdentityRepeatsNoIdOnlyWithTheFleetFloor) {
  const bool with_floor = GetParam();
  MemoryRecords records;
  FleetFloor floor_a(records), floor_b(records);
  Node a = node("a", with_floor ? &floor_a : nullptr);
  Node b = node("b", with_floor ? &floor_b : nullptr);
  std::vector<uint64_t> ids;
  auto take = [&](Node& n) {
    Result<Segment> seg = n.guard->allocate("t", 100);
    ASSERT_TRUE(seg.ok()) << seg.status().to_string();
    for (uint64_t i = 0; i < seg->count; ++i) ids.push_back(seg->first + i);
  };
  take(a);
  for (int i = 0; i < 30; ++i) take(b);
  // Wiped and recreated at 1 (a Redis), or restored from a dump taken after a's range:
  // the same history, so no identity change.
  store_.go_back("t", 0, "h1");
  for (int i = 0; i < 5; ++i) {
    take(a);
    take(b);
  }
  std::sort(ids.begin(), ids.end());
  size_t repeats = 0;
  for (size_t i = 1; i < ids.size(); ++i) repeats += ids[i] == ids[i - 1];
  if (with_floor) {
    EXPECT_EQ(repeats, 0u);
    EXPECT_GE(a.guard->status().fleet_refused_ranges, 1u);
  } else {
    // The guard is needed: a's own mark (100) lets it take 101..200, which b served.
    EXPECT_GT(repeats, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutTheFloor, FleetGuardTest, ::testing::Bool(),
                         [](const auto& param_info) {
                           return param_info.param ? "floor" : "no_floor";
                         });

TEST(FleetGuardUnavailableTest, ARangeTheRegistryCannotRecordIsNeverUsed) {
  const fs::path dir =
      fs::temp_directory_path() / ("idforge-fleet-down-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  store::RewindableStore store;
  ASSERT_TRUE(store::record_new_store_identity(store).ok());
  TagSpec spec;
  spec.name = "t";
  ASSERT_TRUE(store.create_tag(spec).ok());
  MemoryRecords records;
  FleetFloor floor(records);
  auto marks = std::move(store::ServedMarks::open((dir / "m").string())).value();
  store::GuardSettings s;
  s.marks = marks.get();
  s.fleet = &floor;
  s.log = [](const std::string&) {};
  store::StoreGuard guard(&store, 0, 1, s);
  ASSERT_TRUE(guard.allocate("t", 10).ok());
  records.set_down(true);
  Result<Segment> seg = guard.allocate("t", 10);
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(seg.status().message().find("fleet floor"), std::string::npos);
  EXPECT_EQ(guard.status().fleet_unrecorded_ranges, 1u);
  EXPECT_EQ(marks->highest("0/1", "t"), 10u);  // not recorded as served either
  records.set_down(false);
  seg = guard.allocate("t", 10);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->first, 21u);  // 11..20 is a gap, never handed out
  fs::remove_all(dir);
}

}  // namespace
}  // namespace idforge
