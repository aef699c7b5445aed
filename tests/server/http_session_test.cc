// The HTTP session as a connection sees it: keep-alive and close, HTTP/1.0, HEAD,
// pipelining (also around a request that waits on the store), bytes arriving one at a
// time, protocol errors, timeouts, 404/405 and the web page.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/http_test_support.h"

namespace idforge::server::http_test {
namespace {

using ::testing::HasSubstr;

class HttpSessionTest : public HttpServiceTest {};

TEST_F(HttpSessionTest, WrongMethodsAre405WithAllow) {
  Response r = one("DELETE /v1/snowflake HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.error_code(), "method_not_allowed");
  EXPECT_EQ(r.header("allow"), "GET, HEAD");
  EXPECT_EQ(one("POST /v1/decode/1 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").status, 405);
  EXPECT_EQ(service_->metrics().requests(0, Route::kSnowflake, 405), 1u);
  start("tok");
  Response admin = one("DELETE /v1/admin/tags HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(admin.status, 405);
  EXPECT_EQ(admin.header("allow"), "GET, HEAD, POST");
}

TEST_F(HttpSessionTest, UnknownRoutesAre404) {
  for (std::string_view target : {"/v2/snowflake", "/v1/snowflake/", "/v1", "/nope.js",
                                  "/v1/decode", "/a/b/c/d/e/f/g/h/i/j", "/v1/%zz"}) {
    Response r = one_get(target);
    EXPECT_EQ(r.status, r.error_code() == "invalid_argument" ? 400 : 404) << target;
    EXPECT_FALSE(r.error_code().empty()) << target;
  }
  EXPECT_EQ(one_get("/v2/snowflake").error_code(), "not_found");
  EXPECT_GE(service_->metrics().requests(0, Route::kNotFound, 404), 5u);
}

TEST_F(HttpSessionTest, TheWebPageIsServed) {
  Response index = one_get("/");
  ASSERT_EQ(index.status, 200);
  EXPECT_THAT(index.header("content-type"), StartsWith("text/html"));
  EXPECT_FALSE(index.body.empty());
  EXPECT_EQ(one_get("/index.html").body, index.body);
  Response post = one("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.header("allow"), "GET, HEAD");
  EXPECT_EQ(service_->metrics().requests(0, Route::kWeb, 200), 2u);
}

TEST_F(HttpSessionTest, HeadAnswersHeadersOnly) {
  std::unique_ptr<Session> session = factory_();
  Driven d = drive(*session,
                   "HEAD /v1/snowflake?count=2 HTTP/1.1\r\nHost: t\r\n\r\n" + get("/healthz"), {0});
  ASSERT_EQ(d.responses.size(), 2u);
  EXPECT_EQ(d.responses[0].status, 200);
  EXPECT_GT(std::stoul(d.responses[0].header("content-length")), 40u);
  EXPECT_EQ(d.responses[0].body, "");
  EXPECT_EQ(d.responses[1].body, "ok\n");  // right after the bodiless answer
  EXPECT_THAT(d.out, HasSubstr("\r\n\r\nHTTP/1.1 200 OK\r\n"));
}

TEST_F(HttpSessionTest, ConnectionCloseAndHttp10) {
  std::unique_ptr<Session> session = factory_();
  Driven d = drive(*session, get("/healthz", "Connection: close\r\n") + get("/healthz"));
  EXPECT_EQ(d.last, Next::kClose);
  ASSERT_EQ(d.responses.size(), 1u);  // nothing after the close is answered
  EXPECT_EQ(d.responses[0].header("connection"), "close");

  session = factory_();
  d = drive(*session, "GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_EQ(d.last, Next::kClose);
  EXPECT_EQ(d.responses.at(0).header("connection"), "close");

  session = factory_();
  d = drive(*session, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(d.last, Next::kNeedMore);
  EXPECT_EQ(d.responses.at(0).header("connection"), "keep-alive");
  EXPECT_EQ(d.responses.at(0).body, "ok\n");

  // A close on a request that waits on the store: the job answers, then the session closes.
  create_tag("order");
  session = factory_();
  d = drive(*session, get("/v1/segment/order", "Connection: close\r\n") + get("/healthz"));
  EXPECT_EQ(d.blocking, 1);
  EXPECT_EQ(d.last, Next::kClose);
  ASSERT_EQ(d.responses.size(), 1u);
  EXPECT_EQ(d.responses[0].header("connection"), "close");
  EXPECT_EQ(ids_of(d.responses[0]), std::vector<uint64_t>{1001});
}

TEST_F(HttpSessionTest, PipelinedRequestsAreAnsweredInOrder) {
  std::unique_ptr<Session> session = factory_();
  Driven d =
      drive(*session, get("/healthz") + get("/v1/snowflake?count=2") + "\r\n" + get("/v1/uuid7"));
  EXPECT_EQ(d.last, Next::kNeedMore);
  EXPECT_EQ(d.blocking, 0);
  ASSERT_EQ(d.responses.size(), 3u);
  EXPECT_EQ(d.responses[0].body, "ok\n");
  EXPECT_EQ(d.responses[1].json()["kind"], "snowflake");
  EXPECT_EQ(d.responses[2].json()["kind"], "uuid7");
  EXPECT_TRUE(d.left.empty());

  // A request that waits on the store ends its feed(); the ones after it follow in order.
  create_tag("order");
  session = factory_();
  Session::Step step;
  std::string out;
  std::string in = get("/v1/snowflake") + get("/v1/segment/order") + get("/healthz");
  step = session->feed(in, out);
  ASSERT_EQ(step.next, Next::kBlocking);
  EXPECT_EQ(step.consumed, get("/v1/snowflake").size() + get("/v1/segment/order").size());
  EXPECT_EQ(split_responses(out, {}).size(), 1u);  // the snowflake answer only, so far
  step.blocking(out);
  in.erase(0, step.consumed);
  step = session->feed(in, out);
  EXPECT_EQ(step.next, Next::kNeedMore);
  EXPECT_EQ(step.consumed, in.size());
  std::vector<Response> all = split_responses(out, {});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].json()["kind"], "snowflake");
  EXPECT_EQ(ids_of(all[1]), std::vector<uint64_t>{1001});
  EXPECT_EQ(all[2].body, "ok\n");

  // Batched or not, every request is counted once; the waiting one by its job.
  const Metrics& m = service_->metrics();
  EXPECT_EQ(m.requests(0, Route::kHealth, 200), 2u);
  EXPECT_EQ(m.requests(0, Route::kSnowflake, 200), 2u);
  EXPECT_EQ(m.requests(0, Route::kUuid7, 200), 1u);
  EXPECT_EQ(m.requests(0, Route::kSegment, 200), 1u);
  EXPECT_THAT(m.render(*service_),
              HasSubstr("idforge_request_duration_seconds_count{protocol=\"http\"} 6\n"));
}

// Pipelined requests with big answers (10,000 UUIDs is ~400 KB) are answered in steps
// of about Session::kFlushBytes, all of them, in order.
TEST_F(HttpSessionTest, BigAnswersToAPipelineAreFlushedInSteps) {
  std::unique_ptr<Session> session = factory_();
  std::string in;
  for (int i = 0; i < 10; ++i) in += get("/v1/uuid7?count=10000&format=text");
  in += get("/healthz");
  Driven d = drive(*session, in);
  EXPECT_EQ(d.last, Next::kNeedMore);
  EXPECT_GE(d.flushes, 9);
  ASSERT_EQ(d.responses.size(), 11u);
  EXPECT_EQ(d.responses.back().body, "ok\n");
}

TEST_F(HttpSessionTest, ARequestArrivingAByteAtATimeIsAnsweredOnce) {
  std::unique_ptr<Session> session = factory_();
  std::string request = get("/v1/snowflake?count=2") + get("/healthz");
  std::string in;
  std::string out;
  for (char c : request) {
    in.push_back(c);
    Session::Step step = session->feed(in, out);
    ASSERT_EQ(step.next, Next::kNeedMore);
    in.erase(0, step.consumed);
  }
  EXPECT_TRUE(in.empty());
  std::vector<Response> responses = split_responses(out, {});
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(ids_of(responses[0]).size(), 2u);
  EXPECT_EQ(responses[1].body, "ok\n");
}

TEST_F(HttpSessionTest, ProtocolErrorsAreAnsweredThenClose) {
  struct Case {
    std::string input;
    int status;
  };
  const Case cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\n\r\n", 400},  // no Host
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n", 414},
      {"GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(40000, 'v'), 431},
      {"POST /v1/admin/tags HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505},
  };
  for (const Case& c : cases) {
    std::unique_ptr<Session> session = factory_();
    std::string out;
    // A good request first: answered normally, then the bad one ends the connection.
    std::string in = get("/healthz") + c.input;
    Session::Step step = session->feed(in, out);
    EXPECT_EQ(step.next, Next::kClose) << c.status;
    std::vector<Response> responses = split_responses(out, {});
    ASSERT_EQ(responses.size(), 2u) << c.status;
    EXPECT_EQ(responses[0].status, 200);
    EXPECT_EQ(responses[1].status, c.status);
    EXPECT_EQ(responses[1].header("connection"), "close");
    EXPECT_FALSE(responses[1].error_code().empty());
    // Anything after that is not read.
    EXPECT_EQ(session->feed(get("/healthz"), out).next, Next::kClose);
  }
  EXPECT_EQ(service_->metrics().requests(0, Route::kNotFound, 400), 3u);
  EXPECT_EQ(service_->metrics().requests(0, Route::kNotFound, 414), 1u);
}

TEST_F(HttpSessionTest, TimeoutAnswers408OnlyForAStartedRequest) {
  std::unique_ptr<Session> session = factory_();
  std::string out;
  std::string in = get("/healthz");
  Session::Step step = session->feed(in, out);
  ASSERT_EQ(step.next, Next::kNeedMore);
  out.clear();
  session->on_timeout(out);  // idle between requests: just close
  EXPECT_EQ(out, "");
  in = "GET /healthz HTTP/1.1\r\nHo";
  step = session->feed(in, out);
  EXPECT_EQ(step.next, Next::kNeedMore);
  EXPECT_EQ(step.consumed, 0u);
  session->on_timeout(out);
  std::vector<Response> responses = split_responses(out, {});
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].status, 408);
  EXPECT_EQ(responses[0].header("connection"), "close");
  EXPECT_EQ(service_->metrics().requests(0, Route::kNotFound, 408), 1u);
}

}  // namespace
}  // namespace idforge::server::http_test
