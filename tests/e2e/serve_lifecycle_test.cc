// `idforge serve` started and stopped as an operator or a supervisor does: it prints the
// two start-up lines with the ports it really bound (ServeProcess parses them), answers
// on both, holds a worker lease while it runs, and on SIGTERM or SIGINT shuts down,
// releases the lease and exits 0; an address in use is exit status 1 naming the setting;
// an invalid setting is exit status 2 before anything is created.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <sstream>
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
  // The shutdown steps, in order, and no warning or error (a failed lease release would
  // add "error serve.lease_release_failed").
  const std::string log = server->stderr_text();
  const size_t stopping = log.find(" info serve.stopping signal=SIGTERM grace_ms=");
  const size_t drained = log.find(" info serve.drained ");
  const size_t stopped = log.find(" info serve.stopped exit_status=0");
  EXPECT_NE(stopping, std::string::npos) << log;
  EXPECT_LT(stopping, drained) << log;
  EXPECT_LT(drained, stopped) << log;
  EXPECT_EQ(log.find(" warn "), std::string::npos) << log;
  EXPECT_EQ(log.find(" error "), std::string::npos) << log;
  EXPECT_EQ(slots_taken(server->data_dir()), "0");
}

// The start-up log line has every setting from the settings table, says where the
// non-default ones came from, and never shows the admin token.
TEST(ServeLifecycleTest, StartUpLogLineHasEverySettingAndItsSource) {
  ServeOptions options;
  options.flags = {"--max-count", "7", "--log-format", "text"};
  options.env = {"IDFORGE_ADMIN_TOKEN=s3cret-token", "IDFORGE_POLICY=wait"};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->stop(SIGTERM), 0) << server->stderr_text();
  const std::string log = server->stderr_text();
  std::istringstream lines(log);
  std::string settings;
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" info serve.settings ") != std::string::npos) {
      settings = line;
      ++count;
    }
  }
  ASSERT_EQ(count, 1) << log;
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
  EXPECT_NE(settings.find(" admin_token=\"(set, not shown)\""), std::string::npos) << settings;
  EXPECT_NE(settings.find(" limits.max_count=7 "), std::string::npos) << settings;
  EXPECT_NE(settings.find(" snowflake.policy=wait "), std::string::npos) << settings;
  EXPECT_NE(settings.find("limits.max_count:flag --max-count"), std::string::npos) << settings;
  EXPECT_NE(settings.find("snowflake.policy:env IDFORGE_POLICY"), std::string::npos) << settings;
  EXPECT_EQ(settings.find("segment.max_step:"), std::string::npos) << settings;  // a default
  // Every setting --print-config lists is in the line.
  RunResult printed = run_idforge({"serve", "--print-config"});
  std::string section;
  for (const std::string& line : printed.lines()) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1) + ".";
      continue;
    }
    const std::string key = section + line.substr(0, line.find(" = "));
    EXPECT_NE(settings.find(" " + key + "="), std::string::npos) << key << " in " << settings;
  }
}

TEST(ServeLifecycleTest, SigintStopsItToo) {
  std::unique_ptr<ServeProcess> server = start_server({"--shutdown-grace-ms", "100"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->stop(SIGINT), 0) << server->stderr_text();
  EXPECT_NE(server->stderr_text().find("serve.stopping signal=SIGINT"), std::string::npos);
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

// The lines of stderr that are not the log's: "idforge: MESSAGE".
std::vector<std::string> error_lines(const RunResult& r) {
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("idforge: ", 0) == 0) lines.push_back(line);
  }
  return lines;
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
  // One error line among the log's (which says the lease was given back).
  EXPECT_EQ(error_lines(r), std::vector<std::string>{"idforge: --http: cannot bind " + taken +
                                                     ": Address already in use"})
      << r.err;
  EXPECT_EQ(slots_taken(dir.path() + "/data"), "0");  // the lease it took was given back

  // Set by a variable, the message names the variable.
  r = run_program({"env", "IDFORGE_RESP=127.0.0.1:" + std::to_string(first->resp_port()),
                   IDFORGE_BIN, "serve", "--http", "127.0.0.1:0", "--data-dir",
                   dir.path() + "/data"});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  ASSERT_EQ(error_lines(r).size(), 1U) << r.err;
  EXPECT_EQ(error_lines(r)[0].rfind("idforge: IDFORGE_RESP: ", 0), 0u) << r.err;

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
