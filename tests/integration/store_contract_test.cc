// The SegmentStore contract (segment_store.h), checked the same way on every store:
// SQLite on a file; PostgreSQL, Redis and MariaDB (idforge's table, and Leaf's and
// Tinyid's tables used in place) on real servers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "idforge/segment_buffer.h"
#include "idforge/segment_store.h"
#include "integration/store_fixture.h"
#include "store/store_factory.h"

namespace idforge::integration {
namespace store_contract_test {

constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

class StoreContractTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    Result<std::string> url = store_url(GetParam());
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    store_ = open();
    ASSERT_NE(store_, nullptr);
  }

  // Another store object on the same server or file.
  std::unique_ptr<SegmentStore> open() {
    Result<std::unique_ptr<SegmentStore>> s = store::open_store(url_);
    EXPECT_TRUE(s.ok()) << url_ << ": " << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string create(uint64_t start, uint64_t step, const std::string& prefix = "t") {
    const std::string name = unique_tag(prefix);
    TagSpec spec;
    spec.name = name;
    spec.start = start;
    spec.step = step;
    const Status st = store_->create_tag(spec);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return name;
  }

  std::string url_;
  std::unique_ptr<SegmentStore> store_;
};

TEST_P(StoreContractTest, CreateListShowAndSetStep) {
  const int64_t before = now_ms();
  TagSpec a;
  a.name = unique_tag("list_b");
  a.start = 500;
  a.step = 20;
  // Tables used in place keep only the columns their own system has.
  if (keeps_descriptions(GetParam())) a.description = "orders, 'quoted' and \"double\"";
  if (keeps_serial_templates(GetParam())) a.serial_template = "ORD-{yyyy}-{seq:6}";
  TagSpec b;
  b.name = unique_tag("list_a");
  ASSERT_TRUE(store_->create_tag(a).ok());
  ASSERT_TRUE(store_->create_tag(b).ok());

  Result<TagInfo> got = store_->get_tag(a.name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->name, a.name);
  EXPECT_EQ(got->max_id, 499u);  // start - 1: nothing handed out yet
  EXPECT_EQ(got->step, 20u);
  EXPECT_EQ(got->description, a.description);
  EXPECT_EQ(got->serial_template, a.serial_template);
  EXPECT_GE(got->updated_at_ms, before - 1000);
  EXPECT_LE(got->updated_at_ms, now_ms() + 1000);

  Result<TagInfo> defaults = store_->get_tag(b.name);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_id, 0u);
  EXPECT_EQ(defaults->step, 1000u);
  EXPECT_EQ(defaults->description, "");

  // Listed in name order; other tests' tags may share the server.
  Result<std::vector<TagInfo>> all = store_->list_tags();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  std::vector<std::string> names;
  for (const TagInfo& t : *all) names.push_back(t.name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  const auto ia = std::find(names.begin(), names.end(), a.name);
  const auto ib = std::find(names.begin(), names.end(), b.name);
  ASSERT_NE(ia, names.end());
  ASSERT_NE(ib, names.end());
  EXPECT_LT(ib, ia);  // list_a... sorts before list_b...
  EXPECT_EQ((*all)[static_cast<size_t>(ia - names.begin())].serial_template, a.serial_template);

  ASSERT_TRUE(store_->set_step(a.name, 7).ok());
  EXPECT_EQ(store_->get_tag(a.name)->step, 7u);
  // The new step is what step 0 allocates.
  Result<Segment> seg = store_->allocate(a.name, 0);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->first, 500u);
  EXPECT_EQ(seg->count, 7u);
}

TEST_P(StoreContractTest, UnknownTagIsNotFoundEverywhere) {
  const std::string name = unique_tag("missing");
  Result<Segment> seg = store_->allocate(name, 0);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kNotFound);
  EXPECT_NE(seg.status().message().find("unknown tag '" + name + "'"), std::string::npos)
      << seg.status().message();
  EXPECT_EQ(store_->allocate(name, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->get_tag(name).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->set_step(name, 10).code(), StatusCode::kNotFound);
  // Nothing was created on the way.
  EXPECT_EQ(store_->get_tag(name).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreContractTest, DuplicatesAndBadInputAreRefused) {
  const std::string name = create(1, 10);
  TagSpec again;
  again.name = name;
  again.start = 99;
  const Status dup = store_->create_tag(again);
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists) << dup.to_string();
  EXPECT_EQ(store_->get_tag(name)->max_id, 0u);  // the first one is untouched

  TagSpec bad;
  bad.name = "has space";
  EXPECT_EQ(store_->create_tag(bad).code(), StatusCode::kInvalidArgument);
  bad.name = std::string(65, 'x');
  EXPECT_EQ(store_->create_tag(bad).code(), StatusCode::kInvalidArgument);
  bad.name = unique_tag("bad");
  bad.start = 0;
  EXPECT_EQ(store_->create_tag(bad).code(), StatusCode::kInvalidArgument);
  bad.start = 1;
  bad.step = 0;
  EXPECT_EQ(store_->create_tag(bad).code(), StatusCode::kInvalidArgument);
  bad.step = 1'000'000'001;
  EXPECT_EQ(store_->create_tag(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->get_tag(bad.name).status().code(), StatusCode::kNotFound);

  EXPECT_EQ(store_->set_step(name, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->set_step(name, 1'000'000'001).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->get_tag("bad name").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->allocate("bad name", 1).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, AllocatedRangesAreContiguous) {
  const std::string name = create(100, 10);
  Segment a = store_->allocate(name, 0).value();
  EXPECT_EQ(a.first, 100u);
  EXPECT_EQ(a.count, 10u);
  EXPECT_EQ(a.stride, 1u);
  Segment b = store_->allocate(name, 25).value();
  EXPECT_EQ(b.first, 110u);
  EXPECT_EQ(b.count, 25u);
  Segment c = store_->allocate(name, 0).value();
  EXPECT_EQ(c.first, 135u);
  EXPECT_EQ(c.count, 10u);
  Result<TagInfo> info = store_->get_tag(name);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->max_id, 144u);
  EXPECT_EQ(info->step, 10u);  // an explicit step does not change the configured one
}

TEST_P(StoreContractTest, RunningPastTwoToTheSixtyThreeIsOutOfRange) {
  const uint64_t top = highest_id(GetParam());
  const std::string name = create(top - 9, 5);
  Segment a = store_->allocate(name, 0).value();
  EXPECT_EQ(a.first, top - 9);
  Segment b = store_->allocate(name, 0).value();  // ends exactly at the top
  EXPECT_EQ(b.last(), top);
  Result<Segment> c = store_->allocate(name, 1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kOutOfRange) << c.status().to_string();
  EXPECT_EQ(store_->get_tag(name)->max_id, top);  // nothing moved
  EXPECT_EQ(store_->allocate(name, kMaxId + 1).status().code(), StatusCode::kOutOfRange);
}

// Two store objects (two connections, as two servers would have) with threads
// allocating at once: every range is handed out exactly once, with no gaps.
TEST_P(StoreContractTest, TwoStoreObjectsNeverOverlapUnderConcurrentAllocation) {
  const std::string name = create(1, 3);
  std::unique_ptr<SegmentStore> other = open();
  ASSERT_NE(other, nullptr);
  constexpr int kThreadsPerStore = 4;
  constexpr int kAllocations = 150;
  std::vector<std::vector<Segment>> got(2 * kThreadsPerStore);
  std::vector<std::string> errors(got.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 2 * kThreadsPerStore; ++t) {
    SegmentStore* s = t % 2 == 0 ? store_.get() : other.get();
    threads.emplace_back([&, s, t] {
      for (int i = 0; i < kAllocations; ++i) {
        // Mixed steps, including the tag's own (0 -> 3).
        const uint64_t step = static_cast<uint64_t>((t + i) % 4 == 0 ? 0 : 1 + (t * 7 + i) % 50);
        Result<Segment> seg = s->allocate(name, step);
        if (!seg.ok()) {
          errors[t] = seg.status().to_string();
          return;
        }
        got[t].push_back(*seg);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");

  std::vector<Segment> all;
  for (const auto& v : got) all.insert(all.end(), v.begin(), v.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(2 * kThreadsPerStore * kAllocations));
  std::sort(all.begin(), all.end(),
            [](const Segment& x, const Segment& y) { return x.first < y.first; });
  uint64_t expect_first = 1;
  for (const Segment& s : all) {
    ASSERT_EQ(s.first, expect_first) << "overlap or gap";
    expect_first = s.first + s.count;
  }
  EXPECT_EQ(store_->get_tag(name)->max_id, expect_first - 1);
}

// The double buffer over a real store: 4 threads x 100,000 IDs, all distinct, each
// thread's increasing.
TEST_P(StoreContractTest, SegmentBufferGivesFourThreadsDistinctIds) {
  const std::string name = create(1, 1000);
  SegmentBufferOptions options;
  options.tag = name;
  options.min_step = 1000;
  options.wait_ms = 5000;
  auto buffer = SegmentBuffer::create(store_.get(), options);
  ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100'000;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ids[t].reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        Result<uint64_t> id = (*buffer)->next();
        if (!id.ok()) {
          errors[t] = id.status().to_string();
          return;
        }
        ids[t].push_back(*id);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<uint64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "");
    EXPECT_TRUE(std::is_sorted(ids[t].begin(), ids[t].end())) << "thread " << t;
    all.insert(all.end(), ids[t].begin(), ids[t].end());
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate ID";
  EXPECT_GE(all.front(), 1u);
  // Every ID lies in a range the store committed.
  EXPECT_LE(all.back(), store_->get_tag(name)->max_id);
}

// The failover guard's calls (identity, adopt_identity, claim_place, durability) on a
// store of the test's own, since what they record is store-wide.
class StoreIdentityTest : public StoreContractTest {
 protected:
  void SetUp() override {
    Result<std::string> url = fresh_store_url(GetParam(), "fresh");
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    store_ = open();
    ASSERT_NE(store_, nullptr);
  }

  uint64_t max_id(const std::string& tag) {
    Result<TagInfo> info = store_->get_tag(tag);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
    return info.ok() ? info->max_id : 0;
  }
};

TEST_P(StoreIdentityTest, IdentityIsStableAndNothingIsRecordedOnAFreshStore) {
  Result<StoreIdentity> a = store_->identity();
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Result<StoreIdentity> b = store_->identity();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_FALSE(a->current.empty());
  EXPECT_EQ(a->current, b->current);
  const std::string prefix = GetParam() == StoreKind::kPostgres ? "pg:"
                             : is_mysql(GetParam())             ? "mariadb:"  // the test server
                                                                : store_kind_name(GetParam()) + ":";
  EXPECT_EQ(a->current.rfind(prefix, 0), 0u) << a->current;
  EXPECT_EQ(a->recorded, "");
  // Another store object on the same data sees the same.
  std::unique_ptr<SegmentStore> other = open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->identity()->current, a->current);
}

TEST_P(StoreIdentityTest, EveryRangeCarriesTheIdentityThatCommittedIt) {
  const std::string name = create(1, 10);
  Result<Segment> seg = store_->allocate(name, 0);
  ASSERT_TRUE(seg.ok()) << seg.status().to_string();
  EXPECT_EQ(seg->identity, store_->identity()->current);
}

TEST_P(StoreIdentityTest, AdoptRecordsTheIdentityAndMovesEveryTagOnce) {
  const std::string low = create(1, 10, "low");        // max_id 0, floor 1000 -> 1000 + 50
  const std::string high = create(5001, 10, "high");   // max_id 5000, floor 1000 -> 5000 + 50
  const std::string plain = create(101, 10, "plain");  // no floor: 100 + 50
  const std::string gone = unique_tag("gone");         // in the floors, not in the store
  IdentityChange change;
  change.expected = "";
  change.adopt = "test:first";
  change.margin = 50;
  change.floors = {{low, 1000}, {high, 1000}, {gone, 7000}};
  Result<bool> applied = store_->adopt_identity(change);
  ASSERT_TRUE(applied.ok()) << applied.status().to_string();
  EXPECT_TRUE(*applied);
  EXPECT_EQ(store_->identity()->recorded, "test:first");
  EXPECT_EQ(max_id(low), 1050u);
  EXPECT_EQ(max_id(high), 5050u);
  EXPECT_EQ(max_id(plain), 150u);
  EXPECT_EQ(store_->get_tag(gone).status().code(), StatusCode::kNotFound);  // not recreated
  // Allocation goes on after the new max_id.
  EXPECT_EQ(store_->allocate(low, 0)->first, 1051u);

  // Someone else's step with the old expectation: refused, nothing moves.
  change.adopt = "test:second";
  applied = store_->adopt_identity(change);
  ASSERT_TRUE(applied.ok()) << applied.status().to_string();
  EXPECT_FALSE(*applied);
  EXPECT_EQ(store_->identity()->recorded, "test:first");
  EXPECT_EQ(max_id(low), 1060u);
  EXPECT_EQ(max_id(high), 5050u);
  EXPECT_EQ(max_id(plain), 150u);

  // Expecting the recorded one works again.
  change.expected = "test:first";
  change.floors.clear();
  applied = store_->adopt_identity(change);
  ASSERT_TRUE(applied.ok()) << applied.status().to_string();
  EXPECT_TRUE(*applied);
  EXPECT_EQ(store_->identity()->recorded, "test:second");
  EXPECT_EQ(max_id(plain), 200u);
}

TEST_P(StoreIdentityTest, ConcurrentAdoptsWithOneExpectationApplyExactlyOnce) {
  const std::string name = create(1, 10);
  constexpr int kThreads = 8;
  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int i = 0; i < kThreads; ++i) {
    stores.push_back(open());
    ASSERT_NE(stores.back(), nullptr);
  }
  std::vector<Result<bool>> results(kThreads, Result<bool>(false));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      IdentityChange change;
      change.expected = "";
      change.adopt = "test:node" + std::to_string(t);
      change.margin = 1000;
      results[t] = stores[t]->adopt_identity(change);
    });
  }
  for (std::thread& th : threads) th.join();
  int applied = 0;
  int winner = -1;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(results[t].ok()) << results[t].status().to_string();
    if (*results[t]) {
      ++applied;
      winner = t;
    }
  }
  EXPECT_EQ(applied, 1);
  EXPECT_EQ(max_id(name), 1000u);  // moved once, not eight times
  EXPECT_EQ(store_->identity()->recorded, "test:node" + std::to_string(winner));
}

TEST_P(StoreIdentityTest, AdoptPastTwoToTheSixtyThreeIsOutOfRangeAndChangesNothing) {
  const uint64_t top = highest_id(GetParam());
  const std::string small = create(1, 10, "small");
  const std::string big = create(top - 99, 10, "big");  // max_id top - 100
  IdentityChange change;
  change.adopt = "test:overflow";
  change.margin = 101;
  Result<bool> applied = store_->adopt_identity(change);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().code(), StatusCode::kOutOfRange) << applied.status().to_string();
  EXPECT_EQ(max_id(small), 0u);
  EXPECT_EQ(max_id(big), top - 100);
  EXPECT_EQ(store_->identity()->recorded, "");

  // A floor can push it over too; exactly 2^63-1 is fine.
  change.margin = 100;
  change.floors = {{small, top - 99}};
  EXPECT_EQ(store_->adopt_identity(change).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(max_id(small), 0u);
  change.floors = {{small, top - 100}};
  applied = store_->adopt_identity(change);
  ASSERT_TRUE(applied.ok()) << applied.status().to_string();
  EXPECT_TRUE(*applied);
  EXPECT_EQ(max_id(small), top);
  EXPECT_EQ(max_id(big), top);
}

TEST_P(StoreIdentityTest, APlaceIsRecordedOnceAndAnotherIsRefused) {
  EXPECT_TRUE(store_->claim_place(1, 2).ok());
  EXPECT_TRUE(store_->claim_place(1, 2).ok());
  std::unique_ptr<SegmentStore> other = open();
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->claim_place(1, 2).ok());
  const Status moved = other->claim_place(0, 3);
  EXPECT_EQ(moved.code(), StatusCode::kInvalidArgument) << moved.to_string();
  EXPECT_NE(moved.message().find("is store 1 of 2"), std::string::npos) << moved.message();
  EXPECT_NE(moved.message().find("as store 0 of 3"), std::string::npos) << moved.message();
  EXPECT_EQ(store_->claim_place(1, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->claim_place(2, 2).code(), StatusCode::kInvalidArgument);  // not a place
  EXPECT_TRUE(store_->claim_place(1, 2).ok());  // still what was recorded
}

TEST_P(StoreIdentityTest, DurabilityIsSafeOnTheTestServers) {
  Result<Durability> d = store_->durability();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_FALSE(d->summary.empty());
  // The test servers run fsync on / appendfsync always, and SQLite opens WAL + FULL.
  EXPECT_TRUE(d->safe) << d->summary << ": " << d->risk;
  EXPECT_EQ(d->risk, "");
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreIdentityTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres,
                                           StoreKind::kRedis, StoreKind::kMysql,
                                           StoreKind::kMysqlLeaf, StoreKind::kMysqlTinyid),
                         StoreKindName());

TEST_P(StoreContractTest, DescribeNamesTheStore) {
  const std::string d = store_->describe();
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.rfind(store_scheme_name(GetParam()), 0), 0u) << d;
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreContractTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres,
                                           StoreKind::kRedis, StoreKind::kMysql,
                                           StoreKind::kMysqlLeaf, StoreKind::kMysqlTinyid),
                         StoreKindName());

}  // namespace store_contract_test
}  // namespace idforge::integration
