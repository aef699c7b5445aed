// The segment guard over an in-memory store that can go back: what this node served is
// never handed out again, and a changed store history moves every tag forward once.
#include "store/store_guard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rewindable_store.h"
#include "store/served_marks.h"
#include "store/store_set.h"

namespace idforge::store {
namespace {

namespace fs = std::filesystem;

class StoreGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("idforge-guard-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // What `idforge tag create` does on a new store: record its identity.
    ASSERT_TRUE(record_new_store_identity(store_).ok());
    TagSpec spec;
    spec.name = "order";
    ASSERT_TRUE(store_.create_tag(spec).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ServedMarks> marks(const std::string& node) {
    auto m = ServedMarks::open((dir_ / (node + ".served")).string());
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return std::move(m).value();
  }
  GuardSettings settings(ServedMarks* m, uint64_t margin = 1000) {
    GuardSettings s;
    s.marks = m;
    s.margin = margin;
    s.log = [this](const std::string& line) { logged_.push_back(line); };
    return s;
  }

  fs::path dir_;
  RewindableStore store_;
  std::vector<std::string> logged_;
};

TEST_F(StoreGuardTest, ServedMarksSurviveAReopenAndNeverGoDown) {
  {
    auto m = marks("a");
    ASSERT_TRUE(m->record("0/1", "order", 500).ok());
    ASSERT_TRUE(m->record("0/1", "order", 300).ok());  // lower: ignored
    ASSERT_TRUE(m->record_identity("0/1", "pg:1/tl:2").ok());
  }
  auto again = marks("a");
  EXPECT_EQ(again->highest("0/1", "order"), 500u);
  EXPECT_EQ(again->highest("1/2", "order"), 0u);
  EXPECT_EQ(again->seen_identity("0/1"), "pg:1/tl:2");
}

// `idforge serve` and `idforge next --tag` on one data directory each keep a copy of the
// marks: a write must take in what the other wrote since, or it would drop its marks.
TEST_F(StoreGuardTest, TwoProcessesOnOneMarksFileKeepEachOthersMarks) {
  auto serve = marks("shared");
  auto next = marks("shared");  // opened before serve's write, as a second process
  ASSERT_TRUE(serve->record("0/1", "order", 500).ok());
  ASSERT_TRUE(next->record("0/1", "invoice", 70).ok());
  ASSERT_TRUE(serve->record_identity("0/1", "pg:1/tl:1").ok());
  auto after = marks("shared");
  EXPECT_EQ(after->highest("0/1", "order"), 500u);
  EXPECT_EQ(after->highest("0/1", "invoice"), 70u);
  EXPECT_EQ(after->seen_identity("0/1"), "pg:1/tl:1");
  // And a lower mark written later by the stale copy never lowers the file's.
  ASSERT_TRUE(next->record("0/1", "order", 20).ok());
  EXPECT_EQ(marks("shared")->highest("0/1", "order"), 500u);
}

// Recording a range writes one line, however many tags the file holds (it used to write
// the whole file, so N tags' first ranges cost N^2), and the file is written anew, one
// line a mark, before the repeated lines make it large.
TEST_F(StoreGuardTest, ARecordAppendsOneLineAndTheFileStaysCompact) {
  const fs::path file = dir_ / "many.served";
  auto m = marks("many");
  for (int t = 0; t < 5000; ++t) ASSERT_TRUE(m->record("0/1", "tag" + std::to_string(t), 100).ok());
  const auto before = fs::file_size(file);
  ASSERT_TRUE(m->record("0/1", "tag42", 200).ok());
  EXPECT_EQ(fs::file_size(file) - before, std::string("mark 0/1 tag42 200\n").size());
  for (uint64_t v = 300; v < 30'000; v += 100) ASSERT_TRUE(m->record("0/1", "tag42", v).ok());
  // ~300 appended lines on top of 5000 marks: never more than twice the compact size
  // plus the slack.
  EXPECT_LT(fs::file_size(file), 2 * before + 64 * 1024);
  auto again = marks("many");
  EXPECT_EQ(again->highest("0/1", "tag42"), 29'900u);
  EXPECT_EQ(again->highest("0/1", "tag4999"), 100u);
}

// A crash in the middle of an append leaves a last line without its newline: it was
// never acknowledged (record() returns after the fsync), so it is dropped, and the
// file is written anew so that the next append starts on a line of its own.
TEST_F(StoreGuardTest, ALastLineACrashCutShortIsDropped) {
  const fs::path file = dir_ / "torn.served";
  std::ofstream(file) << "idforge-served-marks 1\nmark 0/1 order 500\nmark 0/1 order 9";
  auto m = marks("torn");
  EXPECT_EQ(m->highest("0/1", "order"), 500u);
  ASSERT_TRUE(m->record("0/1", "order", 600).ok());
  EXPECT_EQ(marks("torn")->highest("0/1", "order"), 600u);
}

TEST_F(StoreGuardTest, AMarksFileThatIsNotOneIsAnErrorNotEmpty) {
  for (const std::string text : {"", "garbage\n", "idforge-served-marks 1\nmark 0/1 order x\n",
                                 "idforge-served-marks 1\nmark 0/1 order 99999999999999999999\n",
                                 "idforge-served-marks 1\nmark 0/1 order 5 extra\n"}) {
    std::ofstream(dir_ / "bad.served") << text;
    auto m = ServedMarks::open((dir_ / "bad.served").string());
    EXPECT_FALSE(m.ok()) << "accepted: " << text;
  }
}

TEST_F(StoreGuardTest, ARangeAtOrBelowWhatThisNodeServedIsRefusedAcrossRestarts) {
  {
    auto m = marks("a");
    StoreGuard guard(&store_, 0, 1, settings(m.get()));
    Result<Segment> first = guard.allocate("order", 100);
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    EXPECT_EQ(first->first, 1u);
    EXPECT_EQ(first->last(), 100u);
  }
  // The store forgets the range but says it is the same history (an operator's UPDATE,
  // a restore over the same file): only the node's own record can catch it. The node
  // restarted in between.
  store_.go_back("order", 0, "h1");
  auto m = marks("a");
  StoreGuard guard(&store_, 0, 1, settings(m.get()));
  Result<Segment> again = guard.allocate("order", 60);
  // The range 1..60 is refused, the tag raised to what the node served, and the next
  // range taken at once: the caller sees one slower allocation, not a failure.
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->first, 101u);
  EXPECT_EQ(guard.status().refused_ranges, 1u);
  ASSERT_FALSE(logged_.empty());
  EXPECT_NE(logged_.front().find("already served up to 100"), std::string::npos) << logged_.front();
  EXPECT_EQ(store_.max_of("order"), 160u);
  EXPECT_EQ(guard.status().problem, "");
}

TEST_F(StoreGuardTest, AStoreWithTagsButNoRecordedIdentityIsMovedForwardByTheMargin) {
  RewindableStore wiped;  // e.g. a Redis that lost everything, tag recreated at 1
  TagSpec spec;
  spec.name = "order";
  ASSERT_TRUE(wiped.create_tag(spec).ok());
  auto m = marks("a");
  ASSERT_TRUE(m->record("0/1", "order", 700).ok());  // served before the loss
  StoreGuard guard(&wiped, 0, 1, settings(m.get(), /*margin=*/1000));
  Result<Segment> got = guard.allocate("order", 10);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->first, 1701u);
  EXPECT_EQ(guard.status().identity_changes, 1u);
}

TEST_F(StoreGuardTest, AChangedHistoryMovesEveryTagForwardOnceForTheWholeFleet) {
  auto ma = marks("a");
  auto mb = marks("b");
  StoreGuard a(&store_, 0, 1, settings(ma.get()));
  StoreGuard b(&store_, 0, 1, settings(mb.get()));
  ASSERT_TRUE(a.allocate("order", 100).ok());  // a: 1..100
  ASSERT_TRUE(b.allocate("order", 100).ok());  // b: 101..200
  ASSERT_TRUE(b.allocate("order", 100).ok());  // b: 201..300
  // Failover to a replica that had only seen a's range; b's two ranges are lost.
  store_.go_back("order", 100, "h2");

  // a notices first: the range 101..200 is committed by a history it did not verify
  // (and is above a's own mark, so only the history check stops a repeat of b's IDs).
  Result<Segment> skipped = a.allocate("order", 100);
  ASSERT_FALSE(skipped.ok());
  EXPECT_EQ(a.status().foreign_ranges, 1u);
  EXPECT_EQ(store_.adoptions(), 2);  // tag create recorded h1; a adopted h2
  Result<Segment> next_a = a.allocate("order", 100);
  ASSERT_TRUE(next_a.ok()) << next_a.status().to_string();
  EXPECT_GT(next_a->first, 300u);  // above everything b served

  // b sees the change already adopted and goes on, above its own IDs.
  Result<Segment> stale = b.allocate("order", 100);
  ASSERT_FALSE(stale.ok());
  Result<Segment> next_b = b.allocate("order", 100);
  ASSERT_TRUE(next_b.ok()) << next_b.status().to_string();
  EXPECT_GT(next_b->first, 300u);
  EXPECT_EQ(store_.adoptions(), 2);
  EXPECT_EQ(a.status().identity_changes, 1u);
  EXPECT_EQ(b.status().identity_changes, 0u);
  EXPECT_EQ(b.status().identity, "h2");
}

TEST_F(StoreGuardTest, AStoreThatLostItsDataAndGotItsTagBackIsMovedForwardByANodeThatKnewIt) {
  auto ma = marks("a");
  StoreGuard a(&store_, 0, 1, settings(ma.get()));
  ASSERT_TRUE(a.allocate("order", 100).ok());  // 1..100
  // The store loses everything; an operator recreates the tag at 1 on the empty store,
  // which records it as new under its new history.
  RewindableStore wiped;
  wiped.go_back("order", 0, "h2");
  ASSERT_TRUE(record_new_store_identity(wiped).ok());
  StoreGuard again(&wiped, 0, 1, settings(ma.get(), /*margin=*/1000));
  Result<Segment> got = again.allocate("order", 100);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->first, 1101u);  // past a's 100, plus the margin for the others
  EXPECT_EQ(again.status().identity_changes, 1u);
}

TEST_F(StoreGuardTest, TheNoticingNodeMovesPastItsOwnHighestServedEvenWithoutMargin) {
  auto ma = marks("a");
  StoreGuard a(&store_, 0, 1, settings(ma.get(), /*margin=*/0));
  ASSERT_TRUE(a.allocate("order", 100).ok());
  ASSERT_TRUE(a.allocate("order", 100).ok());  // 101..200
  store_.go_back("order", 50, "h2");
  EXPECT_FALSE(a.allocate("order", 100).ok());
  EXPECT_EQ(store_.max_of("order"), 200u);  // the floor: a's own highest served
  Result<Segment> next = a.allocate("order", 100);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(next->first, 201u);
}

TEST_F(StoreGuardTest, AnUnsafeStoreIsRefusedUnlessAllowed) {
  store_.set_safe(false);
  auto m = marks("a");
  StoreGuard refused(&store_, 0, 1, settings(m.get()));
  Status st = refused.check();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("allow_unsafe_store"), std::string::npos) << st.message();
  EXPECT_FALSE(refused.allocate("order", 10).ok());
  GuardSettings allowed = settings(m.get());
  allowed.allow_unsafe = true;
  StoreGuard accepted(&store_, 0, 1, allowed);
  EXPECT_TRUE(accepted.check().ok());
}

TEST_F(StoreGuardTest, AStoreListedAtAnotherPlaceIsRefused) {
  auto m = marks("a");
  StoreGuard first(&store_, 0, 2, settings(m.get()));
  ASSERT_TRUE(first.check().ok());
  StoreGuard moved(&store_, 1, 2, settings(m.get()));
  EXPECT_EQ(moved.check().code(), StatusCode::kInvalidArgument);
  StoreGuard fewer(&store_, 0, 1, settings(m.get()));
  EXPECT_EQ(fewer.check().code(), StatusCode::kInvalidArgument);
}

// Striped stores without a fleet floor: two nodes list the stores in different orders
// and each starts while the other's first store does not answer. Each records its one
// answering store at place 0; were either to serve, both would hand out residue 0
// (model/striped.pml, striped.static.down_at_start). Each waits for the other place,
// and when the stores answer, the order that does not match is refused.
TEST_F(StoreGuardTest, StripedStoresServeOnceEveryPlaceIsConfirmed) {
  RewindableStore other;
  ASSERT_TRUE(record_new_store_identity(other).ok());
  TagSpec spec;
  spec.name = "order";
  ASSERT_TRUE(other.create_tag(spec).ok());
  auto m0 = marks("n0");
  auto m1 = marks("n1");
  // Node 0 lists (store_, other), node 1 (other, store_); the second of each is down.
  StoreGuard n0_first(&store_, 0, 2, settings(m0.get()));
  StoreGuard n1_first(&other, 0, 2, settings(m1.get()));
  Result<Segment> a = n0_first.allocate("order", 0);
  Result<Segment> b = n1_first.allocate("order", 0);
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable) << a.status().to_string();
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable) << b.status().to_string();
  EXPECT_NE(a.status().message().find("place 1/2 has not yet confirmed"), std::string::npos)
      << a.status().message();
  // The stores answer: each node's second store is at place 0 already.
  StoreGuard n0_second(&other, 1, 2, settings(m0.get()));
  StoreGuard n1_second(&store_, 1, 2, settings(m1.get()));
  EXPECT_EQ(n0_second.check().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(n1_second.check().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(n0_first.allocate("order", 0).ok());
  EXPECT_FALSE(n1_first.allocate("order", 0).ok());
  // One order, every place confirmed once: a store down later is no reason to wait.
  auto m2 = marks("n2");
  RewindableStore third;
  ASSERT_TRUE(record_new_store_identity(third).ok());
  ASSERT_TRUE(third.create_tag(spec).ok());
  StoreGuard n2_other(&other, 0, 2, settings(m2.get()));
  StoreGuard n2_third(&third, 1, 2, settings(m2.get()));
  ASSERT_TRUE(n2_third.check().ok());
  EXPECT_TRUE(n2_other.allocate("order", 0).ok());
}

TEST_F(StoreGuardTest, ConcurrentAllocationsOfOneTagAreNeverRefused) {
  auto m = marks("a");
  StoreGuard guard(&store_, 0, 1, settings(m.get()));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        if (!guard.allocate("order", 10).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(m->highest("0/1", "order"), 1600u);
}

}  // namespace
}  // namespace idforge::store
