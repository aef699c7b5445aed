// INCR, INCRBY and the refused increments over RESP (src/server/resp/resp_increment.cc),
// against a real IdService: INCRBY answers the last of n contiguous IDs, also when they
// span ranges fetched while the request waits, and refuses with ID.NEXT's name when the
// IDs are not contiguous (striped stores; a range another server took in between).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/resp/resp_session.h"
#include "server/resp_test_support.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

using resp_test::drive;
using resp_test::Driven;
using resp_test::numbers;
using resp_test::replies_of;
using resp_test::Reply;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class RespIncrementTest : public resp_test::RespSessionFixture {};

TEST_F(RespIncrementTest, IncrbyAnswersTheLastOfContiguousIds) {
  // The first request of the tag waits on the store: a job answers it.
  Driven first = send("INCRBY order 5\r\n");
  EXPECT_EQ(first.jobs, 1);
  EXPECT_EQ(first.out, ":1005\r\n");  // the caller owns 1001..1005, as after Redis's INCRBY
  EXPECT_EQ(send("INCR order\r\n").out, ":1006\r\n");
  EXPECT_EQ(send("incrby order 1\r\n").out, ":1007\r\n");
  EXPECT_EQ(send("*3\r\n$6\r\nINCRBY\r\n$5\r\norder\r\n$2\r\n10\r\n").out, ":1017\r\n");
  EXPECT_THAT(numbers(ask_one("ID.NEXT order 2\r\n")), ElementsAre(1018, 1019));
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 19u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 200), 5u);
}

TEST_F(RespIncrementTest, IncrbyOverSeveralRangesOfOneServerWaitsAndStaysExact) {
  // "tiny" has a step of 3: 7 IDs come from three ranges or more, fetched while the
  // request waits; one server's ranges follow each other, so the answer is exact.
  Driven run = send("INCRBY tiny 7\r\nINCR tiny\r\nINCRBY tiny 9\r\nINCR tiny\r\n");
  EXPECT_GE(run.jobs, 1);
  EXPECT_EQ(run.out, ":7\r\n:8\r\n:17\r\n:18\r\n");
}

TEST_F(RespIncrementTest, WhatCannotBeExactIsRefusedWithTheReasonAndTakesNoId) {
  Driven run = send(
      "INCRBY order 0\r\n"
      "INCRBY order -3\r\n"
      "INCRBY order x\r\n"
      "INCRBY order 1.5\r\n"
      "INCRBY order 99999999999999999999\r\n"
      "INCRBY order 10001\r\n"
      "INCRBY order\r\n"
      "DECR order\r\n"
      "DECRBY order 2\r\n"
      "INCRBYFLOAT order 1.5\r\n"
      "GET order\r\n"
      "SET order 5\r\n"
      "INCRBY nosuch 2\r\n");
  std::vector<Reply> r = replies_of(run.out);
  ASSERT_EQ(r.size(), 13u) << run.out;
  for (const Reply& reply : r) EXPECT_EQ(reply.type, '-') << reply.text;
  EXPECT_EQ(r[0].text,
            "ERR IDs never go down or repeat: INCRBY takes an increment of 1 or more, got 0");
  EXPECT_EQ(r[1].text,
            "ERR IDs never go down or repeat: INCRBY takes an increment of 1 or more, got -3");
  EXPECT_EQ(r[2].text, "ERR value is not an integer or out of range");
  EXPECT_EQ(r[3].text, "ERR value is not an integer or out of range");
  EXPECT_EQ(r[4].text, "ERR value is not an integer or out of range");
  EXPECT_EQ(r[5].text, "ERR out_of_range: count 10001 is above the limit of 10000 per request");
  EXPECT_EQ(r[6].text, "ERR wrong number of arguments for 'incrby' command");
  EXPECT_THAT(r[7].text, StartsWith("ERR IDs never go down: DECR is not served;"));
  EXPECT_THAT(r[8].text, StartsWith("ERR IDs never go down: DECRBY is not served;"));
  EXPECT_THAT(r[9].text, StartsWith("ERR IDs are whole numbers: INCRBYFLOAT is not served;"));
  EXPECT_THAT(r[10].text, StartsWith("ERR IDs are not stored values: GET is not served;"));
  EXPECT_THAT(r[11].text, StartsWith("ERR IDs are not stored values: SET is not served;"));
  EXPECT_THAT(r[12].text, StartsWith("ERR not_found: "));
  // Nothing was taken: the tag's first ID is still next.
  EXPECT_EQ(send("INCR order\r\n").out, ":1001\r\n");
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 1u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 400), 10u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 404), 1u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kRespOther, 400), 2u);  // GET, SET
}

// Two stores: store i of 2 hands out only IDs = i mod 2, so no two IDs of a range are
// contiguous and INCRBY n > 1 can never be exact.
class RespIncrementStripedTest : public resp_test::RespSessionFixture {
 protected:
  void configure(ServiceConfig& c) override {
    c.store_urls = {"sqlite:" + dir_ + "/a.db", "sqlite:" + dir_ + "/b.db"};
  }
};

TEST_F(RespIncrementStripedTest, IncrbyIsRefusedNamingIdNextAndItsIdsAreSkipped) {
  const Reply refused = ask_one("INCRBY order 5\r\n");
  ASSERT_EQ(refused.type, '-');
  EXPECT_EQ(refused.text,
            "ERR IDs not contiguous: the 5 IDs taken from tag 'order' cross a range boundary or "
            "come from striped stores, so INCRBY cannot answer them as one value; they are "
            "skipped. Use ID.NEXT order 5, which lists the IDs it takes");
  // The five were taken (a gap, never a duplicate); INCR and ID.NEXT go on past them.
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 5u);
  const Reply one = ask_one("INCRBY order 1\r\n");
  ASSERT_EQ(one.type, ':') << one.text;
  const std::vector<uint64_t> five = numbers(ask_one("ID.NEXT order 5\r\n"));
  ASSERT_EQ(five.size(), 5u);
  std::set<uint64_t> seen(five.begin(), five.end());
  seen.insert(one.number());
  EXPECT_EQ(seen.size(), 6u);
  for (uint64_t id : seen) EXPECT_GT(id, 1000u);
}

// Two servers on one SQLite store, as two nodes of a fleet: each takes its own ranges,
// so IDs one server hands out jump where the other took a range in between.
TEST_F(RespIncrementTest, IncrbyAcrossARangeAnotherServerTookIsRefused) {
  const auto settle = [](IdService& service) {
    // Until the tag's buffers are loaded and no fetch is under way.
    for (int i = 0; i < 500; ++i) {
      const ServiceStatus s = service.status();
      if (!s.tags.empty() && s.tags[0].stats.next_ready && !s.tags[0].stats.fetching) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    FAIL() << "the tag's buffers did not settle";
  };
  EXPECT_EQ(send("INCR tiny\r\n").out, ":1\r\n");
  settle(*service_);  // this server holds two ranges from 1

  ServiceConfig c;
  c.data_dir = dir_ + "/other";
  c.registry_url = "static:0/2";
  c.store_urls = {"sqlite:" + dir_ + "/segments.db"};
  c.identity = "test:resp-other";
  Result<std::unique_ptr<IdService>> other = IdService::start(std::move(c));
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  auto other_session = make_resp_session_factory(**other)();
  const std::vector<Reply> taken = replies_of(drive(*other_session, "INCR tiny\r\n").out);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_GT(taken[0].number(), 3u);  // past this server's first range
  settle(**other);

  // Within this server's first range: exact.
  EXPECT_EQ(send("INCRBY tiny 2\r\n").out, ":3\r\n");
  // Past the ranges this server holds: the next one comes after the other server's.
  const Reply refused = ask_one("INCRBY tiny 40\r\n");
  ASSERT_EQ(refused.type, '-');
  EXPECT_THAT(refused.text, StartsWith("ERR IDs not contiguous: the 40 IDs taken from tag 'tiny'"));
  EXPECT_THAT(refused.text, HasSubstr("Use ID.NEXT tiny 40"));
  // ID.NEXT takes the same kind of span and lists it.
  const Reply listed = ask_one("ID.NEXT tiny 40\r\n");
  ASSERT_EQ(listed.type, '*');
  EXPECT_EQ(listed.items.size(), 40u);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 1u + 2u + 40u + 40u);
}

}  // namespace
}  // namespace idforge::server
