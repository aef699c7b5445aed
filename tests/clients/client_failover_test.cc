// idforge::Client's failover (docs/clients.md, "Servers and failover"): a kept-alive
// connection the server closed, a SIGSTOPped server, no server at all, every answer that
// counts as a failure, a server backing off, and wrong requests that are never retried.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client_cluster.h"
#include "client_fixture.h"
#include "idforge/client.h"
#include "support/ports.h"

namespace idforge::client_test {
namespace {

TEST_F(ClientServersTest, AKeptAliveConnectionTheServerClosedIsNotAFailure) {
  const auto node_a = node(a());
  ClientOptions o;
  o.buffer = false;
  o.timeout_ms = kSlowOk;
  std::unique_ptr<Client> http = open_client({a().http(), b().resp()}, o);
  std::unique_ptr<Client> resp = open_client({a().resp(), b().http()}, o);
  for (Client* c : {http.get(), resp.get()}) {
    EXPECT_EQ(node_of(*c->snowflake()), node_a);  // a kept-alive connection now
  }
  a().kill9();  // closes them all
  std::string error;
  ASSERT_TRUE(a().start(&error)) << error;
  for (Client* c : {http.get(), resp.get()}) {
    // A again, on a new connection: its old one is no reason to skip it.
    Result<uint64_t> id = c->snowflake();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    EXPECT_EQ(node_of(*id), node_a);
    const ClientStats stats = c->stats();
    EXPECT_EQ(stats.servers[0].failures, 0u) << stats.servers[0].last_error;
    EXPECT_EQ(stats.servers[1].failures, 0u);
  }
}

TEST_F(ClientServersTest, AStoppedServerCostsOneTimeoutThenIsSkipped) {
  const auto node_b = node(b());
  ClientOptions o;
  o.timeout_ms = 500;
  o.buffer = false;
  o.backoff_ms = 5000;
  o.max_backoff_ms = 5000;
  std::unique_ptr<Client> c = open_client({a().http(), b().resp()}, o);
  ASSERT_EQ(node_of(*c->snowflake()), node(a()));  // A answers first
  a().sigstop();
  const Clock::time_point t0 = Clock::now();
  Result<uint64_t> first = c->snowflake();
  const double first_s = seconds_since(t0);
  std::vector<uint64_t> rest;
  const Clock::time_point t1 = Clock::now();
  for (int i = 0; i < 30; ++i) rest.push_back(c->snowflake().value_or(0));
  const double rest_s = seconds_since(t1);
  const ClientStats stats = c->stats();
  a().sigcont();

  ASSERT_TRUE(first.ok()) << first.status().to_string();
  // The first request waited for A's timeout, then B answered it; the other 30 went
  // straight to B (a timeout each would be 15 s).
  EXPECT_GE(first_s, 0.45);
  EXPECT_LT(first_s, 1.0 + 0.5);
  EXPECT_LT(rest_s, 2.5) << "a timeout per request";
  EXPECT_EQ(node_of(*first), node_b);
  for (uint64_t id : rest) EXPECT_EQ(node_of(id), node_b) << id;
  EXPECT_EQ(stats.servers[0].failures, 1u);
  EXPECT_TRUE(contains(stats.servers[0].last_error, "timed out after 500 ms"))
      << stats.servers[0].last_error;
  EXPECT_TRUE(stats.servers[1].current);
  // A is well again, but requests stay on the server that answered last.
  EXPECT_EQ(node_of(*c->snowflake()), node_b);
}

TEST_F(ClientServersTest, AStoppedServerDuringBackgroundRefillsCostsTheCallerNothing) {
  // Snowflake IDs: a server stopped while it held the shared SQLite store's lock would hold
  // up the other's segment ranges too (an artefact of the test setup).
  ClientOptions o;
  o.timeout_ms = 500;
  o.batch = 100;
  o.refill_below = 70;
  o.backoff_ms = 5000;
  o.max_backoff_ms = 5000;
  std::unique_ptr<Client> c = open_client({a().resp(), b().http()}, o);
  std::vector<uint64_t> ids = {*c->snowflake()};
  a().sigstop();
  double slowest = 0;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(milliseconds(10));  // 70 IDs last longer than A's timeout
    const Clock::time_point t0 = Clock::now();
    Result<uint64_t> id = c->snowflake();
    slowest = std::max(slowest, seconds_since(t0));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ids.push_back(*id);
  }
  const ClientStats stats = c->stats();
  a().sigcont();
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), 101u);
  // The refill thread met A's timeout and went on to B; no caller waited.
  EXPECT_EQ(stats.servers[0].failures, 1u);
  EXPECT_TRUE(stats.servers[1].current);
  EXPECT_LT(slowest, 0.25);
}

TEST_F(ClientServersTest, NoServerAtAllFailsAtOnceNamingEachServer) {
  const std::string dead_http =
      "http://127.0.0.1:" + std::to_string(test_support::unused_loopback_port());
  const std::string dead_resp =
      "redis://127.0.0.1:" + std::to_string(test_support::unused_loopback_port());
  ClientOptions o;
  o.buffer = false;
  o.backoff_ms = 1000;
  o.max_backoff_ms = 3000;
  std::unique_ptr<Client> c = open_client({dead_http, dead_resp}, o);
  Result<uint64_t> id = c->snowflake();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(id.status().message(), "no idforge server could give snowflake IDs: " + dead_http +
                                       " failed: connection refused; " + dead_resp +
                                       " failed: connection refused");
  // Both back off now: a caller still tries them, the one whose period ends first first.
  id = c->snowflake();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
  ClientStats stats = c->stats();
  EXPECT_EQ(stats.servers[0].failures, 2u);
  EXPECT_EQ(stats.servers[1].failures, 2u);
  EXPECT_GT(stats.servers[0].backoff_left_ms, 1500);  // doubled: 2000 ms
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(c->snowflake().ok());
  stats = c->stats();
  EXPECT_EQ(stats.servers[0].failures + stats.servers[1].failures, 12u);  // one try each
  EXPECT_LE(std::max(stats.servers[0].backoff_left_ms, stats.servers[1].backoff_left_ms), 3000);
  // With the buffer, an empty buffer fails the same way, within timeout x servers.
  ClientOptions buffered;
  buffered.timeout_ms = 200;
  std::unique_ptr<Client> c2 = open_client({dead_http, dead_resp}, buffered);
  const Clock::time_point t0 = Clock::now();
  Result<uint64_t> seg = c2->segment("order");
  EXPECT_EQ(seg.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(seg.status().message(), "segment IDs of tag 'order'"));
  EXPECT_LT(seconds_since(t0), 0.4 + 0.5);
}

TEST_F(ClientServersTest, AnyOtherErrorAnswerMovesOnToTheNextServer) {
  const auto http = [](const std::string& status, const std::string& body) {
    return "HTTP/1.1 " + status +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  struct Case {
    std::string scheme;
    std::string answer;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"http",
       http("503 Service Unavailable",
            R"({"error":{"code":"unavailable","message":"segment store down"}})"),
       "HTTP 503 unavailable: segment store down"},
      {"http", http("500 Internal Server Error", R"({"error":{"code":"internal","message":"x"}})"),
       "HTTP 500 internal"},
      {"http", http("401 Unauthorized", "proxy says no"), "HTTP 401"},
      {"http", http("429 Too Many Requests", ""), "HTTP 429"},
      {"http", http("200 OK", R"({"ids":[]})"), "malformed"},
      {"http", "SSH-2.0-OpenSSH\r\n", "not an HTTP answer"},
      {"redis", "-ERR lease_lost: the worker lease is gone\r\n", "lease_lost"},
      {"redis", "-ERR io_error: disk\r\n", "io_error"},
      {"redis", "-ERR unknown command 'ID.SNOWFLAKE'\r\n", "unknown command"},
      {"redis", "+OK\r\n", "unexpected answer"},
      {"redis", ":12\r\n", "unexpected answer"},
  };
  const auto node_a = node(a());
  for (const Case& k : cases) {
    SCOPED_TRACE(k.why);
    FakeServer fake(k.answer);
    ClientOptions o;
    o.buffer = false;
    o.timeout_ms = kSlowOk;
    std::unique_ptr<Client> c =
        open_client({k.scheme + "://127.0.0.1:" + std::to_string(fake.port()), a().http()}, o);
    Result<uint64_t> id = c->snowflake();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    EXPECT_EQ(node_of(*id), node_a);
    const ClientStats stats = c->stats();
    EXPECT_EQ(stats.servers[0].failures, 1u);
    EXPECT_TRUE(contains(stats.servers[0].last_error, k.why)) << stats.servers[0].last_error;
    EXPECT_EQ(fake.requests(), 1);
  }
}

// Requests stay on the server that answered last, so a server backing off is met only
// when that one fails: C (first, switched between answering and failing), X (never
// answers) and H (switched). The steps give X two failures (a 2 s period) and H one that
// has ended, then fail C: the request must skip X and go to H.
TEST(ClientFailoverTest, AServerBackingOffIsSkippedWhileALaterOneCanAnswer) {
  const std::string ok = "*1\r\n:42\r\n";  // ID.SNOWFLAKE 1
  const std::string down = "-ERR unavailable: switched off\r\n";
  FakeServer c(down);
  FakeServer x("");
  FakeServer h(down);
  ClientOptions o;
  o.buffer = false;
  o.timeout_ms = 300;
  o.backoff_ms = 1000;
  o.max_backoff_ms = 10000;
  std::unique_ptr<Client> client = open_client({"redis://127.0.0.1:" + std::to_string(c.port()),
                                                "redis://127.0.0.1:" + std::to_string(x.port()),
                                                "redis://127.0.0.1:" + std::to_string(h.port())},
                                               o);
  EXPECT_FALSE(client->snowflake().ok());  // C, X (a timeout), H fail: 1 s each
  h.set_answer(ok);
  EXPECT_EQ(*client->snowflake(), 42u);  // all backing off: C, X (2 s now), then H answers
  c.set_answer(ok);
  h.set_answer(down);
  EXPECT_EQ(*client->snowflake(), 42u);  // H fails (1 s); C, backing off, is tried and answers
  std::this_thread::sleep_for(milliseconds(1200));  // H's period is over, X's is not
  ASSERT_EQ(x.requests(), 2);
  c.set_answer(down);
  h.set_answer(ok);
  const Clock::time_point t0 = Clock::now();
  Result<uint64_t> id = client->snowflake();  // C fails; X is skipped; H answers
  const double took = seconds_since(t0);
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_EQ(x.requests(), 2) << "a request went to X while it backed off";
  EXPECT_LT(took, 0.25);
  const ClientStats stats = client->stats();
  EXPECT_EQ(stats.servers[1].failures, 2u);
  EXPECT_GT(stats.servers[1].backoff_left_ms, 0);
  EXPECT_TRUE(stats.servers[2].current);
}

TEST_F(ClientServersTest, AWrongRequestIsAnErrorAtOnceWithoutFailover) {
  // The second server is a fake that would count any request the client moved on to it.
  FakeServer http_b("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
  FakeServer resp_b("-ERR internal: x\r\n");
  const std::vector<std::vector<std::string>> lists = {
      {a().http(), "http://127.0.0.1:" + std::to_string(http_b.port())},
      {a().resp(), "redis://127.0.0.1:" + std::to_string(resp_b.port())}};
  for (const auto& servers : lists) {
    for (bool buffered : {true, false}) {
      SCOPED_TRACE(servers[0] + (buffered ? " buffered" : " direct"));
      ClientOptions o;
      o.buffer = buffered;
      o.timeout_ms = kSlowOk;
      std::unique_ptr<Client> c = open_client(servers, o);
      const Clock::time_point t0 = Clock::now();
      Result<uint64_t> id = c->segment("no_such_tag");
      EXPECT_LT(seconds_since(t0), 2.0);
      ASSERT_FALSE(id.ok());
      EXPECT_EQ(id.status().code(), StatusCode::kNotFound) << id.status().to_string();
      EXPECT_TRUE(contains(id.status().message(), "unknown tag 'no_such_tag'"))
          << id.status().message();
      EXPECT_TRUE(contains(id.status().message(), "(from " + servers[0] + ")"))
          << id.status().message();
      id = c->segment("bad tag");
      ASSERT_FALSE(id.ok());
      EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument) << id.status().to_string();
      const ClientStats stats = c->stats();
      EXPECT_EQ(stats.servers[0].failures, 0u);  // A is well: the request is wrong
      EXPECT_EQ(stats.servers[1].failures, 0u);
    }
  }
  EXPECT_EQ(http_b.requests() + resp_b.requests(), 0);
  ClientOptions big;
  big.batch = 20000;  // above the server's limits.max_count
  std::unique_ptr<Client> c = open_client({a().resp(), b().http()}, big);
  Result<uint64_t> id = c->snowflake();
  EXPECT_EQ(id.status().code(), StatusCode::kOutOfRange) << id.status().to_string();
  EXPECT_TRUE(contains(id.status().message(), "above the limit")) << id.status().message();
}

}  // namespace
}  // namespace idforge::client_test
