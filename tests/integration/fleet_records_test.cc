// The fleet records (core/fleet_records.h) of every registry that has them, against its
// real server: compare-and-set as the fleet floor relies on it, and the floor itself
// raced by two registry objects, as two nodes would.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/registry_factory.h"
#include "core/fleet_floor.h"
#include "core/worker_registry.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "unit/core/floor_race.h"

namespace idforge::integration {
namespace {

// The coordinators, and local: (files in a directory, kLocal here).
constexpr int kLocal = -1;

std::string kind_name(int kind) {
  return kind == kLocal ? "local" : registry_kind_name(static_cast<RegistryKind>(kind));
}

class FleetRecordsTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (GetParam() == kLocal) {
      dir_ = Services::get().make_dir("fleet-records");
      return;
    }
    Result<std::unique_ptr<RegistryBackend>> backend =
        RegistryBackend::connect(static_cast<RegistryKind>(GetParam()), unique_tag("fr"));
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    backend_ = std::move(backend).value();
  }

  // Another registry object on the same place, as another node opens it.
  std::unique_ptr<WorkerRegistry> open() {
    if (GetParam() == kLocal) {
      RegistryOptions options;
      Result<std::unique_ptr<WorkerRegistry>> r = coord::open_registry("local:" + dir_, options);
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      return r.ok() ? std::move(r).value() : nullptr;
    }
    return backend_->open(10'000, {}, "twitter");
  }

  std::string dir_;
  std::unique_ptr<RegistryBackend> backend_;
};

INSTANTIATE_TEST_SUITE_P(Registries, FleetRecordsTest,
                         ::testing::Values(kLocal, static_cast<int>(RegistryKind::kRedis),
                                           static_cast<int>(RegistryKind::kEtcd),
                                           static_cast<int>(RegistryKind::kZookeeper)),
                         [](const auto& param_info) { return kind_name(param_info.param); });

TEST_P(FleetRecordsTest, AReplaceTakesOnlyOnTheValueItExpects) {
  std::unique_ptr<WorkerRegistry> one = open();
  std::unique_ptr<WorkerRegistry> two = open();
  ASSERT_TRUE(one && two);
  FleetRecords* a = one->fleet_records();
  FleetRecords* b = two->fleet_records();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);

  Result<FleetRecord> absent = a->read("0-1-t");
  ASSERT_TRUE(absent.ok()) << absent.status().to_string();
  EXPECT_FALSE(absent->exists);

  FleetRecord now;
  Result<bool> done = a->replace("0-1-t", FleetRecord{}, "first", &now);
  ASSERT_TRUE(done.ok()) << done.status().to_string();
  EXPECT_TRUE(*done);
  // The other object expected it absent: refused, and told what is there.
  done = b->replace("0-1-t", FleetRecord{}, "second", &now);
  ASSERT_TRUE(done.ok()) << done.status().to_string();
  EXPECT_FALSE(*done);
  EXPECT_EQ(now, (FleetRecord{true, "first"}));
  done = b->replace("0-1-t", FleetRecord{true, "stale"}, "second", &now);
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done);
  EXPECT_EQ(now, (FleetRecord{true, "first"}));
  done = b->replace("0-1-t", FleetRecord{true, "first"}, "second", &now);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(*a->read("0-1-t"), (FleetRecord{true, "second"}));
  // Names are checked before they reach the registry.
  EXPECT_EQ(a->read("../x").status().code(), StatusCode::kInvalidArgument);
}

TEST_P(FleetRecordsTest, TwoNodesRacingOneTagNeverShareANumber) {
  std::unique_ptr<WorkerRegistry> a = open();
  std::unique_ptr<WorkerRegistry> b = open();
  ASSERT_TRUE(a && b);
  const testing::FloorRace race =
      testing::race_floor({a->fleet_records(), b->fleet_records()}, /*takes=*/40, /*step=*/100);
  ASSERT_EQ(race.error, "");
  EXPECT_TRUE(race.disjoint());
  EXPECT_EQ(race.refused, 0);
  std::unique_ptr<WorkerRegistry> reader = open();
  FleetFloor floor(*reader->fleet_records());
  EXPECT_EQ(*floor.highest("0/1", "raced"), 8000u);
}

TEST(FleetRecordsStaticTest, StaticIdsHaveNoSharedPlace) {
  RegistryOptions options;
  options.data_dir = Services::get().make_dir("fleet-static");
  Result<std::unique_ptr<WorkerRegistry>> r = coord::open_registry("static:1/2", options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->fleet_records(), nullptr);
}

}  // namespace
}  // namespace idforge::integration
