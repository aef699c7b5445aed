// Large batches made in slices (ServiceConfig::batch_slice; resp_batch.cc,
// http_batch.h): a session hands the loop back (kFlush) between slices, so the loop can
// serve other connections, and the answer is the same as a batch made in one go: the
// right count of distinct, increasing IDs, before the answers of the requests after it.
// Segment batches are taken whole and written in slices.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/http/http_session.h"
#include "server/http_test_support.h"
#include "server/resp/resp_session.h"
#include "server/resp_test_support.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

namespace fs = std::filesystem;

class BatchSlicesTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "idforge-slices-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ServiceConfig c;
    c.data_dir = dir_;
    c.registry_url = "static:0/1";
    c.store_urls = {"sqlite:" + dir_ + "/segments.db"};
    c.batch_slice = GetParam();
    Result<std::unique_ptr<IdService>> started = IdService::start(c);
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    service_ = std::move(started).value();
    TagSpec order;
    order.name = "order";
    ASSERT_TRUE(service_->create_tag(order).ok());
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(dir_);
  }

  // kFlush steps one batch of `count` IDs should take: making, then writing.
  int slices_for(uint64_t count) const {
    const uint64_t slice = GetParam();
    if (slice == 0 || count <= slice) return 0;
    return static_cast<int>(2 * ((count + slice - 1) / slice));
  }

  std::string dir_;
  std::unique_ptr<IdService> service_;
};

TEST_P(BatchSlicesTest, RespBatchComesInSlicesThenThePipelinedPing) {
  std::unique_ptr<Session> session = make_resp_session_factory(*service_)();
  resp_test::Driven run = resp_test::drive(*session, "ID.SNOWFLAKE 10\r\nID.UUID7 7\r\nPING\r\n");
  EXPECT_FALSE(run.closed);
  EXPECT_EQ(run.leftover, 0u);
  // Each slice's step hands the loop back: with slices of 3, 10 IDs take 4 steps to
  // make and 4 to write, 7 UUIDs 3 and 3.
  EXPECT_EQ(run.flushes, slices_for(10) + slices_for(7));
  const std::vector<resp_test::Reply> replies = resp_test::replies_of(run.out);
  ASSERT_EQ(replies.size(), 3u) << run.out;
  ASSERT_EQ(replies[0].items.size(), 10u);
  for (size_t i = 1; i < 10; ++i) {
    EXPECT_LT(replies[0].items[i - 1].number(), replies[0].items[i].number());
  }
  ASSERT_EQ(replies[1].items.size(), 7u);
  std::set<std::string> uuids;
  for (const resp_test::Reply& r : replies[1].items) uuids.insert(r.text);
  EXPECT_EQ(uuids.size(), 7u);
  EXPECT_EQ(replies[2].text, "PONG");
}

TEST_P(BatchSlicesTest, RespUlidWithoutCountAndTransactionsAreNotSliced) {
  std::unique_ptr<Session> session = make_resp_session_factory(*service_)();
  resp_test::Driven run = resp_test::drive(*session, "MULTI\r\nID.ULID 8\r\nEXEC\r\nID.ULID\r\n");
  EXPECT_EQ(run.flushes, 0);  // EXEC answers its queue at once; one ULID is never sliced
  const std::vector<resp_test::Reply> replies = resp_test::replies_of(run.out);
  ASSERT_EQ(replies.size(), 4u) << run.out;
  ASSERT_EQ(replies[2].items.size(), 1u);
  EXPECT_EQ(replies[2].items[0].items.size(), 8u);
  EXPECT_EQ(replies[3].text.size(), 26u);
}

TEST_P(BatchSlicesTest, HttpBatchComesInSlicesThenTheNextRequestThenClose) {
  std::unique_ptr<Session> session = make_http_session_factory(*service_)();
  const std::string requests = http_test::get("/v1/snowflake?count=10") +
                               http_test::get("/v1/ulid?count=5&format=text") +
                               http_test::get("/v1/uuid7?count=4", "Connection: close\r\n");
  http_test::Driven d = http_test::drive(*session, requests);
  EXPECT_EQ(d.last, Session::Next::kClose);
  EXPECT_EQ(d.flushes, slices_for(10) + slices_for(5) + slices_for(4));
  ASSERT_EQ(d.responses.size(), 3u) << d.out;
  EXPECT_EQ(d.responses[0].status, 200);
  const std::vector<uint64_t> ids = http_test::ids_of(d.responses[0]);
  EXPECT_EQ(ids.size(), 10u);
  http_test::expect_increasing(ids);
  EXPECT_EQ(d.responses[1].status, 200);
  EXPECT_EQ(d.responses[1].body.size(), 5u * 27);  // five ULIDs, one a line
  EXPECT_EQ(d.responses[2].json()["ids"].size(), 4u);
  EXPECT_EQ(d.responses[2].header("connection"), "close");
}

// A segment batch the tag's buffer holds is taken whole, then written in slices: only the
// writing hands the loop back. The first request waits on the store (a job, not sliced).
TEST_P(BatchSlicesTest, RespSegmentArrayIsWrittenInSlices) {
  std::unique_ptr<Session> session = make_resp_session_factory(*service_)();
  resp_test::Driven first = resp_test::drive(*session, "ID.NEXT order\r\n");
  ASSERT_EQ(first.out, ":1\r\n");
  resp_test::Driven run =
      resp_test::drive(*session, "ID.NEXT order 10\r\nINCRBY order 4\r\nPING\r\n");
  EXPECT_EQ(run.jobs, 0);
  EXPECT_EQ(run.flushes, slices_for(10) / 2);  // written in slices; INCRBY answers one number
  const std::vector<resp_test::Reply> replies = resp_test::replies_of(run.out);
  ASSERT_EQ(replies.size(), 3u) << run.out;
  ASSERT_EQ(replies[0].items.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(replies[0].items[i].number(), 2 + i);
  EXPECT_EQ(replies[1].number(), 15u);  // 12..15
  EXPECT_EQ(replies[2].text, "PONG");
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 200), 3u);
}

// A batch the buffer cannot hold (a step of 3) waits on the store off the loop, as before:
// a job, not slices, with every ID once.
TEST_P(BatchSlicesTest, SegmentBatchesTheBufferCannotHoldWaitOnTheStore) {
  TagSpec tiny;
  tiny.name = "tiny";
  tiny.step = 3;
  ASSERT_TRUE(service_->create_tag(tiny).ok());
  std::unique_ptr<Session> resp = make_resp_session_factory(*service_)();
  resp_test::Driven run = resp_test::drive(*resp, "ID.NEXT tiny 10\r\n");
  EXPECT_EQ(run.jobs, 1);
  EXPECT_EQ(run.flushes, 0);
  const std::vector<resp_test::Reply> replies = resp_test::replies_of(run.out);
  ASSERT_EQ(replies.size(), 1u) << run.out;
  std::set<uint64_t> seen;
  for (const resp_test::Reply& item : replies[0].items) seen.insert(item.number());
  EXPECT_EQ(seen.size(), 10u);
  std::unique_ptr<Session> http = make_http_session_factory(*service_)();
  http_test::Driven d = http_test::drive(*http, http_test::get("/v1/segment/tiny?count=30"));
  EXPECT_EQ(d.blocking, 1);
  EXPECT_EQ(d.flushes, 0);
  ASSERT_EQ(d.responses.size(), 1u) << d.out;
  for (uint64_t id : http_test::ids_of(d.responses[0])) EXPECT_TRUE(seen.insert(id).second);
  EXPECT_EQ(seen.size(), 40u);
}

TEST_P(BatchSlicesTest, HttpSegmentBatchIsFormattedInSlices) {
  std::unique_ptr<Session> session = make_http_session_factory(*service_)();
  http_test::Driven first = http_test::drive(*session, http_test::get("/v1/segment/order"));
  EXPECT_EQ(first.blocking, 1);
  const std::string requests = http_test::get("/v1/segment/order?count=10") +
                               http_test::get("/v1/segment/order?count=4&format=text");
  http_test::Driven d = http_test::drive(*session, requests);
  EXPECT_EQ(d.blocking, 0);
  EXPECT_EQ(d.flushes, slices_for(10) / 2 + slices_for(4) / 2);
  ASSERT_EQ(d.responses.size(), 2u) << d.out;
  EXPECT_EQ(d.responses[0].status, 200);
  EXPECT_EQ(d.responses[0].json()["tag"], "order");
  const std::vector<uint64_t> ids = http_test::ids_of(d.responses[0]);
  ASSERT_EQ(ids.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(ids[i], 2 + i);
  EXPECT_EQ(d.responses[1].body, "12\n13\n14\n15\n");
}

// 0: every batch in one go (the comparison); 3: slices smaller than every batch here.
INSTANTIATE_TEST_SUITE_P(SliceSizes, BatchSlicesTest, ::testing::Values(0, 3),
                         [](const ::testing::TestParamInfo<uint64_t>& param_info) {
                           return param_info.param == 0
                                      ? std::string("OneGo")
                                      : "SlicesOf" + std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace idforge::server
