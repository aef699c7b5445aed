// StripedSource: residues, failover, and clear errors.
#include "idforge/striped_source.h"

#include <gtest/gtest.h>

#include "fake_range_source.h"

namespace idforge {
namespace {

TEST(StripedSourceTest, EachStoreKeepsItsOwnResidue) {
  testing::FakeRangeSource a, b;
  a.add_tag("pay");
  b.add_tag("pay");
  StripedSource s({&a, &b});
  for (int i = 0; i < 6; ++i) {
    Segment seg = s.allocate("pay", 10).value();
    EXPECT_EQ(seg.stride, 2u);
    EXPECT_EQ(seg.count, 10u);
    // Store 0 gives even IDs, store 1 odd ones, alternating.
    EXPECT_EQ(seg.first % 2, static_cast<uint64_t>(i % 2)) << i;
  }
  // Store 0's third range is numbers 21..30 -> IDs 42, 44, ..., 60.
  EXPECT_EQ(a.steps().size(), 3u);
}

TEST(StripedSourceTest, SkipsAStoreThatIsDownAndReportsAllWhenNoneAnswers) {
  testing::FakeRangeSource a, b;
  a.add_tag("pay");
  b.add_tag("pay");
  StripedSource s({&a, &b});
  a.set_failure(Status::Unavailable("a down"));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s.allocate("pay", 5).value().first % 2, 1u);
  b.set_failure(Status::IoError("b down"));
  auto r = s.allocate("pay", 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("a down"), std::string::npos);
  EXPECT_NE(r.status().message().find("b down"), std::string::npos);
}

TEST(StripedSourceTest, UnknownTagIsNotFound) {
  testing::FakeRangeSource a;
  StripedSource s({&a});
  EXPECT_EQ(s.allocate("nope", 5).status().code(), StatusCode::kNotFound);
  StripedSource empty({});
  EXPECT_FALSE(empty.allocate("x", 1).ok());
}

}  // namespace
}  // namespace idforge
