// ServerApp: `idforge serve` assembled in the test's own process (src/server/app), on free
// ports with SQLite and the local registry in a temporary directory: an ID over HTTP and
// over RESP, then a clean stop that releases the worker lease, so a second app on the same
// data directory gets the same slot at once.
#include "server/app/server_app.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include "tcp/tcp_socket.h"

namespace idforge::server {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Sends `request` to `listener` and reads until the answer holds `until` (or the server
// closes): the whole answer of one small request, within a few seconds.
std::string ask(const AppListener& listener, std::string_view request, std::string_view until) {
  const tcp::Deadline deadline = tcp::Deadline::after(milliseconds(5000));
  Result<tcp::TcpSocket> socket = tcp::TcpSocket::connect(
      listener.endpoint.host, std::to_string(listener.endpoint.port), deadline);
  if (!socket.ok()) return "connect: " + socket.status().to_string();
  if (Status sent = socket->send_all(request, deadline); !sent.ok()) return sent.to_string();
  std::string answer;
  std::array<char, 4096> buf{};
  while (answer.find(until) == std::string::npos) {
    Result<size_t> got = socket->recv_some(buf, deadline);
    if (!got.ok() || *got == 0) break;
    answer.append(buf.data(), *got);
  }
  return answer;
}

// The first decimal number after `after` in `text`; 0 when there is none.
uint64_t number_after(std::string_view text, std::string_view after) {
  const size_t at = text.find(after);
  if (at == std::string_view::npos) return 0;
  const char* from = text.data() + at + after.size();
  uint64_t value = 0;
  std::from_chars(from, text.data() + text.size(), value);
  return value;
}

class ServerAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-app-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Both listeners on loopback, port 0: the system picks free ports.
  config::ServeConfig config() const {
    config::ServeConfig c;
    c.http = "127.0.0.1:0";
    c.resp = "127.0.0.1:0";
    c.service.data_dir = dir_ + "/data";  // sqlite:DATA/segments.db, local:DATA/workers
    c.service.identity = "app-test:serve";
    c.net.io_threads = 1;
    c.net.worker_threads = 2;
    c.shutdown_grace_ms = 1000;
    return c;
  }

  std::string dir_;
};

TEST_F(ServerAppTest, ServesAnIdOverHttpAndRespAndStopsCleanly) {
  StartStep failed_at = StartStep::kSecurity;
  Result<std::unique_ptr<ServerApp>> started = ServerApp::start(config(), &failed_at);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  ServerApp& app = **started;
  ASSERT_EQ(app.listeners().size(), 2u);
  const AppListener* http = app.listener("http");
  const AppListener* resp = app.listener("resp");
  ASSERT_NE(http, nullptr);
  ASSERT_NE(resp, nullptr);
  EXPECT_NE(http->endpoint.port, 0);
  EXPECT_EQ(http->url, "http://127.0.0.1:" + std::to_string(http->endpoint.port) + "/");
  EXPECT_EQ(resp->url, "redis://127.0.0.1:" + std::to_string(resp->endpoint.port));
  EXPECT_EQ(app.listener("plain_http"), nullptr);

  const std::string over_http =
      ask(*http, "GET /v1/snowflake HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "}");
  ASSERT_TRUE(over_http.starts_with("HTTP/1.1 200 ")) << over_http;
  const uint64_t from_http = number_after(over_http, "\"ids\":[\"");
  EXPECT_GT(from_http, 0u) << over_http;

  const std::string over_resp = ask(*resp, "*1\r\n$12\r\nID.SNOWFLAKE\r\n", "\r\n");
  ASSERT_TRUE(over_resp.starts_with(":")) << over_resp;
  const uint64_t from_resp = number_after(over_resp, ":");
  EXPECT_GT(from_resp, from_http) << "one generator: the later ID is the larger";
  EXPECT_EQ(app.service().metrics().ids(IdKind::kSnowflake), 2u);
  const uint64_t slot = app.service().status().lease.slot;

  EXPECT_TRUE(app.stop().ok());
  EXPECT_TRUE(app.stop().ok()) << "stop is idempotent";
  // Stopped: the listeners no longer accept.
  const tcp::Deadline soon = tcp::Deadline::after(milliseconds(1000));
  EXPECT_FALSE(
      tcp::TcpSocket::connect("127.0.0.1", std::to_string(http->endpoint.port), soon).ok());

  // The lease was released, not left to its TTL: the same identity starts again at once
  // on the same slot.
  Result<std::unique_ptr<ServerApp>> again = ServerApp::start(config());
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->service().status().lease.slot, slot);
}

TEST_F(ServerAppTest, AListenerThatCannotBindNamesItsSettingAndReleasesTheLease) {
  Result<std::unique_ptr<ServerApp>> first = ServerApp::start(config());
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  config::ServeConfig taken = config();
  taken.service.data_dir = dir_ + "/other";
  taken.resp = (*first)->listener("resp")->endpoint.to_string();  // in use
  StartStep failed_at = StartStep::kSecurity;
  Result<std::unique_ptr<ServerApp>> second = ServerApp::start(taken, &failed_at);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(failed_at, StartStep::kListeners);
  // Named as the user gave it; here by its flag, since no source is recorded.
  EXPECT_TRUE(second.status().message().starts_with("--resp: ")) << second.status().message();

  // Its lease was released on the way out: the other data directory's first slot is free
  // again (a lease left held would be a lock this process still holds, and slot 1 taken).
  Result<std::unique_ptr<ServerApp>> third = ServerApp::start([&] {
    config::ServeConfig c = taken;
    c.resp = "127.0.0.1:0";
    return c;
  }());
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_EQ((*third)->service().status().lease.slot, 0u);
}

TEST_F(ServerAppTest, ATokensFileThatDoesNotLoadFailsBeforeTheServiceStarts) {
  config::ServeConfig c = config();
  c.tokens_file = dir_ + "/no-such-tokens";
  StartStep failed_at = StartStep::kListeners;
  Result<std::unique_ptr<ServerApp>> started = ServerApp::start(c, &failed_at);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(failed_at, StartStep::kSecurity);
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ + "/data")) << "no store or lease was opened";
}

}  // namespace
}  // namespace idforge::server
