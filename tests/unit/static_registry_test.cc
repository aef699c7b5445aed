// The static registry: ids from the URL or the environment, checked against the
// layout; a second process with the same id on this host is refused; the mark lives
// in the data dir.
#include "coord/static_registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "coord/local_registry.h"
#include "coord/registry_factory.h"

namespace idforge::coord {
namespace {

namespace fs = std::filesystem;

class StaticRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-static-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    unsetenv("IDFORGE_DATACENTER_ID");
    unsetenv("IDFORGE_WORKER_ID");
  }
  void TearDown() override {
    unsetenv("IDFORGE_DATACENTER_ID");
    unsetenv("IDFORGE_WORKER_ID");
    fs::remove_all(dir_);
  }

  RegistryOptions options(SlotSpace space = {}, const std::string& layout = "twitter") const {
    RegistryOptions o;
    o.space = space;
    o.layout_name = layout;
    o.data_dir = dir_ + "/data";
    return o;
  }
  Result<std::unique_ptr<WorkerRegistry>> open(const std::string& url, SlotSpace space = {}) const {
    return open_static_registry(url, options(space));
  }

  std::string dir_;
};

TEST_F(StaticRegistryTest, IdsFromTheUrl) {
  auto r = open("static:1/7");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  Result<Lease> lease = (*r)->acquire("host:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->datacenter, 1u);
  EXPECT_EQ(lease->worker, 7u);
  EXPECT_EQ(lease->slot, 39u);  // 1 << 5 | 7
  EXPECT_EQ(lease->start_delay_ms, 0);
  EXPECT_TRUE(fs::exists(dir_ + "/data/worker-39.lock"));

  Result<Lease> worker_only = open("static:5").value()->acquire("host:2");
  ASSERT_TRUE(worker_only.ok());
  EXPECT_EQ(worker_only->datacenter, 0u);
  EXPECT_EQ(worker_only->worker, 5u);
}

TEST_F(StaticRegistryTest, IdsFromTheEnvironment) {
  setenv("IDFORGE_DATACENTER_ID", "2", 1);
  setenv("IDFORGE_WORKER_ID", "3", 1);
  auto r = open_registry("static:", options());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  Lease lease = (*r)->acquire("host:1").value();
  EXPECT_EQ(lease.datacenter, 2u);
  EXPECT_EQ(lease.worker, 3u);
  EXPECT_NE((*r)->describe().find("IDFORGE_WORKER_ID"), std::string::npos);

  unsetenv("IDFORGE_WORKER_ID");
  auto missing = open("static:");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("IDFORGE_WORKER_ID"), std::string::npos);
}

TEST_F(StaticRegistryTest, IdsThatDoNotFitTheLayoutAreRefused) {
  auto dc = open("static:32/0");
  ASSERT_FALSE(dc.ok());
  EXPECT_EQ(dc.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(dc.status().message().find("datacenter 32 does not fit the 5 datacenter bits of "
                                       "layout twitter (0..31)"),
            std::string::npos)
      << dc.status().message();
  auto worker = open("static:0/32");
  ASSERT_FALSE(worker.ok());
  EXPECT_NE(worker.status().message().find("worker 32 does not fit the 5 worker bits"),
            std::string::npos);
  auto no_dc = open_static_registry("static:1/3", options(SlotSpace{0, 13}, "instagram"));
  ASSERT_FALSE(no_dc.ok());
  EXPECT_NE(no_dc.status().message().find("layout instagram has no datacenter field"),
            std::string::npos);
  for (const char* bad : {"static:x", "static:1/", "static:/1", "static:1/2/3", "static:-1"}) {
    EXPECT_EQ(open(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  RegistryOptions no_dir = options();
  no_dir.data_dir.clear();
  EXPECT_EQ(open_static_registry("static:1/1", no_dir).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(StaticRegistryTest, TheSameIdTwiceOnOneHostIsRefused) {
  auto first = open("static:1/7").value();
  Lease lease = first->acquire("host:1").value();
  Result<Lease> second = open("static:1/7").value()->acquire("host:2");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("datacenter 1 / worker 7 (slot 39) is already in use "
                                           "by host:1 (pid "),
            std::string::npos)
      << second.status().message();
  ASSERT_TRUE(first->release(lease).ok());
  EXPECT_TRUE(open("static:1/7").value()->acquire("host:2").ok());
}

TEST_F(StaticRegistryTest, TheMarkSurvivesARestart) {
  {
    auto r = open("static:0/4").value();
    Lease lease = r->acquire("host:1").value();
    ASSERT_TRUE(r->renew(lease, 1'700'000'009'000).ok());
    ASSERT_TRUE(r->release(lease).ok());
  }
  Lease again = open("static:0/4").value()->acquire("host:1").value();
  EXPECT_EQ(again.high_water_ms, 1'700'000'009'000);
}

TEST_F(StaticRegistryTest, StaticAndLocalInOneDirectoryExcludeEachOther) {
  auto local = open_local_registry("local:", options()).value();
  Lease taken = local->acquire("host:local").value();
  ASSERT_EQ(taken.slot, 0u);
  Result<Lease> clash = open("static:0/0").value()->acquire("host:static");
  EXPECT_FALSE(clash.ok());
}

}  // namespace
}  // namespace idforge::coord
