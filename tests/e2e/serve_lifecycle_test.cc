// `idforge serve` started and stopped as an operator or a supervisor does: it prints the
// two start-up lines with the ports it really bound (ServeProcess parses them), answers
// on both, holds a worker lease while it runs, and on SIGTERM or SIGINT shuts down,
// releases the lease and exits 0; an address in use is exit status 1 naming the setting;
// an invalid setting is exit status 2 before anything is created.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "run_idforge.h"
#include "serve_process.h"

namespace idforge::e2e {
namespace {

namespace fs = std::filesystem;

// How many worker slots the local registry in `data_dir` has taken, from `idforge
// worker status` ("...; 1 of 1024 worker slots taken ...").
std::string slots_taken(const std::string& data_dir) {
  RunResult r = run_idforge({"worker", "status", "--registry", "local:" + data_dir + "/workers"});
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  const size_t of = r.out.find(" of 1024 worker slots taken");
  if (of == std::string::npos) return r.out;
  const size_t start = r.out.rfind(' ', of - 1);
  return r.out.substr(start + 1, of - start - 1);
}

std::unique_ptr<ServeProcess> start_server(std::vector<std::string> flags = {}) {
  ServeOptions options;
  options.flags = std::move(flags);
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  EXPECT_NE(server, nullptr) << error;
  return server;
}

TEST(ServeLifecycleTest, ServesBothProtocolsAndStopsOnSigterm) {
  std::unique_ptr<ServeProcess> server = start_server();
  ASSERT_NE(server, nullptr);
  RawClient http(server->http_port());
  ASSERT_TRUE(http.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  http.read_until([](std::string_view got) { return got.find("\r\n\r\n") != got.npos; },
                  milliseconds(5'000));
  EXPECT_EQ(http.received().rfind("HTTP/1.1 200", 0), 0u) << http.received();
  RawClient resp(server->resp_port());
  ASSERT_TRUE(resp.send("PING\r\n"));
  resp.read_until([](std::string_view got) { return got.ends_with("\r\n"); }, milliseconds(5'000));
  EXPECT_EQ(resp.received(), "+PONG\r\n");
  EXPECT_EQ(slots_taken(server->data_dir()), "1");  // the server's lease

  EXPECT_EQ(server->stop(SIGTERM), 0) << server->stderr_text();
  // Only the shutdown line: a failed lease release would add "idforge: releasing ...".
  EXPECT_EQ(server->stderr_text(), "idforge serve: shutting down\n");
  EXPECT_EQ(slots_taken(server->data_dir()), "0");
}

TEST(ServeLifecycleTest, SigintStopsItToo) {
  std::unique_ptr<ServeProcess> server = start_server({"--shutdown-grace-ms", "100"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->stop(SIGINT), 0) << server->stderr_text();
  EXPECT_NE(server->stderr_text().find("shutting down"), std::string::npos);
}

TEST(ServeLifecycleTest, ShutdownClosesConnectionsAndStopsAccepting) {
  std::unique_ptr<ServeProcess> server = start_server({"--shutdown-grace-ms", "2000"});
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->resp_port();
  RawClient idle(port);
  ASSERT_TRUE(idle.connected());
  server->send_signal(SIGTERM);
  // An idle connection has nothing in flight: it is closed, well before the grace ends.
  EXPECT_TRUE(idle.read_until_closed(milliseconds(5'000)));
  EXPECT_EQ(server->wait(milliseconds(10'000)), 0) << server->stderr_text();
  EXPECT_FALSE(can_connect(port));
}

TEST(ServeLifecycleTest, AnAddressInUseIsExitOneNamingTheSetting) {
  std::unique_ptr<ServeProcess> first = start_server();
  ASSERT_NE(first, nullptr);
  const std::string taken = "127.0.0.1:" + std::to_string(first->http_port());
  TempDir dir;
  RunResult r = run_idforge(
      {"serve", "--http", taken, "--resp", "127.0.0.1:0", "--data-dir", dir.path() + "/data"});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_TRUE(r.out.empty()) << r.summary();
  EXPECT_TRUE(r.one_error_line()) << r.summary();
  EXPECT_EQ(r.err.rfind("idforge: --http: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(taken), std::string::npos) << r.err;
  EXPECT_EQ(slots_taken(dir.path() + "/data"), "0");  // the lease it took was given back

  // Set by a variable, the message names the variable.
  r = run_program({"env", "IDFORGE_RESP=127.0.0.1:" + std::to_string(first->resp_port()),
                   IDFORGE_BIN, "serve", "--http", "127.0.0.1:0", "--data-dir",
                   dir.path() + "/data"});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_EQ(r.err.rfind("idforge: IDFORGE_RESP: ", 0), 0u) << r.err;

  // The first server never noticed.
  EXPECT_EQ(first->stop(SIGTERM), 0) << first->stderr_text();
}

TEST(ServeLifecycleTest, InvalidConfigurationNeverStartsAnything) {
  TempDir dir;
  RunResult r = run_idforge({"serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
                             "--data-dir", dir.path() + "/data", "--max-count", "0"});
  EXPECT_TRUE(is_usage_error(r, "--max-count"));
  EXPECT_FALSE(fs::exists(dir.path() + "/data")) << "the data dir was created before the check";
}

}  // namespace
}  // namespace idforge::e2e
