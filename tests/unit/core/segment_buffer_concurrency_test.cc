// SegmentBuffer under threads: 8 x 1,000,000 IDs distinct and increasing per thread,
// with segment switches happening all the time. Named *Concurrency* for the TSan run.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "fake_range_source.h"
#include "idforge/segment_buffer.h"
#include "idforge/striped_source.h"

namespace idforge {
namespace {

void run_threads(SegmentBuffer& buf, int threads, size_t per_thread, bool batches,
                 std::vector<std::vector<uint64_t>>* out) {
  out->assign(static_cast<size_t>(threads), {});
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto& mine = (*out)[static_cast<size_t>(t)];
      mine.reserve(per_thread);
      std::vector<uint64_t> chunk(100);
      while (mine.size() < per_thread) {
        if (batches) {
          ASSERT_TRUE(buf.next_batch(chunk).ok());
          mine.insert(mine.end(), chunk.begin(), chunk.end());
        } else {
          auto id = buf.next();
          ASSERT_TRUE(id.ok()) << id.status().to_string();
          mine.push_back(*id);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
}

bool all_distinct(const std::vector<std::vector<uint64_t>>& per_thread) {
  std::vector<uint64_t> all;
  for (const auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  return std::adjacent_find(all.begin(), all.end()) == all.end();
}

TEST(SegmentBufferConcurrency, EightThreadsMillionEachDistinctAndIncreasing) {
  testing::FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o;
  o.tag = "order";
  o.min_step = 5000;  // small segments: many switches under contention
  o.max_step = 20'000;
  auto buf = SegmentBuffer::create(&src, o).value();
  std::vector<std::vector<uint64_t>> ids;
  run_threads(*buf, 8, 1'000'000, /*batches=*/false, &ids);
  for (const auto& v : ids) {
    ASSERT_EQ(v.size(), 1'000'000u);
    ASSERT_TRUE(std::is_sorted(v.begin(), v.end()));
    ASSERT_EQ(std::adjacent_find(v.begin(), v.end()), v.end());
  }
  EXPECT_TRUE(all_distinct(ids));
  EXPECT_GT(buf->stats().switches, 100u);
}

TEST(SegmentBufferConcurrency, BatchesWithTinySegmentsStayDistinct) {
  testing::FakeRangeSource src;
  src.add_tag("order");
  SegmentBufferOptions o;
  o.tag = "order";
  o.min_step = 7;  // a batch of 100 spans many segments
  o.max_step = 7;
  auto buf = SegmentBuffer::create(&src, o).value();
  std::vector<std::vector<uint64_t>> ids;
  run_threads(*buf, 4, 20'000, /*batches=*/true, &ids);
  EXPECT_TRUE(all_distinct(ids));
}

TEST(SegmentBufferConcurrency, StripedOverThreeStoresWithOneDownStaysDistinct) {
  testing::FakeRangeSource a, b, c;
  for (auto* s : {&a, &b, &c}) s->add_tag("order");
  StripedSource striped({&a, &b, &c});
  SegmentBufferOptions o;
  o.tag = "order";
  o.min_step = 1000;
  o.max_step = 1000;
  auto buf = SegmentBuffer::create(&striped, o).value();
  std::vector<std::vector<uint64_t>> ids;
  run_threads(*buf, 4, 50'000, false, &ids);
  b.set_failure(Status::Unavailable("store b is down"));
  std::vector<std::vector<uint64_t>> more;
  run_threads(*buf, 4, 50'000, false, &more);
  // While b (residue 1) is down, its IDs can only come from the at most two segments
  // of 1000 it had already handed to the buffer; a and c carry the rest.
  size_t from_b = 0, from_others = 0;
  for (const auto& v : more) {
    for (uint64_t id : v) (id % 3 == 1 ? from_b : from_others)++;
  }
  EXPECT_LE(from_b, 2000u);
  EXPECT_EQ(from_b + from_others, 200'000u);
  for (auto& v : more) ids.push_back(std::move(v));
  EXPECT_TRUE(all_distinct(ids));
  EXPECT_GT(buf->stats().fetches, 10u);
}

}  // namespace
}  // namespace idforge
