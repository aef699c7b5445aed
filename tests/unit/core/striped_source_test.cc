// StripedSource: residues, failover, and clear errors.
#include "idforge/striped_source.h"

#include <gtest/gtest.h>

#include <set>

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

// A store that hangs rather than refuses: the health check knows it is down, so it is
// asked only when every other store failed, and refills do not wait out its timeout.
TEST(StripedSourceTest, AStoreKnownToBeDownIsAskedOnlyWhenNoOtherAnswers) {
  testing::FakeRangeSource a, b;
  a.add_tag("pay");
  b.add_tag("pay");
  bool a_down = true;
  StripedSource s({&a, &b}, [&](size_t index) { return index == 0 && a_down; });
  for (int i = 0; i < 6; ++i) EXPECT_EQ(s.allocate("pay", 5).value().first % 2, 1u);
  EXPECT_EQ(a.calls(), 0) << "the store known to be down was asked in its turn";
  // Every other store failing, the one known down is still tried (it may be back).
  b.set_failure(Status::Unavailable("b down"));
  EXPECT_EQ(s.allocate("pay", 5).value().first % 2, 0u);
  // Back up: taken in turn again.
  a_down = false;
  b.set_failure(Status::Ok());
  std::set<uint64_t> residues;
  for (int i = 0; i < 4; ++i) residues.insert(s.allocate("pay", 5).value().first % 2);
  EXPECT_EQ(residues.size(), 2u);
}

TEST(StripedSourceTest, UnknownTagIsNotFound) {
  testing::FakeRangeSource a;
  StripedSource s({&a});
  EXPECT_EQ(s.allocate("nope", 5).status().code(), StatusCode::kNotFound);
  StripedSource empty({});
  EXPECT_FALSE(empty.allocate("x", 1).ok());
}

// Tinyid's databases each hand out the numbers of their own remainder of delta: their
// ranges must pass unchanged, or two databases' residues would be mixed up.
TEST(StripedSourceTest, RangesAStoreStripedItselfPassUnchanged) {
  class SelfStriped final : public RangeSource {
   public:
    explicit SelfStriped(uint64_t remainder) : remainder_(remainder) {}
    Result<Segment> allocate(std::string_view, uint64_t step) override {
      const Segment s{next_ + remainder_, step, 2, "db"};
      next_ += 2 * step;
      return s;
    }

   private:
    uint64_t remainder_;
    uint64_t next_ = 10;
  };
  SelfStriped even(0), odd(1);
  StripedSource s({&even, &odd});
  const Segment a = s.allocate("t", 5).value();
  const Segment b = s.allocate("t", 5).value();
  EXPECT_EQ(a.first, 10u);
  EXPECT_EQ(a.stride, 2u);
  EXPECT_EQ(a.identity, "db");
  EXPECT_EQ(b.first, 11u);
  EXPECT_EQ(b.stride, 2u);
}

}  // namespace
}  // namespace idforge
