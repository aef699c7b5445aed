// Redis URLs as the segment store and the worker registry read them: redis:// and
// redis-sentinel://, what each part becomes, what a bad one is told, and that the
// password shows nowhere. The Redis registry's own query options are here too.
#include "redis/redis_url.h"

#include <gtest/gtest.h>

#include <string>

#include "coord/redis/redis_registry.h"

namespace idforge::redis {
namespace {

TEST(RedisUrlTest, ADirectUrl) {
  Result<RedisTarget> t = parse_redis_url("redis://app:p%40ss@10.0.0.7:6380/2", "store");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_FALSE(t->via_sentinels());
  EXPECT_EQ(t->host, "10.0.0.7");
  EXPECT_EQ(t->port, 6380);
  EXPECT_EQ(t->db, 2);
  EXPECT_EQ(t->user, "app");
  EXPECT_EQ(t->password, "p@ss");
  EXPECT_EQ(t->shown(), "redis://10.0.0.7:6380/2");

  Result<RedisTarget> v6 = parse_redis_url("redis://[::1]", "store");
  ASSERT_TRUE(v6.ok()) << v6.status().to_string();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6379);
  EXPECT_EQ(v6->shown(), "redis://[::1]:6379");
}

TEST(RedisUrlTest, ASentinelUrlListsTheSentinelsAndTheMasterName) {
  Result<RedisTarget> t = parse_redis_url(
      "redis-sentinel://:s3cret@10.0.0.1:26379,10.0.0.2,[fd00::3]:26380/ids-main/3", "registry");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_TRUE(t->via_sentinels());
  ASSERT_EQ(t->sentinels.size(), 3u);
  EXPECT_EQ(t->sentinels[0].host, "10.0.0.1");
  EXPECT_EQ(t->sentinels[0].port, 26379);
  EXPECT_EQ(t->sentinels[1].host, "10.0.0.2");
  EXPECT_EQ(t->sentinels[1].port, kDefaultSentinelPort);
  EXPECT_EQ(t->sentinels[2].host, "fd00::3");
  EXPECT_EQ(t->sentinels[2].port, 26380);
  EXPECT_EQ(t->master_name, "ids-main");
  EXPECT_EQ(t->db, 3);
  EXPECT_EQ(t->user, "");
  EXPECT_EQ(t->password, "s3cret");
  EXPECT_EQ(t->shown(),
            "redis-sentinel://10.0.0.1:26379,10.0.0.2:26379,[fd00::3]:26380/ids-main/3");

  Result<RedisTarget> one = parse_redis_url("redis-sentinel://127.0.0.1:5000/m", "store");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->db, 0);
  EXPECT_EQ(one->shown(), "redis-sentinel://127.0.0.1:5000/m");
  EXPECT_TRUE(is_redis_url("redis-sentinel://x/m"));
  EXPECT_TRUE(is_redis_url("redis://x"));
  EXPECT_FALSE(is_redis_url("rediss://x"));
  EXPECT_FALSE(is_redis_url("redis:/x"));
}

TEST(RedisUrlTest, BadUrlsNameTheProblemAndTheFormButNeverThePassword) {
  const std::pair<const char*, const char*> cases[] = {
      {"redis-sentinel://:pw@h1:26379,h2:26379", "no master name after the Sentinel addresses"},
      {"redis-sentinel://:pw@h1:26379/", "no master name after the Sentinel addresses"},
      {"redis-sentinel://:pw@h1:26379,,h2/m", "Sentinel 2 in the list: no host"},
      {"redis-sentinel://:pw@h1:99999/m", "Sentinel 1 in the list: the port must be a number"},
      {"redis-sentinel://:pw@[::1/m", "Sentinel 1 in the list: unclosed '['"},
      {"redis-sentinel://:pw@h1/m y", "the master name must be 1 to 128 of"},
      {"redis-sentinel://:pw@h1/m/x", "the database after the master name must be a number"},
      {"redis://:pw@h1:0", "the port must be a number from 1 to 65535"},
      {"redis://:pw@h1/x", "the database after '/' must be a number"},
      {"rediss://:pw@h1", "it must start with redis:// or redis-sentinel://"},
  };
  for (const auto& [url, why] : cases) {
    Result<RedisTarget> t = parse_redis_url(url, "registry");
    ASSERT_FALSE(t.ok()) << url;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << url;
    const std::string m = t.status().message();
    EXPECT_NE(m.find("bad redis registry URL"), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
    EXPECT_NE(m.find("redis-sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER_NAME"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("pw"), std::string::npos) << m;
  }
}

TEST(RedisRegistryUrlTest, ReplicaOptionsAreTakenOffAndTheRestIsLeft) {
  Result<coord::RedisRegistryUrl> u = coord::take_redis_registry_options(
      "redis-sentinel://h1,h2/m?ttl_ms=3000&min_replicas=1&cluster=c&replica_wait_ms=200");
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->rest, "redis-sentinel://h1,h2/m?ttl_ms=3000&cluster=c");
  EXPECT_EQ(u->writes.min_replicas, 1u);
  EXPECT_EQ(u->writes.replica_wait_ms, 200u);

  Result<coord::RedisRegistryUrl> none = coord::take_redis_registry_options("redis://h");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->rest, "redis://h");
  EXPECT_EQ(none->writes.min_replicas, 0u);
  EXPECT_EQ(none->writes.replica_wait_ms, 0u);

  const std::pair<const char*, const char*> bad[] = {
      {"redis://h?min_replicas=x", "min_replicas must be a whole number from 0 to 100, got 'x'"},
      {"redis://h?min_replicas=101", "got '101'"},
      {"redis://h?replica_wait_ms=0", "replica_wait_ms must be at least 1"},
      {"redis://h?min_replicas=1&min_replicas=2", "'min_replicas' is given twice"},
  };
  for (const auto& [url, why] : bad) {
    Result<coord::RedisRegistryUrl> r = coord::take_redis_registry_options(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace idforge::redis
