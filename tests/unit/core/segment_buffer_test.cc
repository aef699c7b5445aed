// SegmentBuffer: prefetch point, switch, the both-empty deadline, errors, and the
// dynamic step, against an in-memory source.
#include "idforge/segment_buffer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fake_range_source.h"

namespace idforge {
namespace {

using testing::eventually;
using testing::FakeRangeSource;

std::unique_ptr<SegmentBuffer> make_buffer(RangeSource* source, SegmentBufferOptions o) {
  auto b = SegmentBuffer::create(source, std::move(o));
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(b).value() : nullptr;
}

SegmentBufferOptions opts(uint64_t step, uint64_t max_step = 1'000'000) {
  SegmentBufferOptions o;
  o.tag = "order";
  o.min_step = step;
  o.max_step = max_step;
  return o;
}

TEST(SegmentBufferTest, HandsOutDenseIncreasingIdsAcrossSegments) {
  FakeRangeSource src;
  src.add_tag("order", 1);
  auto buf = make_buffer(&src, opts(10, 10));
  for (uint64_t want = 1; want <= 1000; ++want) {
    auto id = buf->next();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ASSERT_EQ(*id, want);
  }
  EXPECT_GE(buf->stats().switches, 99u);
}

TEST(SegmentBufferTest, StartsAtTheTagsStartValue) {
  FakeRangeSource src;
  src.add_tag("order", 5000);
  auto buf = make_buffer(&src, opts(100));
  EXPECT_EQ(buf->next().value(), 5000u);
}

TEST(SegmentBufferTest, PrefetchStartsExactlyWhenTenPercentIsUsed) {
  FakeRangeSource src;
  src.add_tag("order");
  auto buf = make_buffer(&src, opts(100));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(buf->next().ok());  // offsets 0..9
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(src.calls(), 1) << "no prefetch before 10% is used";
  ASSERT_TRUE(buf->next().ok());  // offset 10: the prefetch point
  EXPECT_TRUE(eventually([&] { return buf->stats().next_ready; }));
  EXPECT_EQ(src.calls(), 2);
  // The switch to the prefetched segment needs no wait.
  for (int i = 0; i < 150; ++i) ASSERT_TRUE(buf->next().ok());
  SegmentBufferStats st = buf->stats();
  EXPECT_EQ(st.waits, 1u) << "only the very first call waited";
  EXPECT_EQ(st.switches, 2u);
}

TEST(SegmentBufferTest, BothBuffersEmptyWaitsThenFailsWithADeadline) {
  FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o = opts(10);
  o.wait_ms = 50;
  auto buf = make_buffer(&src, o);
  src.block();
  auto start = std::chrono::steady_clock::now();
  auto r = buf->next();
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("both segment buffers are empty"), std::string::npos);
  EXPECT_GE(took, std::chrono::milliseconds(45));
  EXPECT_LT(took, std::chrono::milliseconds(5000)) << "a deadline, not a hang";
  src.release();
  auto ok = buf->next();
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, 1u);
}

// The server's I/O threads take what the buffers hold and must never wait on a store.
TEST(SegmentBufferTest, TryNextBatchTakesWhatIsThereAndNeverWaits) {
  FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o = opts(10, 10);
  o.wait_ms = 5000;  // a wait would show as a slow call
  auto buf = make_buffer(&src, o);
  std::vector<uint64_t> ids(25);
  // Nothing loaded yet and the store is blocked: nothing to take, at once.
  src.block();
  auto start = std::chrono::steady_clock::now();
  Result<size_t> none = buf->try_next_batch(ids);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(*none, 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  src.release();
  ASSERT_TRUE(eventually([&] {
    Result<size_t> got = buf->try_next_batch(std::span<uint64_t>(ids).first(1));
    return got.ok() && *got == 1;
  }));
  EXPECT_EQ(ids[0], 1u);
  ASSERT_EQ(buf->try_next_batch(std::span<uint64_t>(ids).first(1)).value(), 1u);
  EXPECT_EQ(ids[0], 2u) << "past the prefetch point (10% of 10)";
  // Two segments of 10 at most are loaded: 25 cannot all be there; what comes back is
  // dense and increasing, and a blocked store again makes it return short, not wait.
  ASSERT_TRUE(eventually([&] { return buf->stats().next_ready; }));
  src.block();
  start = std::chrono::steady_clock::now();
  Result<size_t> some = buf->try_next_batch(ids);
  ASSERT_TRUE(some.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  ASSERT_EQ(*some, 18u) << "the rest of the first segment and all of the second";
  for (size_t i = 0; i < *some; ++i) EXPECT_EQ(ids[i], 3 + i);
  src.release();
  // The blocking call gets the rest once the store answers.
  ASSERT_TRUE(buf->next_batch(std::span<uint64_t>(ids).first(6)).ok());
  EXPECT_EQ(ids[0], 21u);
}

TEST(SegmentBufferTest, TryNextBatchReportsAnUnknownTagAtOnce) {
  FakeRangeSource src;
  auto buf = make_buffer(&src, opts(10));
  std::vector<uint64_t> ids(3);
  ASSERT_FALSE(buf->next_batch(ids).ok());  // the store has said NotFound once
  Result<size_t> got = buf->try_next_batch(ids);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
}

TEST(SegmentBufferTest, StoreErrorIsReportedAndRecoveredFrom) {
  FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o = opts(10);
  o.wait_ms = 100;
  auto buf = make_buffer(&src, o);
  src.set_failure(Status::IoError("connection refused"));
  auto r = buf->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("connection refused"), std::string::npos);
  EXPECT_GE(buf->stats().fetch_failures, 1u);
  src.set_failure(Status::Ok());
  EXPECT_TRUE(eventually([&] { return buf->next().ok(); }));
}

TEST(SegmentBufferTest, UnknownTagIsAClearErrorAtOnce) {
  FakeRangeSource src;
  SegmentBufferOptions o = opts(10);
  o.wait_ms = 5000;
  auto buf = make_buffer(&src, o);
  auto start = std::chrono::steady_clock::now();
  auto r = buf->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("order"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST(SegmentBufferTest, ATagCreatedAfterItWasUnknownIsServed) {
  FakeRangeSource src;
  auto buf = make_buffer(&src, opts(10));
  ASSERT_EQ(buf->next().status().code(), StatusCode::kNotFound);
  // An operator creates it (or recreates it after a store lost it).
  src.add_tag("order", 500);
  EXPECT_TRUE(eventually([&] { return buf->next().ok(); }));
}

TEST(SegmentBufferTest, ExhaustedTagIsAClearErrorAtOnce) {
  FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o = opts(10);
  o.wait_ms = 5000;
  auto buf = make_buffer(&src, o);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(buf->next().ok());
  src.set_failure(Status::OutOfRange("tag 'order' has run past 2^63-1"));
  auto start = std::chrono::steady_clock::now();
  Status last;
  // At most the prefetched segment (10 IDs) is still served, then the error.
  for (int i = 0; i < 100 && last.ok(); ++i) last = buf->next().status();
  EXPECT_EQ(last.code(), StatusCode::kOutOfRange);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST(SegmentBufferTest, StepDoublesForShortSegmentsAndHalvesForLongOnes) {
  FakeRangeSource src;
  src.add_tag("order");
  ManualClock clock(1'700'000'000'000);
  SegmentBufferOptions o = opts(100, 1600);
  o.clock = &clock;
  auto buf = make_buffer(&src, o);
  // A segment's lifetime is measured between fetch completions, so the clock may only
  // move while no fetch is in flight.
  auto settle = [&] { ASSERT_TRUE(eventually([&] { return !buf->stats().fetching; })); };
  // Segments used up at once: each lasted under 15 minutes.
  for (int i = 0; i < 10'000; ++i) ASSERT_TRUE(buf->next().ok());
  settle();
  std::vector<uint64_t> steps = src.steps();
  ASSERT_GE(steps.size(), 6u);
  EXPECT_EQ(steps[0], 100u);
  EXPECT_EQ(steps[1], 200u);
  EXPECT_EQ(steps[2], 400u);
  EXPECT_EQ(steps[3], 800u);
  EXPECT_EQ(steps[4], 1600u);
  EXPECT_EQ(steps[5], 1600u) << "bounded by max_step";
  // Now each segment lasts 31 minutes: the step halves down to the configured one.
  size_t before = src.steps().size();
  for (int round = 0; round < 8; ++round) {
    clock.advance(31 * 60 * 1000);
    const int calls = src.calls();
    while (src.calls() == calls) {
      ASSERT_TRUE(buf->next().ok());
      std::this_thread::yield();
    }
    settle();
  }
  steps = src.steps();
  ASSERT_GT(steps.size(), before + 4);
  EXPECT_LT(steps[before + 1], steps[before - 1]);
  EXPECT_EQ(steps.back(), 100u) << "never below the configured step";
}

TEST(SegmentBufferTest, BatchSpansSegmentsWithoutGapsOrRepeats) {
  FakeRangeSource src;
  src.add_tag("order");
  auto buf = make_buffer(&src, opts(64, 64));
  std::vector<uint64_t> ids(1000);
  ASSERT_TRUE(buf->next_batch(ids).ok());
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i + 1);
  EXPECT_EQ(buf->next().value(), 1001u);
}

TEST(SegmentBufferTest, RejectsBadOptions) {
  FakeRangeSource src;
  EXPECT_FALSE(SegmentBuffer::create(nullptr, opts(10)).ok());
  SegmentBufferOptions o = opts(10);
  o.tag = "bad tag";
  EXPECT_EQ(SegmentBuffer::create(&src, o).status().code(), StatusCode::kInvalidArgument);
  o = opts(0);
  EXPECT_FALSE(SegmentBuffer::create(&src, o).ok());
  o = opts(100, 10);
  EXPECT_FALSE(SegmentBuffer::create(&src, o).ok());
  o = opts(10);
  o.prefetch_at = 0;
  EXPECT_FALSE(SegmentBuffer::create(&src, o).ok());
}

// A store adding 50 ms per allocation: once the step has grown, the prefetch hides the
// latency completely, so no caller waits. Counted, not timed.
TEST(SegmentBufferTest, SlowStoreCausesNoWaitsOnceTheStepIsLargeEnough) {
  FakeRangeSource src;
  src.add_tag("order");
  src.set_latency_ms(50);
  auto buf = make_buffer(&src, opts(1000, 400'000));
  // About 2,500 IDs per ms at most: a busy service, not a tight loop.
  uint64_t waits_at_half = 0;
  std::vector<uint64_t> chunk(2500);
  for (int i = 0; i < 1600; ++i) {
    ASSERT_TRUE(buf->next_batch(chunk).ok());
    if (i == 800) waits_at_half = buf->stats().waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SegmentBufferStats st = buf->stats();
  EXPECT_EQ(st.step, 400'000u) << "the step grew to its bound";
  EXPECT_EQ(st.waits, waits_at_half) << "no waits once the step was large enough";
  EXPECT_GE(waits_at_half, 1u) << "the first call waited for the first segment";
}

// A server holds a buffer per tag for good. A fetch thread that is over must not keep
// its stack mapped until the tag's next fetch (a joinable, unjoined thread does): with
// ten thousand tags that was twenty thousand mappings and their pages.
size_t mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

TEST(SegmentBufferTest, AFetchThatIsOverLeavesNoStackBehind) {
  testing::FakeRangeSource src;
  std::vector<std::unique_ptr<SegmentBuffer>> buffers;
  for (int i = 0; i < 300; ++i) src.add_tag("t" + std::to_string(i));
  const size_t before = mappings();
  for (int i = 0; i < 300; ++i) {
    SegmentBufferOptions o;
    o.tag = "t" + std::to_string(i);
    o.min_step = 1000;
    buffers.push_back(SegmentBuffer::create(&src, o).value());
    ASSERT_TRUE(buffers.back()->next().ok());
  }
  // glibc keeps a few stacks of ended threads for reuse (40 MB); 300 kept would be 600.
  EXPECT_LT(mappings(), before + 100) << "before: " << before;
}

}  // namespace
}  // namespace idforge
