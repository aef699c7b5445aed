// What only the PostgreSQL store has to get right: its URL, its table, and a server
// that goes away, comes back, or holds a lock too long.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
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
using test_support::Child;
using test_support::RunResult;

std::string port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  return url.substr(colon + 1, url.find('/', colon) - colon - 1);
}

TEST(PostgresStoreTest, ThePasswordNeverAppearsInDescribeOrErrors) {
  Result<std::string> url = Services::get().postgres_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  const std::string port = port_of(*url);
  // The test server trusts 127.0.0.1, so the password is accepted and ignored.
  auto s = store::open_store("postgres://idforge:s3cret@127.0.0.1:" + port + "/idforge");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->describe(), "postgres://idforge@127.0.0.1:" + port + "/idforge");
  auto q = store::open_store("postgresql://idforge@127.0.0.1:" + port +
                             "/idforge?password=s3cret&application_name=x");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ((*q)->describe().find("s3cret"), std::string::npos) << (*q)->describe();

  auto missing = store::open_store("postgres://idforge:s3cret@127.0.0.1:" + port + "/no_such_db");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().find("s3cret"), std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find("no_such_db"), std::string::npos);
}

TEST(PostgresStoreTest, NoServerIsUnavailableWithinSeconds) {
  const auto started = Clock::now();
  auto s = store::open_store("postgres://idforge@127.0.0.1:" +
                             std::to_string(test_support::unused_loopback_port()) + "/idforge");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().to_string();
  EXPECT_LT(ms_since(started), 4000);
  EXPECT_NE(s.status().message().find("postgres://idforge@127.0.0.1:"), std::string::npos);
}

TEST(PostgresStoreTest, AMalformedUrlIsInvalidArgument) {
  auto s = store::open_store("postgres://idforge@127.0.0.1:5432/idforge?no_such_option=1");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().to_string();
}

TEST(PostgresStoreTest, ManyProcessesStartingAtOnceAllFindTheTable) {
  // A fresh database: the table does not exist yet and eight stores race to create it.
  Result<Server> pg = Services::get().start_private(ServerKind::kPostgres, "pg-race");
  ASSERT_TRUE(pg.ok()) << pg.status().to_string();
  std::vector<std::unique_ptr<SegmentStore>> stores(8);
  std::vector<std::string> errors(stores.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < stores.size(); ++i) {
    threads.emplace_back([&, i] {
      auto s = store::open_store(pg->url);
      if (s.ok()) {
        stores[i] = std::move(s).value();
      } else {
        errors[i] = s.status().to_string();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  ASSERT_NE(stores[0], nullptr);
  TagSpec spec;
  spec.name = "race";
  ASSERT_TRUE(stores[0]->create_tag(spec).ok());
  ASSERT_NE(stores[7], nullptr);
  EXPECT_EQ(stores[7]->allocate("race", 0).value().first, 1u);
  // The table has the documented shape.
  RunResult cols = Services::get().client(
      *pg, {"-qAt", "-c",
            "SELECT string_agg(column_name || ':' || data_type, ',' ORDER BY ordinal_position) "
            "FROM information_schema.columns WHERE table_name = 'idforge_segments'"});
  EXPECT_EQ(cols.out,
            "tag:text,max_id:bigint,step:bigint,description:text,serial_template:text,"
            "updated_at:bigint\n");
  EXPECT_TRUE(Services::get().stop(*pg).ok());
}

TEST(PostgresStoreTest, AStoppedServerFailsFastAndARestartedOneIsUsedAgain) {
  Result<Server> pg = Services::get().start_private(ServerKind::kPostgres, "pg-restart");
  ASSERT_TRUE(pg.ok()) << pg.status().to_string();
  auto s = store::open_store(pg->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  SegmentStore& store = **s;
  TagSpec spec;
  spec.name = "restart";
  spec.step = 100;
  ASSERT_TRUE(store.create_tag(spec).ok());
  ASSERT_EQ(store.allocate("restart", 0).value().first, 1u);

  ASSERT_TRUE(Services::get().stop(*pg).ok());
  for (int i = 0; i < 3; ++i) {
    const auto started = Clock::now();
    Result<Segment> down = store.allocate("restart", 0);
    ASSERT_FALSE(down.ok());
    EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().to_string();
    EXPECT_LT(ms_since(started), 4000);
    EXPECT_NE(down.status().message().find(pg->url), std::string::npos) << down.status().message();
  }

  ASSERT_TRUE(Services::get().restart(*pg).ok());
  // The committed max_id survived; nothing is handed out twice.
  Result<Segment> back = store.allocate("restart", 0);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->first, 101u);
  EXPECT_TRUE(Services::get().stop(*pg).ok());
}

TEST(PostgresStoreTest, ALockHeldTooLongEndsInStatementTimeoutNotAHang) {
  Result<Server> pg = Services::get().shared(ServerKind::kPostgres);
  ASSERT_TRUE(pg.ok()) << pg.status().to_string();
  auto s = store::open_store(pg->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("locked");
  TagSpec spec;
  spec.name = tag;
  ASSERT_TRUE((*s)->create_tag(spec).ok());

  // Another session locks the row and sits on it for 6 s.
  Child holder = Services::get().spawn_client(
      *pg, {"-v", "ON_ERROR_STOP=1", "-c",
            "BEGIN; SELECT max_id FROM idforge_segments WHERE tag = '" + tag +
                "' FOR UPDATE; SELECT pg_sleep(6); COMMIT;"});
  ASSERT_GT(holder.pid, 0);
  // Wait until the lock is really held.
  bool locked = false;
  for (int i = 0; i < 100 && !locked; ++i) {
    RunResult r = Services::get().client(
        *pg, {"-qAt", "-c",
              "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(6)%' "
              "AND state = 'active' AND pid <> pg_backend_pid()"});
    locked = r.out == "1\n";
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(locked);

  const auto started = Clock::now();
  Result<Segment> seg = (*s)->allocate(tag, 0);
  const int64_t took = ms_since(started);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable) << seg.status().to_string();
  EXPECT_NE(seg.status().message().find("statement timeout"), std::string::npos)
      << seg.status().message();
  EXPECT_GE(took, 3000);
  EXPECT_LT(took, 7000);
  EXPECT_EQ(test_support::reap(holder.pid).code, 0) << test_support::read_file(holder.err_path);
  // Nothing moved, and the same store works once the lock is gone.
  EXPECT_EQ((*s)->allocate(tag, 0).value().first, 1u);
}

TEST(PostgresStoreTest, IdentityIsTheSystemIdentifierAndTimelineOne) {
  Result<std::string> url = Services::get().postgres_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<StoreIdentity> id = (*s)->identity();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  // pg:<system identifier, decimal>/tl:<timeline>; a fresh server is on timeline 1.
  const std::string& c = id->current;
  ASSERT_EQ(c.rfind("pg:", 0), 0u) << c;
  const size_t slash = c.find("/tl:");
  ASSERT_NE(slash, std::string::npos) << c;
  EXPECT_GT(slash, 3u);
  EXPECT_EQ(c.find_first_not_of("0123456789", 3), slash) << c;
  EXPECT_EQ(c.substr(slash), "/tl:1");
  Result<Server> pg = Services::get().shared(ServerKind::kPostgres);
  ASSERT_TRUE(pg.ok());
  RunResult sysid = Services::get().client(
      *pg, {"-qAt", "-c", "SELECT system_identifier FROM pg_control_system()"});
  EXPECT_EQ("pg:" + sysid.out.substr(0, sysid.out.find('\n')) + "/tl:1", c);
}

TEST(PostgresStoreTest, DurabilityIsSafeAndNamesTheSettings) {
  Result<std::string> url = Services::get().postgres_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<Durability> d = (*s)->durability();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_TRUE(d->safe) << d->risk;
  EXPECT_EQ(d->summary, "fsync=on synchronous_commit=on synchronous_standby_names=''");

  // A role that turned synchronous_commit off is reported (it applies to new sessions).
  auto lax = store::open_store(*url + "?options=-csynchronous_commit%3Doff");
  ASSERT_TRUE(lax.ok()) << lax.status().to_string();
  Result<Durability> off = (*lax)->durability();
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->safe);
  EXPECT_NE(off->risk.find("synchronous_commit = on"), std::string::npos) << off->risk;
}

TEST(PostgresStoreTest, MinReplicasWithoutAStandbyIsUnavailableWithTheReason) {
  Result<std::string> url = Services::get().postgres_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto plain = store::open_store(*url);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  const std::string tag = unique_tag("replicated");
  TagSpec spec;
  spec.name = tag;
  spec.step = 10;
  ASSERT_TRUE((*plain)->create_tag(spec).ok());

  // idforge takes its own option off the URL; libpq's options stay.
  auto s = store::open_store(*url + "?application_name=x&min_replicas=1");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<Segment> seg = (*s)->allocate(tag, 0);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable) << seg.status().to_string();
  EXPECT_NE(seg.status().message().find("only 0 synchronous standbys"), std::string::npos)
      << seg.status().message();
  // Refused before the allocation: nothing was taken.
  EXPECT_EQ((*plain)->allocate(tag, 0).value().first, 1u);
  EXPECT_NE((*s)->durability()->summary.find("min_replicas=1"), std::string::npos);
  // min_replicas=0 is the default and allocates as usual.
  auto zero = store::open_store(*url + "?min_replicas=0");
  ASSERT_TRUE(zero.ok()) << zero.status().to_string();
  EXPECT_EQ((*zero)->allocate(tag, 0).value().first, 11u);

  for (const std::string bad : {"?min_replicas=", "?min_replicas=two", "?min_replicas=1000"}) {
    auto b = store::open_store(*url + bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << b.status().to_string();
  }
}

}  // namespace
}  // namespace idforge::integration
