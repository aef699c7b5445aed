// idforge servers beside Leaf and Tinyid servers on the same MariaDB rows, as during a
// migration server by server (docs/migrating.md): the other system's servers are played
// by its exact statements, run through the `mariadb` client, and every ID anyone was
// given is checked against every other. Also: idforge killed mid-transaction.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "integration/mysql_schemas.h"
#include "integration/serve_node.h"
#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

using test_support::Child;
using test_support::read_file;

// A half-open range of IDs another system handed out: [first, end).
struct Range {
  uint64_t first;
  uint64_t end;
};

std::vector<uint64_t> numbers_of(const std::string& text) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec == std::errc() && p == line.data() + line.size() && !line.empty()) out.push_back(v);
  }
  return out;
}

std::vector<std::vector<uint64_t>> rows_of(const std::string& text) {
  std::vector<std::vector<uint64_t>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<uint64_t> row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, '\t')) row.push_back(std::stoull(cell));
    rows.push_back(std::move(row));
  }
  return rows;
}

void run_sql(const Server& server, const std::string& statements) {
  auto r = Services::get().client(server, {"-N", "-B", "-e", statements});
  ASSERT_EQ(r.exit_code, 0) << statements << ": " << r.err;
}

// `rounds` copies of `one` in a single client session, in the background.
Child spawn_rounds(const Server& server, const std::string& one, int rounds) {
  std::string all;
  for (int i = 0; i < rounds; ++i) all += one;
  return Services::get().spawn_client(server, {"-N", "-B", "-e", all});
}

// Fetches `count` IDs at a time from each node until `stop`, into `out` (one vector per
// node, so threads do not share one).
void pull(ServeNode& node, const std::string& tag, std::atomic<bool>& stop,
          std::vector<uint64_t>* out, std::string* errors) {
  HttpClient http(node.http_port());
  while (!stop.load()) {
    Result<HttpReply> r =
        http.get("/v1/segment/" + tag + "?count=37&format=text", std::chrono::seconds(10));
    if (!r.ok() || r->status != 200) {
      *errors += (r.ok() ? r->body : r.status().to_string()) + "\n";
      continue;
    }
    for (uint64_t id : numbers_of(r->body)) out->push_back(id);
  }
}

// Every ID in `ids` once, and none inside another system's `ranges`.
void expect_disjoint(std::vector<uint64_t> ids, std::vector<Range> ranges) {
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "idforge repeated an ID";
  std::sort(ranges.begin(), ranges.end(), [](Range a, Range b) { return a.first < b.first; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i - 1].end, ranges[i].first) << "the other system's own ranges overlap";
  }
  size_t hits = 0;
  for (const Range& r : ranges) {
    auto it = std::lower_bound(ids.begin(), ids.end(), r.first);
    if (it != ids.end() && *it < r.end) {
      ++hits;
      ADD_FAILURE() << "idforge issued " << *it << ", inside [" << r.first << ", " << r.end
                    << ") handed out by the other system";
    }
  }
  EXPECT_EQ(hits, 0u);
}

TEST(MysqlSideBySideTest, LeafAndTwoIdforgeServersOnOneRowNeverShareAnId) {
  Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "leaf-side");
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  run_sql(*db, mysql_schema::kLeafAlloc);
  run_sql(*db,
          "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES "
          "('order', 1, 100, 'Leaf''s tag')");
  const std::string url = db->url + "?table=leaf_alloc";
  std::vector<std::unique_ptr<ServeNode>> nodes;
  for (int i = 0; i < 2; ++i) {
    auto node = ServeNode::start(Services::get().make_dir("leaf-node"), {"--store", url});
    ASSERT_TRUE(node.ok()) << node.status().to_string();
    nodes.push_back(std::move(node).value());
  }
  // Leaf's servers: one with the table's step, one with a custom step of 37.
  Child leaf = spawn_rounds(*db, mysql_schema::leaf_allocation("order"), 300);
  Child custom = spawn_rounds(*db, mysql_schema::leaf_allocation("order", 37), 300);
  std::atomic<bool> stop{false};
  std::vector<std::vector<uint64_t>> got(nodes.size());
  std::vector<std::string> errors(nodes.size());
  std::vector<std::thread> pullers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    pullers.emplace_back(pull, std::ref(*nodes[i]), "order", std::ref(stop), &got[i], &errors[i]);
  }
  EXPECT_EQ(test_support::reap(leaf.pid).code, 0) << read_file(leaf.err_path);
  EXPECT_EQ(test_support::reap(custom.pid).code, 0) << read_file(custom.err_path);
  stop = true;
  for (std::thread& t : pullers) t.join();

  std::vector<Range> ranges;
  for (const Child* c : {&leaf, &custom}) {
    for (const auto& row : rows_of(read_file(c->out_path))) {
      ASSERT_EQ(row.size(), 2u);
      ranges.push_back({row[0] - row[1], row[0]});  // Leaf: [max_id - step, max_id)
    }
  }
  EXPECT_EQ(ranges.size(), 600u);
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_GT(got[i].size(), 1000u) << "node " << i << ": " << errors[i];
    ids.insert(ids.end(), got[i].begin(), got[i].end());
  }
  expect_disjoint(ids, ranges);
}

TEST(MysqlSideBySideTest, TinyidOnTwoDatabasesAndIdforgeServersNeverShareAnId) {
  // Tinyid's multi-database setup: each database holds the tag with delta 2 and its own
  // remainder, so database A hands out even numbers and B odd ones.
  std::vector<Server> dbs;
  for (int i = 0; i < 2; ++i) {
    Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "tinyid-side");
    ASSERT_TRUE(db.ok()) << db.status().to_string();
    run_sql(*db, mysql_schema::kTinyIdInfo);
    run_sql(*db,
            "INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES "
            "('pay', 0, 0, 100, 2, " +
                std::to_string(i) + ")");
    dbs.push_back(*db);
  }
  std::vector<std::unique_ptr<ServeNode>> nodes;
  for (int i = 0; i < 2; ++i) {
    auto node = ServeNode::start(Services::get().make_dir("tinyid-node"),
                                 {"--store", dbs[0].url + "?table=tiny_id_info", "--store",
                                  dbs[1].url + "?table=tiny_id_info"});
    ASSERT_TRUE(node.ok()) << node.status().to_string();
    nodes.push_back(std::move(node).value());
  }
  std::vector<Child> tinyid;
  for (const Server& db : dbs)
    tinyid.push_back(spawn_rounds(db, mysql_schema::tinyid_attempt("pay"), 300));
  std::atomic<bool> stop{false};
  std::vector<std::vector<uint64_t>> got(nodes.size());
  std::vector<std::string> errors(nodes.size());
  std::vector<std::thread> pullers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    pullers.emplace_back(pull, std::ref(*nodes[i]), "pay", std::ref(stop), &got[i], &errors[i]);
  }
  for (const Child& c : tinyid) {
    EXPECT_EQ(test_support::reap(c.pid).code, 0) << read_file(c.err_path);
  }
  stop = true;
  for (std::thread& t : pullers) t.join();

  // Tinyid's IDs: (old, new] with x % delta == remainder, for each update that won.
  std::vector<uint64_t> theirs;
  size_t won = 0;
  for (const Child& c : tinyid) {
    for (const auto& row : rows_of(read_file(c.out_path))) {
      ASSERT_EQ(row.size(), 5u);
      if (row[0] != 1) continue;
      ++won;
      for (uint64_t x = row[1] + 1; x <= row[2]; ++x) {
        if (x % row[3] == row[4]) theirs.push_back(x);
      }
    }
  }
  EXPECT_GT(won, 500u);  // most attempts win; a lost race is retried by a real server
  std::vector<uint64_t> ours;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_GT(got[i].size(), 1000u) << "node " << i << ": " << errors[i];
    ours.insert(ours.end(), got[i].begin(), got[i].end());
  }
  // Both databases served idforge: even and odd IDs.
  EXPECT_TRUE(std::any_of(ours.begin(), ours.end(), [](uint64_t x) { return x % 2 == 0; }));
  EXPECT_TRUE(std::any_of(ours.begin(), ours.end(), [](uint64_t x) { return x % 2 == 1; }));
  std::vector<uint64_t> all = ours;
  all.insert(all.end(), theirs.begin(), theirs.end());
  std::sort(all.begin(), all.end());
  const auto dup = std::adjacent_find(all.begin(), all.end());
  EXPECT_EQ(dup, all.end()) << "ID " << (dup == all.end() ? 0 : *dup) << " issued twice";
}

TEST(MysqlSideBySideTest, IdforgeKilledMidTransactionRepeatsNoId) {
  Result<std::string> url = Services::get().mariadb_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  const std::string tag = unique_tag("kill");
  // A step of 10: a process spends most of its time in allocation transactions, so a
  // SIGKILL lands inside one more often than not.
  const std::string dir = Services::get().make_dir("mysql-kill");
  const test_support::RunResult made = test_support::run_command(
      {idforge_bin(), "tag", "create", tag, "--step", "10", "--store", *url}, dir + "/create", {});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::vector<uint64_t> all;
  for (int round = 0; round < 6; ++round) {
    const std::string base = dir + "/next" + std::to_string(round);
    Child c = test_support::spawn(
        {idforge_bin(), "next", "--tag", tag, "--count", "10000000", "--store", *url},
        {.out_path = base + ".out", .err_path = base + ".err"});
    ASSERT_GT(c.pid, 0);
    // Killed a while after its first ID, not at a fixed time from its start: a start slowed
    // by tests beside it (ctest -j) must not leave the round with no ID to check.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (read_file(c.out_path).find('\n') == std::string::npos &&
           !test_support::try_reap(c.pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 100 * round));
    ::kill(c.pid, SIGKILL);
    test_support::reap(c.pid);
    std::string out = read_file(c.out_path);
    out.erase(out.find_last_of('\n') + 1);  // a line cut by the kill is not an ID given out
    const std::vector<uint64_t> ids = numbers_of(out);
    EXPECT_FALSE(ids.empty()) << read_file(c.err_path);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate ID";
}

}  // namespace
}  // namespace idforge::integration
