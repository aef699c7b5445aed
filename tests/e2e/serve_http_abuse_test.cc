// The HTTP listener under input no browser sends, over raw sockets: malformed and
// oversized requests get the status docs/api.md names and a close, binary garbage never
// takes the server down, pipelined requests are answered in order, and slow or idle
// clients are closed after their timeouts without holding anyone else up.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.h"
#include "support/text.h"

namespace idforge::e2e {
namespace {

using test::ms_since;

using Clock = std::chrono::steady_clock;

constexpr const char* kAbuseToken = "abuse-token";
constexpr int64_t kRequestTimeoutMs = 1000;
constexpr int64_t kIdleTimeoutMs = 1500;
// Timeouts are checked a few times per period, so a close may come up to 250 ms late;
// the rest is room for a busy machine.
constexpr int64_t kLateMs = 750;

std::string get_request(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

// A protocol error as docs/api.md has it: that status, a JSON error body, then the close.
::testing::AssertionResult is_error_then_close(const RawClient& client, int status) {
  std::vector<HttpAnswer> answers = parse_http_answers(client.received());
  if (answers.size() != 1) {
    return ::testing::AssertionFailure()
           << "want exactly one answer, got " << answers.size() << ":\n"
           << client.received().substr(0, 2000);
  }
  const HttpAnswer& a = answers.front();
  if (a.status != status) {
    return ::testing::AssertionFailure() << "want status " << status << a.summary();
  }
  nlohmann::json body = a.json();
  if (!body.is_object() || !body["error"].is_object() || !body["error"]["code"].is_string() ||
      !body["error"]["message"].is_string()) {
    return ::testing::AssertionFailure()
           << "want {\"error\":{\"code\",\"message\"}}" << a.summary();
  }
  if (!client.closed()) {
    return ::testing::AssertionFailure() << "the connection stayed open" << a.summary();
  }
  return ::testing::AssertionSuccess();
}

class ServeHttpAbuseTest : public SharedServeSuite<ServeHttpAbuseTest> {
 public:
  static ServeOptions suite_options() {
    ServeOptions options;
    options.flags = {"--request-timeout-ms", std::to_string(kRequestTimeoutMs), "--idle-timeout-ms",
                     std::to_string(kIdleTimeoutMs)};
    options.env = {std::string("IDFORGE_ADMIN_TOKEN=") + kAbuseToken};
    options.setup = {{"tag", "create", "order", "--step", "10"}};
    return options;
  }

 protected:
  void TearDown() override {
    // Whatever a test sent, the server still answers a normal request.
    if (server_ != nullptr) {
      HttpAnswer health = server_->http("/healthz");
      EXPECT_EQ(health.status, 200)
          << "server unwell after the test" << health.summary() << server_->stderr_text();
    }
  }

  // Sends `bytes` on a new connection (ignoring a send the server cut short) and reads
  // until the server closes.
  static std::unique_ptr<RawClient> exchange(const std::string& bytes) {
    auto client = std::make_unique<RawClient>(server_->http_port());
    EXPECT_TRUE(client->connected());
    client->send(bytes);
    EXPECT_TRUE(client->read_until_closed(milliseconds(5'000)))
        << "not closed; got:\n"
        << client->received().substr(0, 2000);
    return client;
  }
};

TEST_F(ServeHttpAbuseTest, MalformedRequestLineIs400AndCloses) {
  for (const char* bad : {"GARBAGE\r\n\r\n", "GET\r\n\r\n", "GET /healthz\r\n\r\n",
                          "GET /healthz HTTP/1.1 extra\r\n\r\n", "GET /healthz HTTQ/1.1\r\n\r\n",
                          " GET /healthz HTTP/1.1\r\n\r\n", "GET /healthz HTTP/1.x\r\n\r\n"}) {
    SCOPED_TRACE(testing::Message() << "request: " << bad);
    EXPECT_TRUE(is_error_then_close(*exchange(bad), 400));
  }
}

TEST_F(ServeHttpAbuseTest, MalformedHeaderIs400AndCloses) {
  EXPECT_TRUE(
      is_error_then_close(*exchange("GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n"), 400));
  EXPECT_TRUE(is_error_then_close(
      *exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n"), 400));
}

TEST_F(ServeHttpAbuseTest, NulBytesInTheRequestLineAre400) {
  std::string request = get_request("/v1/snow");
  request.insert(12, std::string("\0flake", 6));
  EXPECT_TRUE(is_error_then_close(*exchange(request), 400));
  constexpr char kNulMethod[] = "G\0T /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_TRUE(is_error_then_close(*exchange(std::string(kNulMethod, sizeof kNulMethod - 1)), 400));
}

TEST_F(ServeHttpAbuseTest, RequestLineOver8KiBIs414) {
  // Just under the limit is routed as usual (an unknown path: 404).
  auto under = exchange(get_request("/" + std::string(8000, 'a'), "Connection: close\r\n"));
  std::vector<HttpAnswer> answers = parse_http_answers(under->received());
  ASSERT_EQ(answers.size(), 1u) << under->received().substr(0, 500);
  EXPECT_EQ(answers[0].status, 404) << answers[0].summary();

  EXPECT_TRUE(is_error_then_close(*exchange(get_request("/" + std::string(9000, 'a'))), 414));
  // No line end at all: the server must not wait for one forever.
  EXPECT_TRUE(is_error_then_close(*exchange("GET /" + std::string(20'000, 'b')), 414));
}

TEST_F(ServeHttpAbuseTest, MoreThan100HeadersIs431) {
  std::string hundred;  // with Host, 100 headers
  for (int i = 0; i < 99; ++i) hundred += "X-Header-" + std::to_string(i) + ": v\r\n";
  RawClient client(server_->http_port());
  ASSERT_TRUE(client.send(get_request("/healthz", hundred)));
  ASSERT_TRUE(client.read_until([](std::string_view r) { return !parse_http_answers(r).empty(); },
                                milliseconds(5'000)))
      << client.received();
  EXPECT_EQ(parse_http_answers(client.received())[0].status, 200) << "100 headers are allowed";

  EXPECT_TRUE(
      is_error_then_close(*exchange(get_request("/healthz", hundred + "X-One-More: v\r\n")), 431));
}

TEST_F(ServeHttpAbuseTest, HeadersOver32KiBAre431) {
  std::string many;
  for (int i = 0; i < 20; ++i)
    many += "X-Pad-" + std::to_string(i) + ": " + std::string(2000, 'p') + "\r\n";
  EXPECT_TRUE(is_error_then_close(*exchange(get_request("/healthz", many)), 431));
  EXPECT_TRUE(is_error_then_close(
      *exchange(get_request("/healthz", "X-Big: " + std::string(33 * 1024, 'q') + "\r\n")), 431));
}

TEST_F(ServeHttpAbuseTest, BodyOver64KiBIs413) {
  const std::string body(70'000, ' ');
  std::string request =
      "POST /v1/admin/tags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
      std::string(kAbuseToken) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  EXPECT_TRUE(is_error_then_close(*exchange(request), 413));

  // 64 KiB exactly (JSON and trailing blanks) is read and served: the tag is created.
  const std::string fits = "{\"tag\":\"x\"}" + std::string(65'536 - 11, ' ');
  auto client = exchange("POST /v1/admin/tags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                         std::string(kAbuseToken) + "\r\nConnection: close\r\nContent-Length: " +
                         std::to_string(fits.size()) + "\r\n\r\n" + fits);
  std::vector<HttpAnswer> answers = parse_http_answers(client->received());
  ASSERT_EQ(answers.size(), 1u) << client->received().substr(0, 500);
  EXPECT_EQ(answers[0].status, 201) << answers[0].summary();
}

TEST_F(ServeHttpAbuseTest, OtherHttpVersionsAre505) {
  for (const char* version : {"HTTP/2.0", "HTTP/1.2", "HTTP/3.0", "HTTP/0.9"}) {
    SCOPED_TRACE(version);
    EXPECT_TRUE(is_error_then_close(
        *exchange(std::string("GET /healthz ") + version + "\r\nHost: x\r\n\r\n"), 505));
  }
}

TEST_F(ServeHttpAbuseTest, BinaryGarbageGetsAnErrorOrACloseNeverACrash) {
  std::mt19937 random(20261122);
  for (size_t size : {size_t{16}, size_t{4096}, size_t{100'000}}) {
    std::string garbage(size, '\0');
    for (char& c : garbage) c = static_cast<char>(random() & 0xff);
    auto client = exchange(garbage);
    SCOPED_TRACE(testing::Message() << size << " random bytes");
    if (!client->received().empty()) {
      std::vector<HttpAnswer> answers = parse_http_answers(client->received());
      ASSERT_EQ(answers.size(), 1u) << client->received().substr(0, 500);
      EXPECT_GE(answers[0].status, 400) << answers[0].summary();
      EXPECT_LT(answers[0].status, 500) << answers[0].summary();
    }
    ASSERT_EQ(server_->http("/healthz").status, 200) << server_->stderr_text();
  }
  EXPECT_TRUE(server_->running());
}

TEST_F(ServeHttpAbuseTest, PipelinedRequestsAreAnsweredInOrder) {
  RawClient client(server_->http_port());
  ASSERT_TRUE(client.send(get_request("/v1/decode/1") + get_request("/v1/decode/2") +
                          get_request("/v1/decode/3", "Connection: close\r\n")));
  ASSERT_TRUE(client.read_until_closed(milliseconds(5'000))) << client.received();
  std::vector<HttpAnswer> answers = parse_http_answers(client.received());
  ASSERT_EQ(answers.size(), 3u) << client.received();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answers[i].status, 200) << answers[i].summary();
    EXPECT_EQ(answers[i].json()["id"], std::to_string(i + 1)) << answers[i].summary();
  }
}

TEST_F(ServeHttpAbuseTest, PipelinedRequestsKeepOrderAroundAStoreRoundTrip) {
  // The first segment request of a tag waits for the store, off the I/O thread; the
  // answers behind it must still come in request order.
  RawClient client(server_->http_port());
  ASSERT_TRUE(client.send(get_request("/v1/segment/order?count=25") + get_request("/healthz") +
                          get_request("/v1/segment/order?count=2") +
                          get_request("/v1/decode/7", "Connection: close\r\n")));
  ASSERT_TRUE(client.read_until_closed(milliseconds(5'000))) << client.received();
  std::vector<HttpAnswer> answers = parse_http_answers(client.received());
  ASSERT_EQ(answers.size(), 4u) << client.received();
  EXPECT_EQ(answers[0].json()["ids"].size(), 25u) << answers[0].summary();
  EXPECT_EQ(answers[1].body.substr(0, 2), "ok") << answers[1].summary();
  ASSERT_EQ(answers[2].json()["ids"].size(), 2u) << answers[2].summary();
  EXPECT_EQ(std::stoull(answers[2].json()["ids"][0].get<std::string>()),
            std::stoull(answers[0].json()["ids"][24].get<std::string>()) + 1);
  EXPECT_EQ(answers[3].json()["id"], "7") << answers[3].summary();
}

TEST_F(ServeHttpAbuseTest, ConnectionCloseAndHttp10Close) {
  auto closing = exchange(get_request("/healthz", "Connection: close\r\n"));
  EXPECT_EQ(parse_http_answers(closing->received()).size(), 1u) << closing->received();

  auto old = exchange("GET /healthz HTTP/1.0\r\n\r\n");
  std::vector<HttpAnswer> answers = parse_http_answers(old->received());
  ASSERT_EQ(answers.size(), 1u) << old->received();
  EXPECT_EQ(answers[0].status, 200);

  // HTTP/1.0 with keep-alive stays open for a second request.
  RawClient kept(server_->http_port());
  const std::string request = "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  ASSERT_TRUE(kept.send(request));
  ASSERT_TRUE(kept.read_until([](std::string_view r) { return parse_http_answers(r).size() == 1; },
                              milliseconds(5'000)))
      << kept.received();
  ASSERT_TRUE(kept.send(request));
  EXPECT_TRUE(kept.read_until([](std::string_view r) { return parse_http_answers(r).size() == 2; },
                              milliseconds(5'000)))
      << kept.received();
}

TEST_F(ServeHttpAbuseTest, ConnectionCloseAfterAStoreRoundTripClosesAtOnce) {
  // The admin routes always run on the worker pool; Connection: close must still close
  // right after the answer, not when the idle timeout comes.
  for (const char* request : {"GET /v1/admin/tags HTTP/1.1\r\nHost: x\r\nConnection: close\r\n",
                              "GET /v1/admin/tags HTTP/1.0\r\n"}) {
    SCOPED_TRACE(request);
    const Clock::time_point started = Clock::now();
    auto client =
        exchange(std::string(request) + "Authorization: Bearer " + kAbuseToken + "\r\n\r\n");
    EXPECT_LT(ms_since(started), kIdleTimeoutMs / 2) << "closed only by the idle timeout";
    std::vector<HttpAnswer> answers = parse_http_answers(client->received());
    ASSERT_EQ(answers.size(), 1u) << client->received();
    EXPECT_EQ(answers[0].status, 200) << answers[0].summary();
  }
}

TEST_F(ServeHttpAbuseTest, StalledClientBlocksNobodyAndGets408AfterTheRequestTimeout) {
  RawClient stalled(server_->http_port());
  ASSERT_TRUE(stalled.send("GET /v1/snowflake HTTP/1.1\r\nHost: x\r\n"));  // no blank line
  const Clock::time_point started = Clock::now();

  // Another client is answered at once, long before the stalled one times out.
  for (int i = 0; i < 3; ++i) {
    RawClient other(server_->http_port());
    ASSERT_TRUE(other.send(get_request("/v1/snowflake", "Connection: close\r\n")));
    ASSERT_TRUE(other.read_until_closed(milliseconds(5'000)));
    ASSERT_EQ(parse_http_answers(other.received()).size(), 1u) << other.received();
    EXPECT_EQ(parse_http_answers(other.received())[0].status, 200);
  }
  EXPECT_LT(ms_since(started), kRequestTimeoutMs / 2) << "another client had to wait";

  ASSERT_TRUE(stalled.read_until_closed(milliseconds(kRequestTimeoutMs + 5'000)));
  const int64_t elapsed = ms_since(started);
  EXPECT_GE(elapsed, kRequestTimeoutMs - 50);
  EXPECT_LE(elapsed, kRequestTimeoutMs + kLateMs);
  EXPECT_TRUE(is_error_then_close(stalled, 408));
}

TEST_F(ServeHttpAbuseTest, TricklingClientIsClosedAfterTheRequestTimeout) {
  // One header byte every 100 ms: never idle, but the request never completes.
  RawClient slow(server_->http_port());
  ASSERT_TRUE(slow.send("GET /healthz HTTP/1.1\r\nX-Slow: "));
  const Clock::time_point started = Clock::now();
  while (!slow.closed() && ms_since(started) < kRequestTimeoutMs + 5'000) {
    slow.send("a");
    slow.read_for(milliseconds(100));
  }
  ASSERT_TRUE(slow.closed()) << "still open after " << ms_since(started) << " ms";
  EXPECT_LE(ms_since(started), kRequestTimeoutMs + kLateMs);
  if (!slow.received().empty()) {
    EXPECT_TRUE(slow.received().starts_with("HTTP/1.1 408")) << slow.received();
  }
}

TEST_F(ServeHttpAbuseTest, IdleKeepAliveIsClosedAfterTheIdleTimeout) {
  RawClient client(server_->http_port());
  auto answered = [](size_t n) {
    return [n](std::string_view r) { return parse_http_answers(r).size() == n; };
  };
  ASSERT_TRUE(client.send(get_request("/healthz")));
  ASSERT_TRUE(client.read_until(answered(1), milliseconds(5'000))) << client.received();
  // Activity before the timeout keeps the connection.
  client.read_for(milliseconds(kIdleTimeoutMs / 2));
  ASSERT_FALSE(client.closed());
  ASSERT_TRUE(client.send(get_request("/healthz")));
  ASSERT_TRUE(client.read_until(answered(2), milliseconds(5'000))) << client.received();
  const Clock::time_point idle_since = Clock::now();

  ASSERT_TRUE(client.read_until_closed(milliseconds(kIdleTimeoutMs + 5'000)));
  const int64_t elapsed = ms_since(idle_since);
  EXPECT_GE(elapsed, kIdleTimeoutMs - 100);
  EXPECT_LE(elapsed, kIdleTimeoutMs + kLateMs);
  std::vector<HttpAnswer> answers = parse_http_answers(client.received());
  EXPECT_GE(answers.size(), 2u);
  for (size_t i = 2; i < answers.size(); ++i) EXPECT_EQ(answers[i].status, 408);
}

// The same runtime limits hold on the RESP port: a stalled command and an idle client
// are closed after their timeouts, and neither holds up anybody else.
TEST_F(ServeHttpAbuseTest, RespStalledAndIdleClientsAreClosedWithoutBlockingOthers) {
  const uint16_t port = server_->resp_port();
  RawClient idle(port);
  ASSERT_TRUE(idle.send("PING\r\n"));
  ASSERT_TRUE(
      idle.read_until([](std::string_view r) { return r == "+PONG\r\n"; }, milliseconds(5'000)))
      << idle.received();
  const Clock::time_point idle_since = Clock::now();
  RawClient stalled(port);
  ASSERT_TRUE(stalled.send("*2\r\n$4\r\nPING\r\n"));  // the second argument never comes
  const Clock::time_point stalled_since = Clock::now();

  RawClient other(port);
  ASSERT_TRUE(other.send("PING\r\n"));
  EXPECT_TRUE(other.read_until([](std::string_view r) { return r == "+PONG\r\n"; },
                               milliseconds(kRequestTimeoutMs / 2)))
      << "another client had to wait: " << other.received();

  ASSERT_TRUE(stalled.read_until_closed(milliseconds(kRequestTimeoutMs + 5'000)));
  EXPECT_GE(ms_since(stalled_since), kRequestTimeoutMs - 50);
  EXPECT_LE(ms_since(stalled_since), kRequestTimeoutMs + kLateMs);
  ASSERT_TRUE(idle.read_until_closed(milliseconds(kIdleTimeoutMs + 5'000)));
  EXPECT_GE(ms_since(idle_since), kIdleTimeoutMs - 100);
  EXPECT_LE(ms_since(idle_since), kIdleTimeoutMs + kLateMs);
}

// SIGTERM while a client is still reading long answers to requests it already sent
// (`requests` pipelined, `count` UUIDs as text each): the server stops accepting, writes
// every one of those answers in full, then exits 0.
void check_answers_finished_on_sigterm(int requests, int count) {
  ServeOptions options;
  options.flags = {"--shutdown-grace-ms", "5000", "--max-count", std::to_string(count)};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;

  RawClient reader(server->http_port(), /*receive_buffer=*/4096);
  ASSERT_TRUE(reader.connected());
  std::string batch;
  const std::string path = "/v1/uuid7?format=text&count=" + std::to_string(count);
  for (int i = 0; i < requests; ++i) {
    batch += get_request(path, i + 1 == requests ? "Connection: close\r\n" : "");
  }
  ASSERT_TRUE(reader.send(batch));
  ASSERT_TRUE(
      reader.read_until([](std::string_view r) { return r.size() >= 1000; }, milliseconds(5'000)));

  server->send_signal(SIGTERM);
  ASSERT_TRUE(server->wait_for_stderr("serve.stopping", milliseconds(5'000)))
      << server->stderr_text();
  const Clock::time_point refused_by = Clock::now() + milliseconds(2'000);
  while (can_connect(server->http_port()) && Clock::now() < refused_by) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_FALSE(can_connect(server->http_port())) << "still accepting after SIGTERM";

  EXPECT_TRUE(reader.read_until_closed(milliseconds(10'000)));
  std::vector<HttpAnswer> answers = parse_http_answers(reader.received());
  EXPECT_EQ(answers.size(), static_cast<size_t>(requests))
      << reader.received().size() << " bytes received";
  for (const HttpAnswer& a : answers) {
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(std::count(a.body.begin(), a.body.end(), '\n'), count);
  }
  EXPECT_EQ(server->wait(milliseconds(10'000)), 0) << server->stderr_text();
}

// One answer of about 7 MB: more than the kernel buffers (4 MB send buffer at most), so
// most of it is still the server's to write when the signal comes.
TEST(ServeHttpShutdownTest, AnAnswerInFlightIsFinishedOnSigterm) {
  check_answers_finished_on_sigterm(1, 200'000);
}

// The same as 20 pipelined requests of 370 KB answers: all were received before the
// signal, so all are in flight.
TEST(ServeHttpShutdownTest, PipelinedRequestsInFlightAreFinishedOnSigterm) {
  check_answers_finished_on_sigterm(20, 10'000);
}

}  // namespace
}  // namespace idforge::e2e
