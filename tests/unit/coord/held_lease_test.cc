// HeldLease: a lease whose safety rests on its start delay refuses a TTL too short for
// the generator's drift, and the slot's mark carries its layout through a registry.
#include "coord/held_lease.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coord/local/slot_files.h"
#include "core/snowflake_mark.h"

namespace idforge::coord {
namespace {

// A registry that hands out slot 0 with a start delay, as Redis does.
class DelayedRegistry final : public WorkerRegistry {
 public:
  explicit DelayedRegistry(int64_t ttl_ms) : ttl_ms_(ttl_ms) {}
  Result<Lease> acquire(const std::string&) override {
    Lease lease;
    lease.ttl_ms = ttl_ms_;
    lease.start_delay_ms = ttl_ms_;
    lease.token = "t";
    return lease;
  }
  Status renew(const Lease&, int64_t) override { return Status::Ok(); }
  Status release(const Lease&) override { return Status::Ok(); }
  Result<std::vector<SlotStatus>> status() override { return std::vector<SlotStatus>{}; }
  Status force_release(uint64_t) override { return Status::Ok(); }
  std::string describe() const override { return "delayed"; }

 private:
  int64_t ttl_ms_;
};

Result<std::unique_ptr<HeldLease>> hold(int64_t ttl_ms, bool leases_expire = true) {
  OpenedRegistry opened{std::make_unique<DelayedRegistry>(ttl_ms),
                        lease_node_fields(Layout::twitter()).value(),
                        mark_layout_key(Layout::twitter()), leases_expire};
  return HeldLease::acquire(std::move(opened), "me");
}

TEST(HeldLeaseTest, ATtlTooShortForTheDriftIsRefusedNamingBoth) {
  auto held = hold(1500);
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  SnowflakeOptions o;
  o.max_drift_ms = 1000;
  Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gen.status().message().find("ttl_ms 1500"), std::string::npos)
      << gen.status().message();
  EXPECT_NE(gen.status().message().find("max_drift_ms 1000"), std::string::npos);
}

TEST(HeldLeaseTest, ATtlLongEnoughOrAPolicyThatDoesNotBorrowIsAccepted) {
  {
    auto held = hold(600);
    ASSERT_TRUE(held.ok());
    SnowflakeOptions o;
    o.max_drift_ms = 100;  // fenced at 600 - 50 - 100 = 450 ms, above half the TTL
    Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  }
  auto held = hold(600);
  ASSERT_TRUE(held.ok());
  SnowflakeOptions o;
  o.policy = RollbackPolicy::kWait;  // never ahead of its clock
  Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
}

TEST(HeldLeaseTest, ARideOutReserveKeepsTheMarkTheWholeFenceWindowAhead) {
  SnowflakeOptions o;
  o.policy = RollbackPolicy::kWait;
  {
    auto held = hold(1500);
    ASSERT_TRUE(held.ok());
    ASSERT_TRUE((*held)->make_generator(o, MarkReserve::kRideOutOutages).ok());
    EXPECT_EQ((*held)->reserve_ms(), (*held)->keeper().fence_after_ms());
    EXPECT_EQ((*held)->reserve_ms(), 1425);
  }
  {
    auto held = hold(1000);  // what a one-shot command asks for: the generator's default
    ASSERT_TRUE(held.ok());
    ASSERT_TRUE((*held)->make_generator(o).ok());
    EXPECT_EQ((*held)->reserve_ms(), SnowflakeOptions{}.reserve_ms);
  }
  // A lease that dies with the process (local:, static:) has no coordinator outage to
  // ride out, and a crash restart should not wait for a far mark.
  auto held = hold(1500, /*leases_expire=*/false);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE((*held)->make_generator(o, MarkReserve::kRideOutOutages).ok());
  EXPECT_EQ((*held)->reserve_ms(), SnowflakeOptions{}.reserve_ms);
}

TEST(HeldLeaseTest, AGeneratorOfAnotherLayoutIsRefused) {
  auto held = hold(600);
  ASSERT_TRUE(held.ok());
  SnowflakeOptions o;
  o.policy = RollbackPolicy::kWait;
  o.layout = Layout::preset("discord").value();
  Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
}

class HeldLeaseFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-held-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  // Issues IDs on a lease of the local registry in dir_: {first, last}.
  Result<std::pair<uint64_t, uint64_t>> run(const Layout& layout, int64_t max_drift_ms,
                                            size_t count = 5000) {
    Result<OpenedRegistry> opened = open_worker_registry("local:" + dir_, layout, "test", dir_);
    if (!opened.ok()) return opened.status();
    Result<std::unique_ptr<HeldLease>> held = HeldLease::acquire(std::move(*opened), "me");
    if (!held.ok()) return held.status();
    SnowflakeOptions o;
    o.layout = layout;
    o.max_drift_ms = max_drift_ms;
    o.max_startup_wait_ms = 0;
    Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
    if (!gen.ok()) return gen.status();
    std::vector<uint64_t> ids(count);
    if (count > 0) IDFORGE_RETURN_IF_ERROR((*gen)->next_batch(ids));
    IDFORGE_RETURN_IF_ERROR((*held)->release());
    if (count == 0) return std::make_pair(uint64_t{0}, uint64_t{0});
    return std::make_pair(ids.front(), ids.back());
  }
  std::string mark_file() const {
    std::ifstream in(slot_mark_path(dir_, 0));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string dir_;
};

TEST_F(HeldLeaseFilesTest, TheSlotsMarkCarriesItsLayoutAcrossALayoutChange) {
  Result<std::pair<uint64_t, uint64_t>> first = run(Layout::twitter(), 1000);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_NE(mark_file().find("\nlayout " + mark_layout_key(Layout::twitter()) + "\n"),
            std::string::npos)
      << mark_file();
  // The same fields from an epoch 3 s later: the same time is a smaller ID, so the new
  // layout starts 3 s on (it may borrow that much here).
  Layout later = Layout::parse("time:41,datacenter:5,worker:5,sequence:12",
                               Layout::twitter().epoch_ms() + 3000)
                     .value();
  Result<std::pair<uint64_t, uint64_t>> second = run(later, 10'000);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_GT(second->first, first->second);
  EXPECT_NE(mark_file().find("\nlayout " + mark_layout_key(later) + "\n"), std::string::npos)
      << mark_file();
  // And back: twitter starts above what the later-epoch run issued.
  Result<std::pair<uint64_t, uint64_t>> third = run(Layout::twitter(), 10'000);
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_GT(third->first, second->second);
}

// A run under a new layout that stops before issuing anything at or above the mark it
// found leaves that mark in the layout it was written in: relabelled with its own, the
// mark would be read as a smaller ID by the next start under the new layout, which
// would then issue IDs the first run issued (model/snowflake.pml, snowflake.etcd with
// NO_STOP_LAYOUT: the repeat SPIN found).
TEST_F(HeldLeaseFilesTest, AStopThatIssuedNothingKeepsTheMarksLayout) {
  Result<std::pair<uint64_t, uint64_t>> first = run(Layout::twitter(), 1000);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Layout later = Layout::parse("time:41,datacenter:5,worker:5,sequence:12",
                               Layout::twitter().epoch_ms() + 3000)
                     .value();
  ASSERT_TRUE(run(later, 10'000, /*count=*/0).ok());
  EXPECT_NE(mark_file().find("\nlayout " + mark_layout_key(Layout::twitter()) + "\n"),
            std::string::npos)
      << mark_file();
  Result<std::pair<uint64_t, uint64_t>> third = run(later, 10'000);
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_GT(third->first, first->second);
}

}  // namespace
}  // namespace idforge::coord
