// The SQLite SegmentStore against a real file: tag administration, ranges that are
// contiguous, durable and never shared between two connections, the overflow edge,
// files other tools have touched, and a SegmentBuffer on top.
#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_buffer.h"

namespace idforge::store {
namespace {

constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-sqlite-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/segments.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<SegmentStore> open() {
    auto store = open_sqlite_store(path_);
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static TagSpec spec(std::string name, uint64_t start = 1, uint64_t step = 1000) {
    TagSpec s;
    s.name = std::move(name);
    s.start = start;
    s.step = step;
    return s;
  }

  // A second, plain SQLite connection: what a DBA's tool or another program sees.
  sqlite3* raw_connection() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
  }
  static void raw_exec(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, CreateListShowAndSetStep) {
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->describe(), "sqlite:" + path_);
  TagSpec order = spec("order", 100, 500);
  order.description = "order numbers";
  order.serial_template = "ORD-{yyyy}-{seq:8}";
  ASSERT_TRUE(store->create_tag(order).ok());
  ASSERT_TRUE(store->create_tag(spec("user")).ok());
  ASSERT_TRUE(store->create_tag(spec("a.b:c-d_9")).ok());

  auto tags = store->list_tags();
  ASSERT_TRUE(tags.ok()) << tags.status().to_string();
  ASSERT_EQ(tags->size(), 3u);
  EXPECT_EQ((*tags)[0].name, "a.b:c-d_9");  // sorted by name
  EXPECT_EQ((*tags)[1].name, "order");
  EXPECT_EQ((*tags)[2].name, "user");

  auto info = store->get_tag("order");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->max_id, 99u) << "a new tag with start S has max_id S - 1";
  EXPECT_EQ(info->step, 500u);
  EXPECT_EQ(info->description, "order numbers");
  EXPECT_EQ(info->serial_template, "ORD-{yyyy}-{seq:8}");
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_NEAR(static_cast<double>(info->updated_at_ms), static_cast<double>(now), 60'000.0);

  ASSERT_TRUE(store->set_step("order", 2000).ok());
  EXPECT_EQ(store->get_tag("order")->step, 2000u);
  EXPECT_EQ(store->get_tag("order")->max_id, 99u) << "set-step leaves max_id alone";
  EXPECT_EQ(store->get_tag("user")->max_id, 0u);
}

TEST_F(SqliteStoreTest, EmptyStoreListsNothing) {
  auto store = open();
  ASSERT_TRUE(store);
  auto tags = store->list_tags();
  ASSERT_TRUE(tags.ok());
  EXPECT_TRUE(tags->empty());
}

TEST_F(SqliteStoreTest, DuplicateTagIsAlreadyExistsAndKeepsTheOriginal) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1, 10)).ok());
  ASSERT_TRUE(store->allocate("order", 0).ok());
  Status again = store->create_tag(spec("order", 500, 20));
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("'order'"), std::string::npos) << again.message();
  EXPECT_NE(again.message().find(path_), std::string::npos) << again.message();
  EXPECT_EQ(store->get_tag("order")->max_id, 10u);
  EXPECT_EQ(store->get_tag("order")->step, 10u);
}

TEST_F(SqliteStoreTest, RejectsBadNamesStartsAndSteps) {
  auto store = open();
  ASSERT_TRUE(store);
  for (const char* bad : {"", "has space", "slash/no", "ünïcode", "semi;colon"}) {
    Status st = store->create_tag(spec(bad));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
  EXPECT_EQ(store->create_tag(spec(std::string(65, 'a'))).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->create_tag(spec(std::string(64, 'a'))).ok());

  EXPECT_EQ(store->create_tag(spec("t", 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->create_tag(spec("t", kMaxId + 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->create_tag(spec("t", 1, 0)).code(), StatusCode::kInvalidArgument);
  Status big = store->create_tag(spec("t", 1, 1'000'000'001));
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("1000000000"), std::string::npos) << big.message();
  EXPECT_TRUE(store->create_tag(spec("t", kMaxId, 1'000'000'000)).ok());

  EXPECT_EQ(store->set_step("t", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->set_step("t", 1'000'000'001).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->get_tag("bad name").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->allocate("bad name", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->list_tags()->size(), 2u) << "nothing invalid was stored";
}

TEST_F(SqliteStoreTest, UnknownTagIsNotFoundWithAHint) {
  auto store = open();
  ASSERT_TRUE(store);
  auto seg = store->allocate("nope", 10);
  ASSERT_EQ(seg.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(seg.status().message(), "unknown tag 'nope' (create it with: idforge tag create nope)");
  EXPECT_EQ(store->get_tag("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->set_step("nope", 10).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->allocate("nope", 0).status().code(), StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, RangesAreContiguousAndIncreasing) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1000, 100)).ok());
  uint64_t expect_first = 1000;
  for (uint64_t step : {1, 7, 100, 1000, 3, 250000}) {
    auto seg = store->allocate("order", step);
    ASSERT_TRUE(seg.ok()) << seg.status().to_string();
    EXPECT_EQ(seg->first, expect_first);
    EXPECT_EQ(seg->count, step);
    EXPECT_EQ(seg->stride, 1u);
    expect_first += step;
    EXPECT_EQ(store->get_tag("order")->max_id, expect_first - 1);
  }
}

TEST_F(SqliteStoreTest, StepZeroUsesTheConfiguredStep) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1, 40)).ok());
  auto a = store->allocate("order", 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, 1u);
  EXPECT_EQ(a->count, 40u);
  ASSERT_TRUE(store->set_step("order", 7).ok());
  auto b = store->allocate("order", 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, 41u);
  EXPECT_EQ(b->count, 7u);
}

TEST_F(SqliteStoreTest, RangesSurviveReopening) {
  uint64_t last = 0;
  {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create_tag(spec("order", 1, 100)).ok());
    for (int i = 0; i < 5; ++i) last = store->allocate("order", 0)->last();
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto info = store->get_tag("order");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->max_id, last);
  auto next = store->allocate("order", 0);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->first, last + 1);
}

TEST_F(SqliteStoreTest, TwoConnectionsHammeringNeverOverlap) {
  auto a = open();
  auto b = open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->create_tag(spec("order", 1, 10)).ok());

  constexpr int kThreadsPerStore = 3;
  constexpr int kAllocationsPerThread = 80;
  std::vector<std::vector<Segment>> got(2 * kThreadsPerStore);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 2 * kThreadsPerStore; ++t) {
    SegmentStore* store = t % 2 == 0 ? a.get() : b.get();
    threads.emplace_back([&, store, t] {
      for (int i = 0; i < kAllocationsPerThread; ++i) {
        // Varied steps, so overlapping ranges could not line up by accident.
        auto seg = store->allocate("order", static_cast<uint64_t>(1 + (t * 7 + i) % 13));
        if (!seg.ok()) {
          failures.fetch_add(1);
          ADD_FAILURE() << seg.status().to_string();
          return;
        }
        got[static_cast<size_t>(t)].push_back(*seg);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);

  std::vector<Segment> all;
  for (const auto& per_thread : got) {
    for (size_t i = 1; i < per_thread.size(); ++i) {
      EXPECT_GT(per_thread[i].first, per_thread[i - 1].last()) << "one caller's ranges increase";
    }
    all.insert(all.end(), per_thread.begin(), per_thread.end());
  }
  std::sort(all.begin(), all.end(),
            [](const Segment& x, const Segment& y) { return x.first < y.first; });
  // Sorted and each starting right after the previous: no overlap and no hole.
  uint64_t expect_first = 1;
  for (const Segment& seg : all) {
    ASSERT_EQ(seg.first, expect_first);
    expect_first = seg.last() + 1;
  }
  EXPECT_EQ(a->get_tag("order")->max_id, expect_first - 1);
}

// A burst of first requests asks for many tags at once: their allocations share
// transactions (fewer commits than ranges, counted in WAL frames: one a commit here),
// a tag the store does not know is answered NotFound without failing the others, and
// every range is the tag's own, contiguous with the one before.
TEST_F(SqliteStoreTest, RangesAskedForAtOnceShareCommitsAndStayContiguous) {
  auto store = open();
  ASSERT_TRUE(store);
  constexpr int kThreads = 8;
  constexpr int kEach = 40;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(store->create_tag(spec("t" + std::to_string(t), 1, 10)).ok());
  }
  sqlite3* raw = raw_connection();
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  std::vector<std::vector<Segment>> got(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (i % 10 == 0) {
          auto missing = store->allocate("no-such-tag", 0);
          if (missing.status().code() != StatusCode::kNotFound) {
            failures.fetch_add(1);
            ADD_FAILURE() << missing.status().to_string();
          }
        }
        auto seg = store->allocate("t" + std::to_string(t), 0);
        if (!seg.ok()) {
          failures.fetch_add(1);
          ADD_FAILURE() << seg.status().to_string();
          return;
        }
        got[static_cast<size_t>(t)].push_back(*seg);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    uint64_t expect_first = 1;
    for (const Segment& seg : got[static_cast<size_t>(t)]) {
      ASSERT_EQ(seg.first, expect_first) << "t" << t;
      ASSERT_EQ(seg.count, 10u);
      expect_first = seg.last() + 1;
    }
    EXPECT_EQ(store->get_tag("t" + std::to_string(t))->max_id, expect_first - 1);
  }
  // (busy, frames in the WAL, frames checkpointed): one frame per commit of the one page.
  int log_frames = -1;
  int checkpointed = -1;
  ASSERT_EQ(sqlite3_wal_checkpoint_v2(raw, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                      &checkpointed),
            SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_GT(log_frames, 0);
  EXPECT_LT(log_frames, kThreads * kEach) << "every range committed by itself";
}

TEST_F(SqliteStoreTest, OverflowPast63BitsIsOutOfRange) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("big", kMaxId - 9, 5)).ok());
  auto a = store->allocate("big", 0);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->first, kMaxId - 9);
  auto b = store->allocate("big", 0);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->last(), kMaxId) << "the very last ID is handed out";

  auto c = store->allocate("big", 1);
  ASSERT_EQ(c.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(c.status().message().find("'big'"), std::string::npos) << c.status().message();
  EXPECT_EQ(store->allocate("big", 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store->get_tag("big")->max_id, kMaxId) << "a refused allocation changes nothing";

  ASSERT_TRUE(store->create_tag(spec("small", 1, 5)).ok());
  EXPECT_EQ(store->allocate("small", kMaxId + 1).status().code(), StatusCode::kOutOfRange);
  auto most = store->allocate("small", kMaxId - 1);  // 1 .. 2^63-2 in one range
  ASSERT_TRUE(most.ok()) << most.status().to_string();
  EXPECT_EQ(most->last(), kMaxId - 1);
  EXPECT_EQ(store->allocate("small", 2).status().code(), StatusCode::kOutOfRange);
  auto last = store->allocate("small", 1);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->first, kMaxId);
}

TEST_F(SqliteStoreTest, UsesWalModeAndTheDocumentedSchema) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 5, 10)).ok());
  sqlite3* db = raw_connection();
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT tag, max_id, step, description, serial_template, updated_at "
                               "FROM idforge_segments",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "order");
  EXPECT_EQ(sqlite3_column_int64(stmt, 1), 4);
  EXPECT_EQ(sqlite3_column_int64(stmt, 2), 10);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteStoreTest, ACopiedFileIsANewIdentityWithTheOldRecord) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1, 10)).ok());
  IdentityChange change;
  change.adopt = store->identity()->current;
  ASSERT_EQ(change.adopt.rfind("sqlite:", 0), 0u) << change.adopt;
  ASSERT_TRUE(store->adopt_identity(change).value());
  EXPECT_EQ(store->identity()->recorded, change.adopt);
  store.reset();  // closes it, so the copy has everything (WAL checkpointed)

  const std::string copy = dir_ + "/restored.db";
  std::filesystem::copy_file(path_, copy);
  auto restored = open_sqlite_store(copy);
  ASSERT_TRUE(restored.ok()) << restored.status().to_string();
  Result<StoreIdentity> id = (*restored)->identity();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_NE(id->current, change.adopt);   // another inode
  EXPECT_EQ(id->recorded, change.adopt);  // the record came along
  EXPECT_EQ((*restored)->allocate("order", 0)->identity, id->current);

  // The original, reopened, is still itself.
  auto again = open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->identity()->current, change.adopt);
}

TEST_F(SqliteStoreTest, DurabilityReportsWalAndFullAndWhatWeakensIt) {
  auto store = open();
  ASSERT_TRUE(store);
  Result<Durability> d = store->durability();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_TRUE(d->safe);
  EXPECT_EQ(d->summary, "journal_mode=wal synchronous=full");
  // An in-memory database keeps its journal in memory: nothing survives a crash.
  auto other = open_sqlite_store(":memory:");
  ASSERT_TRUE(other.ok());
  Result<Durability> mem = (*other)->durability();
  ASSERT_TRUE(mem.ok()) << mem.status().to_string();
  EXPECT_FALSE(mem->safe) << mem->summary;
  EXPECT_NE(mem->risk.find("journal_mode=memory"), std::string::npos) << mem->risk;
}

TEST_F(SqliteStoreTest, WaitsForAForeignWriterInsteadOfFailing) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1, 10)).ok());
  sqlite3* db = raw_connection();
  raw_exec(db, "BEGIN IMMEDIATE");
  raw_exec(db, "UPDATE idforge_segments SET max_id = max_id + 1000 WHERE tag = 'order'");
  std::thread release([db] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raw_exec(db, "COMMIT");
  });
  auto seg = store->allocate("order", 0);  // blocks on the write lock, then continues
  release.join();
  sqlite3_close(db);
  ASSERT_TRUE(seg.ok()) << seg.status().to_string();
  EXPECT_EQ(seg->first, 1001u) << "the foreign writer's numbers are not handed out again";
}

TEST_F(SqliteStoreTest, HandEditedRowsAreReportedNotTrusted) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("neg", 1, 10)).ok());
  ASSERT_TRUE(store->create_tag(spec("real", 1, 10)).ok());
  sqlite3* db = raw_connection();
  raw_exec(db, "UPDATE idforge_segments SET max_id = -5 WHERE tag = 'neg'");
  raw_exec(db, "UPDATE idforge_segments SET max_id = 1.5 WHERE tag = 'real'");
  sqlite3_close(db);

  auto neg = store->allocate("neg", 0);
  EXPECT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("'neg'"), std::string::npos) << neg.status().message();
  EXPECT_FALSE(store->get_tag("real").ok());
  EXPECT_FALSE(store->list_tags().ok());
}

TEST_F(SqliteStoreTest, MissingDirectoryIsAClearError) {
  const std::string path = dir_ + "/no/such/dir/segments.db";
  auto store = open_sqlite_store(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kIoError);
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("does not exist"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/no")) << "the store creates no directories";
}

TEST_F(SqliteStoreTest, EmptyPathIsInvalid) {
  EXPECT_EQ(open_sqlite_store("").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, AFileThatIsNotADatabaseIsAClearError) {
  std::ofstream(path_) << "this is not an SQLite database, just some text that is long enough "
                          "to have a header of its own........................................";
  auto store = open_sqlite_store(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path_), std::string::npos) << store.status().message();
}

TEST_F(SqliteStoreTest, ATableWithOtherColumnsIsAClearError) {
  sqlite3* db = raw_connection();
  raw_exec(db, "CREATE TABLE idforge_segments (tag TEXT PRIMARY KEY, max_id INTEGER)");
  sqlite3_close(db);
  auto store = open_sqlite_store(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("expected columns"), std::string::npos)
      << store.status().message();
}

TEST_F(SqliteStoreTest, SegmentBufferFourThreadsHundredThousandEachDistinct) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_tag(spec("order", 1, 1000)).ok());
  SegmentBufferOptions options;
  options.tag = "order";
  options.min_step = store->get_tag("order")->step;
  options.max_step = 8000;  // small enough for dozens of real fetches and switches
  options.wait_ms = 10'000;
  auto buffer = SegmentBuffer::create(store.get(), options);
  ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();

  constexpr int kThreads = 4;
  constexpr size_t kPerThread = 100'000;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = ids[static_cast<size_t>(t)];
      mine.reserve(kPerThread);
      while (mine.size() < kPerThread) {
        auto id = (*buffer)->next();
        ASSERT_TRUE(id.ok()) << id.status().to_string();
        mine.push_back(*id);
      }
    });
  }
  for (auto& t : threads) t.join();

  std::vector<uint64_t> all;
  for (const auto& mine : ids) {
    ASSERT_EQ(mine.size(), kPerThread);
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an ID was issued twice";
  EXPECT_GE(all.front(), 1u);
  EXPECT_LE(all.back(), store->get_tag("order")->max_id) << "every ID lies in a committed range";
  EXPECT_GT((*buffer)->stats().fetches, 10u);
}

}  // namespace
}  // namespace idforge::store
