// What only the MySQL/MariaDB store has to get right: its URL, the tables it takes over
// in place (Leaf's, Tinyid's, SEQUENCE) with their range conventions, clear errors for a
// table it cannot use, durability, and a server that goes away, freezes or holds a lock.
// The contract every store keeps is in store_contract_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_store.h"
#include "integration/mysql_schemas.h"
#include "integration/services.h"
#include "store/store_factory.h"
#include "support/ports.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::has;
using test::ms_since;
using test::with_query;

using Clock = std::chrono::steady_clock;
using test_support::Child;
using test_support::RunResult;

// SQL through the `mariadb` client as user idforge; its output, or a test failure.
std::string sql(const Server& server, const std::string& statements) {
  RunResult r = Services::get().client(server, {"-N", "-B", "-e", statements});
  EXPECT_EQ(r.exit_code, 0) << statements << ": " << r.err;
  return r.out;
}

Server shared_mariadb() {
  Result<Server> s = Services::get().shared(ServerKind::kMariadb);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? *s : Server{};
}

TagSpec spec(const std::string& name, uint64_t start = 1, uint64_t step = 1000) {
  TagSpec t;
  t.name = name;
  t.start = start;
  t.step = step;
  return t;
}

TEST(MysqlStoreTest, OwnTableIsCreatedAndRangesCountUpToMaxId) {
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("own");
  ASSERT_TRUE((*s)->create_tag(spec(tag, 100, 10)).ok());
  Segment a = (*s)->allocate(tag, 0).value();
  EXPECT_EQ(a.first, 100u);
  EXPECT_EQ(a.count, 10u);
  EXPECT_FALSE(a.identity.empty());
  const Server server = shared_mariadb();
  EXPECT_EQ(sql(server,
                "SELECT max_id, step, ENGINE FROM idforge_segments JOIN "
                "information_schema.TABLES ON TABLE_SCHEMA = DATABASE() AND "
                "TABLE_NAME = 'idforge_segments' WHERE tag = '" +
                    tag + "'"),
            "109\t10\tInnoDB\n");
}

TEST(MysqlStoreTest, ThePasswordNeverAppearsInDescribeOrErrors) {
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_FALSE(has((*s)->describe(), ":idforge@")) << (*s)->describe();
  EXPECT_TRUE(has((*s)->describe(), "mysql://idforge@127.0.0.1:")) << (*s)->describe();
  std::string wrong = *url;
  wrong.replace(wrong.find(":idforge@"), 9, ":s3cr%40t@");
  auto denied = store::open_store(wrong);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kIoError) << denied.status().to_string();
  EXPECT_FALSE(has(denied.status().message(), "s3cr")) << denied.status().message();
  EXPECT_TRUE(has(denied.status().message(), "Access denied")) << denied.status().message();
}

TEST(MysqlStoreTest, NoServerIsUnavailableWithinSeconds) {
  const auto started = Clock::now();
  auto s = store::open_store(
      "mysql://idforge:pw@127.0.0.1:" + std::to_string(test_support::unused_loopback_port()) +
      "/idforge?connect_timeout=2");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().to_string();
  EXPECT_LT(ms_since(started), 4000);
}

TEST(MysqlStoreTest, BadUrlsSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"mysql://127.0.0.1/db", "no user"},
      {"mysql://u@127.0.0.1", "no database"},
      {"mysql://u@127.0.0.1:99999/db", "port"},
      {"mysql://u@127.0.0.1/db?tabel=x", "unknown option 'tabel'"},
      {"mysql://u@127.0.0.1/db?table=a;drop", "option table"},
      {"mysql://u@127.0.0.1/db?read_timeout=0", "0 would wait forever"},
      {"mysql://u@127.0.0.1/db?lock_wait_timeout=9&read_timeout=5", "must be below read_timeout"},
      {"mysql://u@127.0.0.1/db?tls=verify", "needs tls_ca"},
      {"mysql://u:secret@127.0.0.1/db?scheme=hbase", "scheme must be"},
  };
  for (const auto& [url, why] : cases) {
    auto s = store::open_store(url);
    ASSERT_FALSE(s.ok()) << url;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_TRUE(has(s.status().message(), why)) << url << ": " << s.status().message();
    EXPECT_FALSE(has(s.status().message(), "secret")) << s.status().message();
  }
}

TEST(MysqlStoreTest, LeafsTableHandsOutEveryIdBelowMaxIdAsLeafDoes) {
  const Server server = shared_mariadb();
  sql(server, mysql_schema::kLeafAlloc);
  const std::string tag = unique_tag("leaf");
  sql(server, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('" + tag +
                  "', 1, 2000, 'from Leaf')");
  auto s = store::open_store(with_query(server.url, "table=leaf_alloc"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE(has((*s)->describe(), "(leaf)")) << (*s)->describe();
  // Leaf's convention: after the update, [max_id - step, max_id).
  Segment a = (*s)->allocate(tag, 0).value();
  EXPECT_EQ(a.first, 1u);
  EXPECT_EQ(a.count, 2000u);
  EXPECT_EQ(sql(server, "SELECT max_id FROM leaf_alloc WHERE biz_tag = '" + tag + "'"), "2001\n");
  // A Leaf server takes the next range; idforge's next one starts where Leaf's ends.
  EXPECT_EQ(sql(server, mysql_schema::leaf_allocation(tag)), "4001\t2000\n");
  Segment b = (*s)->allocate(tag, 500).value();
  EXPECT_EQ(b.first, 4001u);
  EXPECT_EQ(b.count, 500u);
  TagInfo info = (*s)->get_tag(tag).value();
  EXPECT_EQ(info.max_id, 4500u);  // the highest number handed out
  EXPECT_EQ(info.step, 2000u);
  EXPECT_EQ(info.description, "from Leaf");
  const std::string made = unique_tag("leafnew");
  ASSERT_TRUE((*s)->create_tag(spec(made, 50, 7)).ok());
  EXPECT_EQ(sql(server, "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = '" + made + "'"),
            "50\t7\n");
  EXPECT_EQ((*s)->allocate(made, 0).value().first, 50u);
  TagSpec with_serial = spec(unique_tag("x"));
  with_serial.serial_template = "A{seq}";
  Status serial = (*s)->create_tag(with_serial);
  EXPECT_EQ(serial.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*s)->set_step(made, 9).ok());
  EXPECT_EQ(sql(server, "SELECT step FROM leaf_alloc WHERE biz_tag = '" + made + "'"), "9\n");
}

TEST(MysqlStoreTest, TinyidsTableHonoursDeltaRemainderAndTheVersion) {
  const Server server = shared_mariadb();
  sql(server, mysql_schema::kTinyIdInfo);
  const std::string tag = unique_tag("tiny");
  sql(server,
      "INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) "
      "VALUES ('" +
          tag + "', 0, 0, 10, 3, 2, 7)");
  auto s = store::open_store(with_query(server.url, "table=tiny_id_info"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  // (0, 10] with x % 3 == 2: 2, 5, 8.
  Segment a = (*s)->allocate(tag, 0).value();
  EXPECT_EQ(a.first, 2u);
  EXPECT_EQ(a.stride, 3u);
  EXPECT_EQ(a.count, 3u);
  EXPECT_EQ(sql(server, "SELECT max_id, version FROM tiny_id_info WHERE biz_type = '" + tag + "'"),
            "10\t8\n");
  // A Tinyid server's optimistic update moves the row; idforge continues above it.
  EXPECT_EQ(sql(server, mysql_schema::tinyid_attempt(tag)), "1\t10\t20\t3\t2\n");
  Segment b = (*s)->allocate(tag, 0).value();
  EXPECT_EQ(b.first, 23u);  // (20, 30]: 23, 26, 29
  EXPECT_EQ(b.count, 3u);
  EXPECT_EQ((*s)->get_tag(tag).value().max_id, 30u);
  sql(server, "UPDATE tiny_id_info SET remainder = 5 WHERE biz_type = '" + tag + "'");
  Result<Segment> bad = (*s)->allocate(tag, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(has(bad.status().message(), "remainder")) << bad.status().message();
}

TEST(MysqlStoreTest, SequenceTableGivesStepNumbersFromNextId) {
  const Server server = shared_mariadb();
  sql(server, mysql_schema::kSequence);
  const std::string tag = unique_tag("seq");
  sql(server, "INSERT INTO SEQUENCE (table_name, next_id) VALUES ('" + tag + "', 1000)");
  auto s = store::open_store(with_query(server.url, "table=SEQUENCE&step=50"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Segment a = (*s)->allocate(tag, 0).value();
  EXPECT_EQ(a.first, 1000u);
  EXPECT_EQ(a.count, 50u);
  EXPECT_EQ(sql(server, "SELECT next_id FROM SEQUENCE WHERE table_name = '" + tag + "'"), "1050\n");
  EXPECT_EQ((*s)->get_tag(tag).value().step, 50u);
  EXPECT_EQ((*s)->set_step(tag, 10).code(), StatusCode::kInvalidArgument);
}

TEST(MysqlStoreTest, AMissingTableOrColumnIsAClearError) {
  const Server server = shared_mariadb();
  auto missing = store::open_store(with_query(server.url, "table=leaf_alloc_old&scheme=leaf"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(has(missing.status().message(), "table leaf_alloc_old does not exist"))
      << missing.status().message();
  const std::string table = unique_tag("badleaf");
  sql(server, "CREATE TABLE " + table +
                  " (biz_tag varchar(128) PRIMARY KEY, max_id bigint, stride int, "
                  "description varchar(256), update_time timestamp)");
  auto wrong = store::open_store(with_query(server.url, "table=" + table + "&scheme=leaf"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(has(wrong.status().message(), "'step'")) << wrong.status().message();
}

TEST(MysqlStoreTest, AReadOnlyUserIsRefusedWithTheServersReason) {
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto rw = store::open_store(*url);  // creates the tables
  ASSERT_TRUE(rw.ok()) << rw.status().to_string();
  const std::string tag = unique_tag("ro");
  ASSERT_TRUE((*rw)->create_tag(spec(tag)).ok());
  std::string ro_url = *url;
  ro_url.replace(ro_url.find("idforge:idforge@"), 16, "idforge_ro:idforge_ro@");
  auto ro = store::open_store(ro_url);
  ASSERT_TRUE(ro.ok()) << ro.status().to_string();
  EXPECT_EQ((*ro)->get_tag(tag).value().name, tag);
  Result<Segment> got = (*ro)->allocate(tag, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kIoError) << got.status().to_string();
  EXPECT_TRUE(has(got.status().message(), "UPDATE command denied")) << got.status().message();
}

TEST(MysqlStoreTest, ALockHeldTooLongIsUnavailableNotAHang) {
  const Server server = shared_mariadb();
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok());
  auto s = store::open_store(with_query(*url, "lock_wait_timeout=1&read_timeout=4"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("lock");
  ASSERT_TRUE((*s)->create_tag(spec(tag)).ok());
  Child holder = Services::get().spawn_client(
      server, {"-e", "START TRANSACTION; SELECT max_id FROM idforge_segments WHERE tag = '" + tag +
                         "' FOR UPDATE; DO SLEEP(6); COMMIT;"});
  ASSERT_GT(holder.pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const auto started = Clock::now();
  Result<Segment> got = (*s)->allocate(tag, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().to_string();
  EXPECT_TRUE(has(got.status().message(), "Lock wait timeout")) << got.status().message();
  EXPECT_LT(ms_since(started), 3500);
  test_support::reap(holder.pid);
  EXPECT_TRUE((*s)->allocate(tag, 0).ok());
}

TEST(MysqlStoreTest, AStoppedServerFailsFastAndARestartedOneIsUsedAgain) {
  Result<Server> server = Services::get().start_private(ServerKind::kMariadb, "my-restart");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto s = store::open_store(server->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->create_tag(spec("r", 1, 10)).ok());
  const Segment before = (*s)->allocate("r", 0).value();
  ASSERT_TRUE(Services::get().stop(*server).ok());
  const auto started = Clock::now();
  Result<Segment> down = (*s)->allocate("r", 0);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().to_string();
  EXPECT_LT(ms_since(started), 4000);
  ASSERT_TRUE(Services::get().restart(*server).ok());
  Result<Segment> after = (*s)->allocate("r", 0);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_GT(after->first, before.last());
}

TEST(MysqlStoreTest, AFrozenServerTimesOutAndTheStoreRecovers) {
  Result<Server> server = Services::get().start_private(ServerKind::kMariadb, "my-frozen");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto s = store::open_store(with_query(server->url, "read_timeout=2&lock_wait_timeout=1"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->create_tag(spec("f", 1, 10)).ok());
  const Segment before = (*s)->allocate("f", 0).value();
  ASSERT_TRUE(Services::get().pause(*server).ok());
  const auto started = Clock::now();
  Result<Segment> frozen = (*s)->allocate("f", 0);
  const int64_t took = ms_since(started);
  ASSERT_TRUE(Services::get().resume(*server).ok());
  ASSERT_FALSE(frozen.ok());
  EXPECT_EQ(frozen.status().code(), StatusCode::kUnavailable) << frozen.status().to_string();
  EXPECT_LT(took, 9000);
  Result<Segment> after = (*s)->allocate("f", 0);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_GT(after->first, before.last());
}

TEST(MysqlStoreTest, DurabilityNamesTheSettingsAndRefusesLossyOnes) {
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok());
  auto safe = store::open_store(*url);
  ASSERT_TRUE(safe.ok()) << safe.status().to_string();
  Durability d = (*safe)->durability().value();
  EXPECT_TRUE(d.safe) << d.summary << " " << d.risk;
  EXPECT_TRUE(has(d.summary, "innodb_flush_log_at_trx_commit=1 sync_binlog=1")) << d.summary;
  EXPECT_TRUE(has(d.summary, "engine=InnoDB")) << d.summary;
  EXPECT_TRUE(has(d.summary, "gtid=")) << d.summary;

  Result<Server> lossy =
      Services::get().start_private(ServerKind::kMariadb, "my-lossy", {"--unsafe-durability"});
  ASSERT_TRUE(lossy.ok()) << lossy.status().to_string();
  auto s = store::open_store(lossy->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Durability u = (*s)->durability().value();
  EXPECT_FALSE(u.safe) << u.summary;
  EXPECT_TRUE(has(u.risk, "innodb_flush_log_at_trx_commit=2")) << u.risk;

  // A process that issues IDs refuses such a store unless told otherwise.
  ASSERT_TRUE((*s)->create_tag(spec("lossy")).ok());
  const std::string dir = Services::get().make_dir("my-lossy-next");
  RunResult refused = test_support::run_command(
      {idforge_bin(), "next", "--tag", "lossy", "--store", lossy->url, "--data-dir", dir},
      dir + "/a");
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_TRUE(has(refused.err, "innodb_flush_log_at_trx_commit=2")) << refused.err;
  RunResult allowed =
      test_support::run_command({idforge_bin(), "next", "--tag", "lossy", "--store", lossy->url,
                                 "--data-dir", dir, "--allow-unsafe-store"},
                                dir + "/b");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

TEST(MysqlStoreTest, IdentityIsTheServerAndARecordSurvivesARestart) {
  Result<Server> server = Services::get().start_private(ServerKind::kMariadb, "my-identity");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto s = store::open_store(server->url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  StoreIdentity id = (*s)->identity().value();
  EXPECT_TRUE(id.current.starts_with("mariadb:")) << id.current;
  EXPECT_EQ(id.recorded, "");
  IdentityChange record;
  record.adopt = id.current;
  ASSERT_TRUE((*s)->adopt_identity(record).value());
  ASSERT_TRUE(Services::get().kill(*server).ok());
  ASSERT_TRUE(Services::get().restart(*server).ok());
  // Durable settings: a crash loses nothing, so it is the same history.
  StoreIdentity again = (*s)->identity().value();
  EXPECT_EQ(again.current, id.current);
  EXPECT_EQ(again.recorded, id.current);
}

}  // namespace
}  // namespace idforge::integration
