// open_registry: the scheme picks the backend, ?ttl_ms= and &cluster= override the
// options, and anything else is an InvalidArgument that lists the accepted forms.
#include "coord/registry_factory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace idforge::coord {
namespace {

class RegistryFactoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-factory-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.data_dir = dir_;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  RegistryOptions options_;
};

TEST_F(RegistryFactoryTest, UnknownKindsListTheForms) {
  for (const char* url : {"", "mysql://x", "sqlite:x", "localhost", "redis:/x", "LOCAL:x"}) {
    auto r = open_registry(url, options_);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
    const std::string m = r.status().message();
    EXPECT_NE(m.find("static:DC/WORKER"), std::string::npos) << m;
    EXPECT_NE(m.find("local:DIR"), std::string::npos) << m;
    EXPECT_NE(m.find("redis://HOST:PORT"), std::string::npos) << m;
    EXPECT_NE(m.find("etcd://HOST:PORT"), std::string::npos) << m;
    EXPECT_NE(m.find("zookeeper://HOST:PORT"), std::string::npos) << m;
  }
}

TEST_F(RegistryFactoryTest, ARefusedUrlNeverShowsItsPassword) {
  for (const char* url : {"redis://app:s3cr/et@127.0.0.1:1?ttl_ms=x",
                          "redis-sentinel://app:s3cr/et@127.0.0.1:1/main?bogus=1",
                          "redis://:s3cr/et@127.0.0.1:1?cluster=a&cluster=b"}) {
    auto r = open_registry(url, options_);
    ASSERT_FALSE(r.ok()) << url;
    const std::string m = r.status().message();
    EXPECT_EQ(m.find("s3cr"), std::string::npos) << m;
    EXPECT_NE(m.find(":***@127.0.0.1:1"), std::string::npos) << m;
  }
}

TEST_F(RegistryFactoryTest, TtlFromTheQuery) {
  auto r = open_registry("local:" + dir_ + "?ttl_ms=1500", options_);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  Result<Lease> lease = (*r)->acquire("host:1");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->ttl_ms, 1500);
  // The query is not part of the directory.
  EXPECT_EQ((*r)->describe(), "local:" + dir_);

  auto defaults = open_registry("static:0/1", options_);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ((*defaults)->acquire("host:2")->ttl_ms, RegistryOptions{}.ttl_ms);
}

TEST_F(RegistryFactoryTest, BadQueriesNameTheProblem) {
  const std::string base = "local:" + dir_;
  const std::pair<const char*, const char*> cases[] = {
      {"?ttl_ms=abc", "ttl_ms must be a whole number of ms from 100 to 86400000, got 'abc'"},
      {"?ttl_ms=5", "got '5'"},
      {"?ttl_ms=", "got ''"},
      {"?ttl_ms=1500&ttl_ms=2000", "ttl_ms is given twice"},
      {"?cluster=a/b", "cluster must be"},
      {"?cluster=", "cluster must be"},
      {"?cluster=..", "cluster must be"},
      {"?colour=red", "unknown parameter 'colour' (known: ttl_ms, cluster)"},
  };
  for (const auto& [query, needle] : cases) {
    auto r = open_registry(base + query, options_);
    ASSERT_FALSE(r.ok()) << query;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << query;
    EXPECT_NE(r.status().message().find(needle), std::string::npos)
        << query << ": " << r.status().message();
  }
  EXPECT_TRUE(open_registry(base + "?cluster=prod-1.eu_west&ttl_ms=100", options_).ok());
}

TEST_F(RegistryFactoryTest, QueryErrorsComeBeforeAnyConnection) {
  // No server is asked anything when the URL itself is wrong.
  for (const char* url : {"redis://127.0.0.1:1?ttl_ms=x", "etcd://127.0.0.1:1?x=1",
                          "zookeeper://127.0.0.1:1/idforge?cluster=a/b"}) {
    auto r = open_registry(url, options_);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST_F(RegistryFactoryTest, BareWordsForTheLocalKinds) {
  auto local = open_registry("local", options_);
  ASSERT_TRUE(local.ok()) << local.status().to_string();
  EXPECT_EQ((*local)->describe(), "local:" + dir_);
  setenv("IDFORGE_WORKER_ID", "9", 1);
  auto fixed = open_registry("static", options_);
  unsetenv("IDFORGE_WORKER_ID");
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_EQ((*fixed)->acquire("host:1")->worker, 9u);
}

TEST_F(RegistryFactoryTest, ASlotSpaceNeedsNodeBits) {
  RegistryOptions none = options_;
  none.space = SlotSpace{0, 0};
  EXPECT_EQ(open_registry("local:", none).status().code(), StatusCode::kInvalidArgument);
  RegistryOptions huge = options_;
  huge.space = SlotSpace{20, 20};
  EXPECT_EQ(open_registry("local:", huge).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idforge::coord
