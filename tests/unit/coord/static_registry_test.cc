// The static registry: ids from the URL, the environment or the host name's ordinal
// (static:ordinal), checked against the layout; a second process with the same id on
// this host is refused; the mark lives in the data dir.
#include "coord/local/static_registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "coord/local/local_registry.h"
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
    unsetenv("IDFORGE_HOSTNAME");
  }
  void TearDown() override {
    unsetenv("IDFORGE_DATACENTER_ID");
    unsetenv("IDFORGE_WORKER_ID");
    unsetenv("IDFORGE_HOSTNAME");
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

// static:ordinal, as a StatefulSet's pod idforge-N runs it.
TEST_F(StaticRegistryTest, TheOrdinalOfTheHostName) {
  struct Case {
    const char* host;
    uint64_t worker;
  };
  for (const Case& c : {Case{"idforge-7", 7}, Case{"idforge-0", 0}, Case{"id-forge-blue-31", 31},
                        Case{"idforge-12.idforge.prod.svc.cluster.local", 12}}) {
    setenv("IDFORGE_HOSTNAME", c.host, 1);
    auto r = open_registry("static:ordinal", options());
    ASSERT_TRUE(r.ok()) << c.host << ": " << r.status().to_string();
    Lease lease = (*r)->acquire("pod").value();
    EXPECT_EQ(lease.worker, c.worker) << c.host;
    EXPECT_EQ(lease.datacenter, 0u) << c.host;
    EXPECT_NE((*r)->describe().find(c.host), std::string::npos) << (*r)->describe();
    ASSERT_TRUE((*r)->release(lease).ok());
  }
  setenv("IDFORGE_HOSTNAME", "idforge-5", 1);
  setenv("IDFORGE_DATACENTER_ID", "3", 1);
  Lease lease = open("static:ordinal").value()->acquire("pod").value();
  EXPECT_EQ(lease.datacenter, 3u);
  EXPECT_EQ(lease.worker, 5u);
  EXPECT_EQ(lease.slot, 101u);  // 3 << 5 | 5
  // A layout without a datacenter field takes the ordinal as it is.
  unsetenv("IDFORGE_DATACENTER_ID");
  setenv("IDFORGE_HOSTNAME", "shard-8191", 1);
  auto wide = open_static_registry("static:ordinal", options(SlotSpace{0, 13}, "instagram"));
  ASSERT_TRUE(wide.ok()) << wide.status().to_string();
  EXPECT_EQ((*wide)->acquire("pod").value().worker, 8191u);
}

TEST_F(StaticRegistryTest, AHostNameWithoutAPlainOrdinalIsRefused) {
  for (const char* host : {"idforge", "idforge-", "idforge-x7", "idforge-7a", "7", "idforge--",
                           "idforge-+7", "idforge- 7", "web.idforge-7", "idforge-07", "idforge-00",
                           "idforge-18446744073709551616", "idforge-99999999999999999999"}) {
    setenv("IDFORGE_HOSTNAME", host, 1);
    auto r = open("static:ordinal");
    ASSERT_FALSE(r.ok()) << host;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << host;
    const std::string m(r.status().message());
    EXPECT_NE(m.find("host name '" + std::string(host) + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("the number after the last '-'"), std::string::npos) << m;
    EXPECT_NE(m.find("IDFORGE_HOSTNAME"), std::string::npos) << m;
  }
  setenv("IDFORGE_HOSTNAME", "idforge-07", 1);
  EXPECT_NE(open("static:ordinal").status().message().find("leading zeros"), std::string::npos);
  setenv("IDFORGE_HOSTNAME", "idforge-18446744073709551616", 1);
  EXPECT_NE(open("static:ordinal").status().message().find("too large"), std::string::npos);
}

TEST_F(StaticRegistryTest, AnOrdinalThatDoesNotFitTheLayoutIsRefused) {
  setenv("IDFORGE_HOSTNAME", "idforge-32", 1);
  auto worker = open("static:ordinal");
  ASSERT_FALSE(worker.ok());
  EXPECT_EQ(worker.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(worker.status().message().find("worker 32 does not fit the 5 worker bits of layout "
                                           "twitter (0..31) (worker from host name 'idforge-32'"),
            std::string::npos)
      << worker.status().message();
  // The largest uint64 is read, then refused by the layout, not wrapped.
  setenv("IDFORGE_HOSTNAME", "idforge-18446744073709551615", 1);
  EXPECT_EQ(open("static:ordinal").status().code(), StatusCode::kOutOfRange);

  setenv("IDFORGE_HOSTNAME", "idforge-1", 1);
  setenv("IDFORGE_DATACENTER_ID", "32", 1);
  auto dc = open("static:ordinal");
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.status().message().find("datacenter 32 does not fit the 5 datacenter bits"),
            std::string::npos)
      << dc.status().message();
  EXPECT_NE(dc.status().message().find("IDFORGE_DATACENTER_ID"), std::string::npos);
  setenv("IDFORGE_DATACENTER_ID", "east", 1);
  auto word = open("static:ordinal");
  EXPECT_EQ(word.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(word.status().message().find("IDFORGE_DATACENTER_ID must be a non-negative whole "
                                         "number, got 'east'"),
            std::string::npos)
      << word.status().message();
  setenv("IDFORGE_DATACENTER_ID", "1", 1);
  auto no_dc = open_static_registry("static:ordinal", options(SlotSpace{0, 13}, "instagram"));
  EXPECT_NE(no_dc.status().message().find("layout instagram has no datacenter field"),
            std::string::npos)
      << no_dc.status().message();
}

TEST_F(StaticRegistryTest, TheOrdinalComesFromTheRealHostNameByDefault) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  auto r = open_static_registry("static:ordinal", options(SlotSpace{0, 63}, "wide"));
  const std::string name = host;
  const std::string label = name.substr(0, name.find('.'));
  const size_t dash = label.rfind('-');
  const std::string digits = dash == std::string::npos ? "" : label.substr(dash + 1);
  const bool plain = !digits.empty() && digits.size() <= 18 &&
                     digits.find_first_not_of("0123456789") == std::string::npos &&
                     (digits.size() == 1 || digits[0] != '0');
  if (plain) {
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ((*r)->acquire("pod").value().worker, std::stoull(digits));
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("host name '" + name + "'"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("IDFORGE_HOSTNAME"), std::string::npos)
        << "names the variable although it is not set: " << r.status().message();
  }
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
