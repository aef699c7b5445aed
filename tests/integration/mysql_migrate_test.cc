// `idforge migrate from-leaf|from-tinyid` on a live table: what it reports, that --apply
// does only what it listed, and what that changes for the first idforge server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "integration/mysql_schemas.h"
#include "integration/serve_node.h"
#include "integration/services.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::has;

using test_support::RunResult;

std::string sql(const Server& server, const std::string& statements) {
  RunResult r = Services::get().client(server, {"-N", "-B", "-e", statements});
  EXPECT_EQ(r.exit_code, 0) << statements << ": " << r.err;
  return r.out;
}

RunResult migrate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {idforge_bin(), "migrate"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::run_command(argv, Services::get().make_dir("migrate") + "/run");
}

// The first ID an idforge server hands out for `tag` from the table at `url`.
uint64_t first_served(const std::string& url, const std::string& tag) {
  auto node = ServeNode::start(Services::get().make_dir("migrate-node"), {"--store", url});
  EXPECT_TRUE(node.ok()) << node.status().to_string();
  if (!node.ok()) return 0;
  HttpClient http((*node)->http_port());
  Result<HttpReply> r = http.get("/api/segment/get/" + tag, std::chrono::seconds(10));
  EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().to_string());
  return r.ok() ? std::stoull(r->body) : 0;
}

TEST(MigrateTest, FromLeafReportsEachTagAndApplyOnlyRecordsTheIdentity) {
  Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "migrate-leaf");
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  sql(*db, mysql_schema::kLeafAlloc);
  sql(*db,
      "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('order', 40001, 2000),"
      " ('bad tag', 7, 10)");

  RunResult plan = migrate({"from-leaf", "--store", db->url});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_TRUE(has(plan.out, "innodb_flush_log_at_trx_commit=1")) << plan.out;
  EXPECT_TRUE(has(plan.out, "none recorded")) << plan.out;
  EXPECT_TRUE(has(plan.out, "serve in place, next range [40001, 42001) as Leaf counts"))
      << plan.out;
  EXPECT_TRUE(has(plan.out, "skip: ")) << plan.out;  // 'bad tag' has a space
  EXPECT_TRUE(has(plan.out, "--apply will: record identity 'mariadb:")) << plan.out;
  EXPECT_TRUE(has(plan.out, "?table=leaf_alloc")) << plan.out;
  EXPECT_FALSE(has(plan.out, ":idforge@")) << "the password is shown: " << plan.out;
  // Without --apply nothing was written.
  EXPECT_EQ(sql(*db, "SELECT COUNT(*) FROM idforge_meta"), "0\n");

  RunResult json = migrate({"from-leaf", "--store", db->url, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(has(json.out, "\"highest_in_use\": \"40000\"")) << json.out;

  RunResult applied = migrate({"from-leaf", "--store", db->url, "--apply"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_TRUE(has(applied.out, "done: record identity")) << applied.out;
  EXPECT_EQ(sql(*db, "SELECT k FROM idforge_meta ORDER BY k"),
            "gtid:leaf_alloc\nidentity:leaf_alloc\n");
  EXPECT_EQ(sql(*db, "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'"), "40001\n");
  RunResult again = migrate({"from-leaf", "--store", db->url, "--apply"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(has(again.out, "--apply: nothing to do")) << again.out;

  // With the identity recorded, the first idforge server continues exactly where Leaf
  // would: no failover margin.
  EXPECT_EQ(first_served(db->url + "?table=leaf_alloc", "order"), 40001u);
}

TEST(MigrateTest, WithoutApplyTheFirstServerMovesTheTagsForwardOnce) {
  Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "migrate-noapply");
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  sql(*db, mysql_schema::kLeafAlloc);
  sql(*db, "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('order', 40001, 2000)");
  EXPECT_GT(first_served(db->url + "?table=leaf_alloc", "order"), 42001u);
}

TEST(MigrateTest, FromTinyidAndBadStoresSayWhatIsWrong) {
  Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "migrate-tinyid");
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  RunResult missing = migrate({"from-tinyid", "--store", db->url});
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_TRUE(has(missing.err, "table tiny_id_info does not exist")) << missing.err;
  sql(*db, mysql_schema::kTinyIdInfo);
  sql(*db,
      "INSERT INTO tiny_id_info (biz_type, max_id, step, delta, remainder) VALUES "
      "('pay', 100, 50, 2, 1)");
  RunResult plan = migrate({"from-tinyid", "--store", db->url});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_TRUE(has(plan.out, "next range (100, 150] with Tinyid's delta and remainder")) << plan.out;
  RunResult wrong = migrate({"from-leaf", "--store", "postgres://x@127.0.0.1/db"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_TRUE(has(wrong.err, "--store must be the MySQL or MariaDB database")) << wrong.err;
  RunResult scheme = migrate({"from-leaf", "--store", db->url + "?table=tiny_id_info"});
  EXPECT_EQ(scheme.exit_code, 2);
  EXPECT_TRUE(has(scheme.err, "needs scheme=leaf")) << scheme.err;
}

}  // namespace
}  // namespace idforge::integration
