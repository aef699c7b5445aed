// Segment stores that go back — a PostgreSQL replica promoted after the primary died
// with writes it had not sent, a Redis restarted without its data, an SQLite file
// restored from an older copy — with two nodes pulling IDs throughout: no ID is ever
// issued twice, and both nodes issue again without an operator (store_guard.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_buffer.h"
#include "integration/services.h"
#include "store/served_marks.h"
#include "store/store_factory.h"
#include "store/store_set.h"

namespace idforge::integration {
namespace segment_failover_test {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

// A margin small enough to see in the numbers, large enough for what these tests lose.
constexpr uint64_t kMargin = 1'000'000;

// One node as the server builds it: its data directory (the served marks), its stores
// with their guards, and one tag's double buffer over them.
class Node {
 public:
  Node(std::string name, std::string data_dir)
      : name_(std::move(name)), dir_(std::move(data_dir)) {}

  Status open(const std::vector<std::string>& urls, const std::string& tag) {
    Result<std::unique_ptr<store::ServedMarks>> marks =
        store::ServedMarks::open(store::served_marks_path(dir_));
    if (!marks.ok()) return marks.status();
    marks_ = std::move(marks).value();
    store::StoreSafety safety;
    safety.marks = marks_.get();
    safety.margin = kMargin;
    safety.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      log_.push_back(line);
      std::printf("[ %s ] %s\n", name_.c_str(), line.c_str());
    };
    Result<std::vector<store::OpenedStore>> stores = store::open_stores(urls, dir_, safety);
    if (!stores.ok()) return stores.status();
    stores_ = std::move(stores).value();
    Result<store::TagSource> source = store::tag_source(stores_, tag);
    if (!source.ok()) return source.status();
    source_ = std::move(source).value();
    SegmentBufferOptions options;
    options.tag = tag;
    options.min_step = source_.step;
    options.max_step = source_.step * 8;
    options.wait_ms = 2000;
    Result<std::unique_ptr<SegmentBuffer>> buffer = SegmentBuffer::create(source_.source, options);
    if (!buffer.ok()) return buffer.status();
    buffer_ = std::move(buffer).value();
    return Status::Ok();
  }

  // Pulls 100 IDs about every millisecond until stop(), keeping every ID and error.
  void start_pulling() {
    puller_ = std::thread([this] {
      std::vector<uint64_t> batch(100);
      while (!stopping_.load()) {
        Status got = buffer_->next_batch(batch);
        std::lock_guard lock(mu_);
        if (got.ok()) {
          ids_.insert(ids_.end(), batch.begin(), batch.end());
          last_ok_ = Steady::now();
        } else {
          ++errors_;
          last_error_ = got.to_string();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  void stop_pulling() {
    stopping_.store(true);
    if (puller_.joinable()) puller_.join();
  }
  ~Node() { stop_pulling(); }

  size_t issued() {
    std::lock_guard lock(mu_);
    return ids_.size();
  }
  Steady::time_point last_ok() {
    std::lock_guard lock(mu_);
    return last_ok_;
  }
  std::vector<uint64_t> ids() {
    std::lock_guard lock(mu_);
    return ids_;
  }
  uint64_t errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }
  std::string last_error() {
    std::lock_guard lock(mu_);
    return last_error_;
  }
  store::GuardStatus guard() const { return stores_.front().guard->status(); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string dir_;
  std::unique_ptr<store::ServedMarks> marks_;
  std::vector<store::OpenedStore> stores_;
  store::TagSource source_;
  std::unique_ptr<SegmentBuffer> buffer_;
  std::thread puller_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<uint64_t> ids_;
  std::vector<std::string> log_;
  uint64_t errors_ = 0;
  std::string last_error_;
  Steady::time_point last_ok_{};
};

// What `idforge tag create` does.
Status create_tag(const std::string& url, const std::string& tag, uint64_t step,
                  uint64_t start = 1) {
  Result<std::unique_ptr<SegmentStore>> s = store::open_store(url);
  if (!s.ok()) return s.status();
  IDFORGE_RETURN_IF_ERROR(store::record_new_store_identity(**s));
  TagSpec spec;
  spec.name = tag;
  spec.step = step;
  spec.start = start;
  return (*s)->create_tag(spec);
}

// Waits until every node has issued IDs after `since`; false after `limit`.
bool all_issue_again(std::vector<Node*> nodes, Steady::time_point since, Steady::duration limit) {
  const auto deadline = Steady::now() + limit;
  while (Steady::now() < deadline) {
    bool all = true;
    for (Node* n : nodes) all = all && n->last_ok() > since;
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// How many IDs of a sorted list equal the one before them.
size_t repeats_in(const std::vector<uint64_t>& sorted) {
  size_t repeats = 0;
  for (size_t i = 1; i < sorted.size(); ++i) repeats += sorted[i] == sorted[i - 1];
  return repeats;
}

// Every ID of every node, checked for repeats; prints and returns how many.
size_t expect_no_repeats(std::vector<Node*> nodes, const char* label) {
  std::vector<uint64_t> all;
  for (Node* n : nodes) {
    std::vector<uint64_t> ids = n->ids();
    std::printf(
        "[ %s ] node %s: %zu IDs, %llu failed calls (last: %s); guard: %llu refused, "
        "%llu foreign, %llu identity changes applied, %llu seen\n",
        label, n->name().c_str(), ids.size(), static_cast<unsigned long long>(n->errors()),
        n->last_error().c_str(), static_cast<unsigned long long>(n->guard().refused_ranges),
        static_cast<unsigned long long>(n->guard().foreign_ranges),
        static_cast<unsigned long long>(n->guard().identity_changes),
        static_cast<unsigned long long>(n->guard().identity_changes_seen));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  const auto dup = std::adjacent_find(all.begin(), all.end());
  EXPECT_EQ(dup, all.end()) << "ID " << *dup << " was issued twice";
  std::printf("[ %s ] %zu IDs in all, %zu repeated\n", label, all.size(), repeats_in(all));
  return all.size();
}

TEST(SegmentFailoverTest, APromotedPostgresReplicaThatMissedWritesRepeatsNoId) {
  Result<Server> primary = Services::get().start_private(ServerKind::kPostgres, "fo-primary");
  ASSERT_TRUE(primary.ok()) << primary.status().to_string();
  Result<Server> replica = Services::get().start_replica(*primary, "fo-replica");
  ASSERT_TRUE(replica.ok()) << replica.status().to_string();
  // libpq's multi-host URL: whichever of the two accepts writes.
  auto port_of = [](const std::string& url) {
    const size_t colon = url.rfind(':');
    return url.substr(colon + 1, url.find('/', colon) - colon - 1);
  };
  const std::string url = "postgres://idforge@127.0.0.1:" + port_of(primary->url) +
                          ",127.0.0.1:" + port_of(replica->url) +
                          "/idforge?target_session_attrs=read-write&connect_timeout=2";
  const std::string tag = "failover";
  ASSERT_TRUE(create_tag(primary->url, tag, 200).ok());

  Node a("a", Services::get().make_dir("fo-node-a"));
  Node b("b", Services::get().make_dir("fo-node-b"));
  ASSERT_TRUE(a.open({url}, tag).ok());
  ASSERT_TRUE(b.open({url}, tag).ok());
  a.start_pulling();
  b.start_pulling();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));

  // The replica falls behind: what the primary commits from now on is lost with it.
  ASSERT_TRUE(Services::get().stop(*replica).ok());
  const size_t before_lag = a.issued() + b.issued();
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  ASSERT_TRUE(Services::get().kill(*primary).ok());
  const auto died = Steady::now();
  const size_t before_failover = a.issued() + b.issued();
  ASSERT_GT(before_failover, before_lag) << "ranges were taken while the replica lagged";

  ASSERT_TRUE(Services::get().restart(*replica).ok());
  ASSERT_TRUE(Services::get().promote(*replica).ok());
  ASSERT_TRUE(all_issue_again({&a, &b}, died, std::chrono::seconds(30)))
      << "a: " << a.last_error() << "; b: " << b.last_error();
  const double resumed_s = std::chrono::duration<double>(Steady::now() - died).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  a.stop_pulling();
  b.stop_pulling();

  const size_t total = expect_no_repeats({&a, &b}, "pg failover");
  std::printf(
      "[ pg failover ] %zu IDs before the primary died (%zu while the replica lagged), "
      "%zu after; both nodes issued again %.1f s after the primary died\n",
      before_failover, before_failover - before_lag, total - before_failover, resumed_s);
  // The history changed once, and exactly one node moved the tags forward.
  EXPECT_EQ(a.guard().identity_changes + b.guard().identity_changes, 1u);
  EXPECT_EQ(a.guard().identity, b.guard().identity);
  EXPECT_NE(a.guard().identity.find("tl:2"), std::string::npos) << a.guard().identity;
  EXPECT_TRUE(Services::get().stop(*replica).ok());
}

TEST(SegmentFailoverTest, ARedisRestartedWithoutItsDataRepeatsNoIdOnceTheTagIsBack) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "fo-redis");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  const std::string tag = "wiped";
  ASSERT_TRUE(create_tag(redis->url, tag, 200).ok());
  Node a("a", Services::get().make_dir("wipe-node-a"));
  Node b("b", Services::get().make_dir("wipe-node-b"));
  ASSERT_TRUE(a.open({redis->url}, tag).ok());
  ASSERT_TRUE(b.open({redis->url}, tag).ok());
  a.start_pulling();
  b.start_pulling();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));

  // A crash, and the data with it (as with no AOF, or a lost disk).
  ASSERT_TRUE(Services::get().kill(*redis).ok());
  std::error_code ec;
  fs::remove_all(fs::path(redis->dir) / "appendonlydir", ec);
  fs::remove(fs::path(redis->dir) / "dump.rdb", ec);
  ASSERT_TRUE(Services::get().restart(*redis).ok());
  const auto wiped = Steady::now();
  // Until the tag exists again, the nodes say so.
  const auto deadline = wiped + std::chrono::seconds(10);
  while (Steady::now() < deadline && a.last_error().find("unknown tag") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(a.last_error().find("unknown tag"), std::string::npos) << a.last_error();

  // An operator recreates it as it first was, at 1.
  ASSERT_TRUE(create_tag(redis->url, tag, 200).ok());
  ASSERT_TRUE(all_issue_again({&a, &b}, wiped, std::chrono::seconds(30)))
      << "a: " << a.last_error() << "; b: " << b.last_error();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  a.stop_pulling();
  b.stop_pulling();
  expect_no_repeats({&a, &b}, "redis wiped");
  EXPECT_EQ(a.guard().identity_changes + b.guard().identity_changes, 1u);
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(SegmentFailoverTest, APromotedRedisReplicaThatMissedWritesRepeatsNoId) {
  Result<Server> primary = Services::get().start_private(ServerKind::kRedis, "fo-redis-p");
  ASSERT_TRUE(primary.ok()) << primary.status().to_string();
  Result<Server> replica = Services::get().start_private(ServerKind::kRedis, "fo-redis-r");
  ASSERT_TRUE(replica.ok()) << replica.status().to_string();
  const std::string primary_port = primary->url.substr(primary->url.rfind(':') + 1);
  ASSERT_EQ(Services::get().client(*replica, {"REPLICAOF", "127.0.0.1", primary_port}).exit_code,
            0);
  // Redis 7 waits a few seconds before a full sync (repl-diskless-sync-delay).
  const auto linking = Steady::now();
  while (
      Services::get().client(*replica, {"INFO", "replication"}).out.find("master_link_status:up") ==
      std::string::npos) {
    ASSERT_LT(Steady::now() - linking, std::chrono::seconds(30)) << "the replica never synced";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string tag = "promoted";
  ASSERT_TRUE(create_tag(primary->url, tag, 200).ok());
  // The tag itself must be on the replica before it is promoted (replication is
  // asynchronous; what is tested is the ranges committed after the promotion). Redis 7
  // streams writes to a replica only after its first REPLCONF ACK following the sync, up
  // to 1 s after the replica reports its link up; and a WAIT from redis-cli proves
  // nothing, as a new connection has written nothing (it answered 1 while the replica had
  // none of the tag: on /dev/shm in 2 of 5 runs, 2026-11-29).
  const auto copying = Steady::now();
  while (Services::get().client(*replica, {"EXISTS", "idforge:seg:" + tag}).out.find('1') ==
         std::string::npos) {
    ASSERT_LT(Steady::now() - copying, std::chrono::seconds(10))
        << "the replica never got the tag: "
        << Services::get().client(*replica, {"INFO", "replication"}).out;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string dir_a = Services::get().make_dir("promo-node-a");
  const std::string dir_b = Services::get().make_dir("promo-node-b");
  std::vector<uint64_t> before;
  {
    Node a("a", dir_a);
    Node b("b", dir_b);
    ASSERT_TRUE(a.open({primary->url}, tag).ok());
    ASSERT_TRUE(b.open({primary->url}, tag).ok());
    a.start_pulling();
    b.start_pulling();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    // The replica is promoted while the primary goes on: what the primary commits from
    // now on is lost when it dies.
    ASSERT_EQ(Services::get().client(*replica, {"REPLICAOF", "NO", "ONE"}).exit_code, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    ASSERT_TRUE(Services::get().kill(*primary).ok());
    a.stop_pulling();
    b.stop_pulling();
    for (Node* n : {&a, &b}) {
      std::vector<uint64_t> ids = n->ids();
      before.insert(before.end(), ids.begin(), ids.end());
    }
  }
  // The nodes are pointed at the new primary (a restart with the new address, as an
  // operator or a DNS change would do); their data directories stay.
  Node a("a", dir_a);
  Node b("b", dir_b);
  Status opened = a.open({replica->url}, tag);
  ASSERT_TRUE(opened.ok()) << opened.to_string();
  opened = b.open({replica->url}, tag);
  ASSERT_TRUE(opened.ok()) << opened.to_string();
  a.start_pulling();
  b.start_pulling();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  a.stop_pulling();
  b.stop_pulling();
  EXPECT_GT(a.issued(), 0u) << a.last_error();
  EXPECT_GT(b.issued(), 0u) << b.last_error();
  EXPECT_EQ(a.guard().identity_changes + b.guard().identity_changes, 1u);
  std::vector<uint64_t> all = before;
  for (Node* n : {&a, &b}) {
    std::vector<uint64_t> ids = n->ids();
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an ID was issued twice";
  std::printf(
      "[ redis promoted ] %zu IDs before the promotion and loss, %zu after, %zu "
      "repeated\n",
      before.size(), a.issued() + b.issued(), repeats_in(all));
  EXPECT_TRUE(Services::get().stop(*replica).ok());
}

TEST(SegmentFailoverTest, AnSqliteFileRestoredFromAnOlderCopyRepeatsNoId) {
  const std::string dir = Services::get().make_dir("fo-sqlite");
  const std::string path = dir + "/ids.db";
  const std::string url = "sqlite:" + path;
  const std::string tag = "restored";
  ASSERT_TRUE(create_tag(url, tag, 100).ok());
  const std::string node_dir = Services::get().make_dir("fo-sqlite-node");
  std::vector<uint64_t> before;
  {
    Node a("a", node_dir);
    ASSERT_TRUE(a.open({url}, tag).ok());
    a.start_pulling();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fs::copy_file(path, dir + "/backup.db");  // the WAL's last pages are not in it
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    a.stop_pulling();
    before = a.ids();
  }
  // The node stops; the operator restores the older copy in place of the file (copied
  // while the original still exists, so it is another file, then renamed over it: a
  // copy written after the original is deleted may reuse its inode number).
  fs::copy_file(dir + "/backup.db", dir + "/restoring.db");
  fs::remove(path);
  fs::remove(path + "-wal");
  fs::remove(path + "-shm");
  fs::rename(dir + "/restoring.db", path);
  Node again("a", node_dir);
  ASSERT_TRUE(again.open({url}, tag).ok());
  again.start_pulling();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  again.stop_pulling();
  EXPECT_GT(again.issued(), 0u) << again.last_error();
  EXPECT_EQ(again.guard().identity_changes, 1u);
  std::vector<uint64_t> all = again.ids();
  all.insert(all.end(), before.begin(), before.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an ID was issued twice";
  std::printf("[ sqlite restore ] %zu IDs before the restore, %zu after, %zu repeated\n",
              before.size(), again.issued(), repeats_in(all));
}

}  // namespace segment_failover_test
}  // namespace idforge::integration
