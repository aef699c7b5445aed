// What only the Redis store has to get right: its URL, its keys, its scripts, and a
// server that goes away, freezes, or forgets its script cache.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "idforge/segment_store.h"
#include "integration/services.h"
#include "store/store_factory.h"
#include "support/ports.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::ms_since;

using Clock = std::chrono::steady_clock;

std::string port_of(const std::string& url) { return url.substr(url.rfind(':') + 1); }

TagSpec spec_of(const std::string& name, uint64_t step = 1000) {
  TagSpec spec;
  spec.name = name;
  spec.step = step;
  return spec;
}

TEST(RedisStoreTest, KeysAreOneHashPerTagAndASetOfNames) {
  Result<Server> redis = Services::get().shared(ServerKind::kRedis);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("keys");
  TagSpec spec = spec_of(tag, 50);
  spec.start = 10;
  spec.description = "d";
  ASSERT_TRUE((*s)->create_tag(spec).ok());
  ASSERT_TRUE((*s)->allocate(tag, 0).ok());
  auto& sv = Services::get();
  EXPECT_EQ(sv.client(*redis, {"TYPE", "idforge:seg:" + tag}).out, "hash\n");
  EXPECT_EQ(sv.client(*redis, {"HGET", "idforge:seg:" + tag, "max_id"}).out, "59\n");
  EXPECT_EQ(sv.client(*redis, {"HGET", "idforge:seg:" + tag, "step"}).out, "50\n");
  EXPECT_EQ(sv.client(*redis, {"HGET", "idforge:seg:" + tag, "description"}).out, "d\n");
  EXPECT_EQ(sv.client(*redis, {"SISMEMBER", "idforge:tags", tag}).out, "1\n");
  EXPECT_EQ(sv.client(*redis, {"HLEN", "idforge:seg:" + tag}).out, "5\n");
}

TEST(RedisStoreTest, TheDatabaseNumberSelectsADatabase) {
  Result<std::string> url = Services::get().redis_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto db0 = store::open_store(*url);
  auto db3 = store::open_store(*url + "/3");
  ASSERT_TRUE(db0.ok() && db3.ok());
  EXPECT_EQ((*db3)->describe(), *url + "/3");
  const std::string tag = unique_tag("db3");
  ASSERT_TRUE((*db3)->create_tag(spec_of(tag)).ok());
  EXPECT_EQ((*db0)->get_tag(tag).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE((*db3)->get_tag(tag).ok());
}

TEST(RedisStoreTest, ThePasswordNeverAppearsInErrors) {
  Result<std::string> url = Services::get().redis_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  // The test server has no password, so AUTH fails, and the error must not echo it.
  auto s = store::open_store("redis://:s3cret@127.0.0.1:" + port_of(*url));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("redis://127.0.0.1:" + port_of(*url)), std::string::npos)
      << s.status().message();

  auto bad = store::open_store("redis://:s3cret@127.0.0.1:notaport");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().find("s3cret"), std::string::npos) << bad.status().message();
}

TEST(RedisStoreTest, APasswordProtectedServerTakesTheUrlsPassword) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-auth");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  ASSERT_EQ(Services::get().client(*redis, {"CONFIG", "SET", "requirepass", "p@ss:w/rd"}).out,
            "OK\n");
  const std::string hostport = redis->url.substr(std::string("redis://").size());
  // Percent-escapes let the password hold '@', ':' and '/'.
  auto s = store::open_store("redis://:p%40ss%3Aw%2Frd@" + hostport);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->describe(), redis->url);
  ASSERT_TRUE((*s)->create_tag(spec_of("auth")).ok());
  auto user = store::open_store("redis://default:p%40ss%3Aw%2Frd@" + hostport);
  ASSERT_TRUE(user.ok()) << user.status().to_string();
  EXPECT_TRUE((*user)->get_tag("auth").ok());

  auto wrong = store::open_store("redis://:nope@" + hostport);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kIoError) << wrong.status().to_string();
  EXPECT_EQ(wrong.status().message().find("nope"), std::string::npos);
  auto none = store::open_store(redis->url);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("NOAUTH"), std::string::npos) << none.status().message();
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisStoreTest, NoServerIsUnavailableWithinSeconds) {
  const auto started = Clock::now();
  auto s = store::open_store("redis://127.0.0.1:" +
                             std::to_string(test_support::unused_loopback_port()));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().to_string();
  EXPECT_LT(ms_since(started), 4000);
}

TEST(RedisStoreTest, AFlushedScriptCacheIsReloaded) {
  Result<Server> redis = Services::get().shared(ServerKind::kRedis);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok());
  const std::string tag = unique_tag("flush");
  ASSERT_TRUE((*s)->create_tag(spec_of(tag, 10)).ok());
  ASSERT_EQ((*s)->allocate(tag, 0).value().first, 1u);
  ASSERT_EQ(Services::get().client(*redis, {"SCRIPT", "FLUSH"}).out, "OK\n");
  Result<Segment> seg = (*s)->allocate(tag, 0);
  ASSERT_TRUE(seg.ok()) << seg.status().to_string();
  EXPECT_EQ(seg->first, 11u);
  EXPECT_TRUE((*s)->set_step(tag, 20).ok());
}

TEST(RedisStoreTest, AHandEditedHashIsAnErrorNotAWrongId) {
  Result<Server> redis = Services::get().shared(ServerKind::kRedis);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  // Database 9, so the broken tag does not break other tests' list_tags().
  auto s = store::open_store(redis->url + "/9");
  ASSERT_TRUE(s.ok());
  const std::string tag = unique_tag("edited");
  ASSERT_TRUE((*s)->create_tag(spec_of(tag, 10)).ok());
  auto& sv = Services::get();
  sv.client(*redis, {"-n", "9", "HSET", "idforge:seg:" + tag, "step", "-5"});
  Result<Segment> seg = (*s)->allocate(tag, 0);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kIoError) << seg.status().to_string();
  EXPECT_EQ((*s)->get_tag(tag).status().code(), StatusCode::kIoError);
  EXPECT_EQ((*s)->list_tags().status().code(), StatusCode::kIoError);
  // An explicit step does not read the bad field.
  EXPECT_EQ((*s)->allocate(tag, 3).value().first, 1u);
  sv.client(*redis, {"-n", "9", "FLUSHDB"});
}

TEST(RedisStoreTest, AStoppedServerFailsFastAndARestartedOneIsUsedAgain) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-restart");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->create_tag(spec_of("restart", 100)).ok());
  ASSERT_EQ((*s)->allocate("restart", 0).value().first, 1u);

  ASSERT_TRUE(Services::get().stop(*redis).ok());
  for (int i = 0; i < 3; ++i) {
    const auto started = Clock::now();
    Result<Segment> down = (*s)->allocate("restart", 0);
    ASSERT_FALSE(down.ok());
    EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().to_string();
    EXPECT_LT(ms_since(started), 4000);
  }
  ASSERT_TRUE(Services::get().restart(*redis).ok());
  // appendfsync always: the allocation survived the restart.
  Result<Segment> back = (*s)->allocate("restart", 0);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->first, 101u);
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisStoreTest, AFrozenServerTimesOutAndTheStoreRecovers) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-frozen");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->create_tag(spec_of("frozen", 10)).ok());
  const pid_t pid = std::stoi(test_support::read_file(redis->dir + "/redis.pid"));
  ASSERT_GT(pid, 1);

  // SIGSTOP: the socket stays open and the kernel keeps acknowledging, but no answer
  // ever comes. Only the command timeout gets the caller out.
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const auto started = Clock::now();
  Result<Segment> seg = (*s)->allocate("frozen", 0);
  const int64_t took = ms_since(started);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable) << seg.status().to_string();
  EXPECT_LT(took, 8000);

  // The timed-out call may or may not have run once the server woke up; either way the
  // next range starts after anything it could have handed out.
  Result<Segment> after = (*s)->allocate("frozen", 0);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(after->first == 1u || after->first == 11u) << after->first;
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

// Every start of a Redis master is a new replication id, even with the same data: the
// guard cannot tell a restart that kept everything (AOF, appendfsync always) from one
// that lost the last writes, so it must see a change either way.
TEST(RedisStoreTest, ARestartIsANewIdentityWithTheRecordKept) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-identity");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<StoreIdentity> before = (*s)->identity();
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  ASSERT_EQ(before->current.rfind("redis:", 0), 0u) << before->current;
  IdentityChange change;
  change.adopt = before->current;
  ASSERT_TRUE((*s)->adopt_identity(change).value());

  ASSERT_TRUE(Services::get().stop(*redis).ok());
  ASSERT_TRUE(Services::get().restart(*redis).ok());
  Result<StoreIdentity> after = (*s)->identity();
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_NE(after->current, before->current);
  EXPECT_EQ(after->recorded, before->current);  // the AOF kept the record
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisStoreTest, DurabilityReportsAppendfsyncEverysecAsUnsafe) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-durability");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto s = store::open_store(redis->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<Durability> safe = (*s)->durability();
  ASSERT_TRUE(safe.ok()) << safe.status().to_string();
  EXPECT_TRUE(safe->safe) << safe->risk;
  EXPECT_EQ(safe->summary, "appendonly=yes appendfsync=always");

  ASSERT_EQ(Services::get().client(*redis, {"CONFIG", "SET", "appendfsync", "everysec"}).out,
            "OK\n");
  Result<Durability> lax = (*s)->durability();
  ASSERT_TRUE(lax.ok()) << lax.status().to_string();
  EXPECT_FALSE(lax->safe);
  EXPECT_EQ(lax->summary, "appendonly=yes appendfsync=everysec");
  EXPECT_NE(lax->risk.find("appendfsync always"), std::string::npos) << lax->risk;

  // CONFIG renamed away (rename-command needs a restart, an ACL does the same live).
  ASSERT_EQ(Services::get().client(*redis, {"ACL", "SETUSER", "default", "-config"}).out, "OK\n");
  Result<Durability> blind = (*s)->durability();
  ASSERT_TRUE(blind.ok()) << blind.status().to_string();
  EXPECT_FALSE(blind->safe);
  EXPECT_NE(blind->risk.find("cannot read"), std::string::npos) << blind->risk;
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisStoreTest, MinReplicasWithoutAReplicaSkipsTheRange) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "redis-replicas");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto plain = store::open_store(redis->url);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  ASSERT_TRUE((*plain)->create_tag(spec_of("replicated", 10)).ok());

  auto s = store::open_store(redis->url + "?min_replicas=1&replica_wait_ms=200");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const auto started = Clock::now();
  Result<Segment> seg = (*s)->allocate("replicated", 0);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable) << seg.status().to_string();
  EXPECT_NE(seg.status().message().find("only 0 of 1 replicas"), std::string::npos)
      << seg.status().message();
  EXPECT_LT(ms_since(started), 2000);
  // The range was taken on the primary and is never used: the next one comes after it.
  EXPECT_EQ((*plain)->allocate("replicated", 0).value().first, 11u);
  EXPECT_NE((*s)->durability()->summary.find("min_replicas=1"), std::string::npos);
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisStoreTest, BadStoreOptionsAreInvalidArgument) {
  for (const std::string query :
       {"?min_replicas=x", "?min_replicas=-1", "?min_replicas=101", "?replica_wait_ms=0",
        "?replica_wait_ms=4001", "?other=1", "?min_replicas=1&min_replicas=2"}) {
    auto s = store::open_store("redis://127.0.0.1:1" + query);
    ASSERT_FALSE(s.ok()) << query;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument)
        << query << ": " << s.status().to_string();
  }
}

}  // namespace
}  // namespace idforge::integration
