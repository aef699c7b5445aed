// SnowflakePart on a local lease in a temporary directory: its own thread keeps the
// time reservation ahead of the clock with no request asking, and readiness follows the
// lease.
#include "server/service/service_snowflake.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace idforge::server {
namespace {

using namespace std::chrono_literals;

class SnowflakePartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-snowflake-part-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    config_.data_dir = dir_;
    config_.identity = "test:snowflake";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  ServiceConfig config_;
};

TEST_F(SnowflakePartTest, KeepsTheReservationAheadWithNoRequestAsking) {
  Result<std::unique_ptr<SnowflakePart>> started = SnowflakePart::start(config_, "test:snowflake");
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  SnowflakePart& part = **started;
  std::vector<uint64_t> ids(1000);
  ASSERT_TRUE(part.next(ids).ok());
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), ids.size());

  // Past the whole first reservation (1 s) with no request: the part's thread renews.
  std::this_thread::sleep_for(1500ms);
  ServiceStatus s;
  part.fill_status(s);
  EXPECT_GT(s.reserved_ahead_ms, 0) << "the reservation ran out with nobody renewing it";
  EXPECT_EQ(s.reservation_error, "");
  EXPECT_GT(s.counters.high_water_stores, 1u);
  EXPECT_TRUE(s.snowflake_ready.ready) << s.snowflake_ready.why;
  const PartReadiness ready = part.readiness();
  EXPECT_TRUE(ready.ready) << ready.why;
  ASSERT_TRUE(part.next(ids).ok());

  ASSERT_TRUE(part.stop().ok());
  ASSERT_TRUE(part.stop().ok()) << "idempotent";
  const PartReadiness stopped = part.readiness();
  EXPECT_FALSE(stopped.ready);
  EXPECT_EQ(stopped.why, "worker-id lease is stopped");
  EXPECT_FALSE(part.next(ids).ok()) << "a stopped part issues nothing";
}

TEST_F(SnowflakePartTest, ALeaseThatCannotBeTakenIsAnError) {
  config_.registry_url = "static:99/99";  // beyond twitter's 5-bit fields
  EXPECT_FALSE(SnowflakePart::start(config_, "test:snowflake").ok());
}

}  // namespace
}  // namespace idforge::server
