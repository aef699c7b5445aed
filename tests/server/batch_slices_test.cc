// Large batches made in slices (ServiceConfig::batch_slice; resp_batch.cc,
// http_batch.h): a session hands the loop back (kFlush) between slices, so the loop can
// serve other connections, and the answer is the same as a batch made in one go: the
// right count of distinct, increasing IDs, before the answers of the requests after it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/http_session.h"
#include "server/http_test_support.h"
#include "server/id_service.h"
#include "server/resp_session.h"
#include "server/resp_test_support.h"

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

// 0: every batch in one go (the comparison); 3: slices smaller than every batch here.
INSTANTIATE_TEST_SUITE_P(SliceSizes, BatchSlicesTest, ::testing::Values(0, 3),
                         [](const ::testing::TestParamInfo<uint64_t>& param_info) {
                           return param_info.param == 0
                                      ? std::string("OneGo")
                                      : "SlicesOf" + std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace idforge::server
