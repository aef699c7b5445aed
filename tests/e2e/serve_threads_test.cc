// The threads of `idforge serve`, read from /proc as an operator's top -H shows them:
// each has a name that says what it does, and an idle server sleeps. The server reads
// the system clock on each call (ServiceConfig::clock) and so starts no clock thread:
// the library's cached clock wakes a thousand times a second, which on this project's
// VM cost 39 ms of CPU a second with no request in sight (docs/benchmarks.md, "Server
// CPU per request").
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.h"
#include "support/process.h"

namespace idforge::e2e {
namespace {

namespace fs = std::filesystem;

// How many threads of the process bear each name.
std::map<std::string, int> thread_names(pid_t pid) {
  std::map<std::string, int> names;
  for (const fs::directory_entry& task :
       fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "task")) {
    std::string name = test_support::read_file(task.path() / "comm");
    if (!name.empty() && name.back() == '\n') name.pop_back();
    if (!name.empty()) ++names[name];
  }
  return names;
}

// Context switches of all the process's threads so far (each time one slept or was
// preempted): how often the process woke.
long context_switches(pid_t pid) {
  long total = 0;
  for (const fs::directory_entry& task :
       fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "task")) {
    std::istringstream status(test_support::read_file(task.path() / "status"));
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("voluntary_ctxt_switches:") ||
          line.starts_with("nonvoluntary_ctxt_switches:")) {
        total += std::stol(line.substr(line.find(':') + 1));
      }
    }
  }
  return total;
}

TEST(ServeThreadsTest, ThreadsAreNamedAndAnIdleServerHasNoClockThread) {
  ServeOptions options;
  options.flags = {"--io-threads", "2"};
  options.setup = {{"tag", "create", "orders"}};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
  // Every kind of ID, both protocols: whatever the request paths touch is running now.
  for (const char* path : {"/v1/snowflake", "/v1/segment/orders", "/v1/uuid7", "/v1/ulid",
                           "/api/snowflake/get/x", "/api/segment/get/orders"}) {
    EXPECT_EQ(server->http(path).status, 200) << path;
  }
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"ID.SNOWFLAKE"}, {"INCR", "orders"}, {"ID.UUID7"}, {"ID.ULID"}}) {
    RunResult r = server->redis(command);
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    EXPECT_EQ(r.out.find("(error)"), std::string::npos) << r.summary();
  }

  const std::map<std::string, int> names = thread_names(server->pid());
  std::string listed;
  for (const auto& [name, count] : names) listed += name + " x" + std::to_string(count) + "; ";
  EXPECT_EQ(names.count("idforge-io-0"), 1u) << listed;
  EXPECT_EQ(names.count("idforge-io-1"), 1u) << listed;
  EXPECT_EQ(names.count("idforge-marks"), 1u) << listed;
  EXPECT_EQ(names.count("idforge-probe-0"), 1u) << listed;
  EXPECT_EQ(names.count("idforge-clock"), 0u) << listed;

  // Idle, the server's threads wake for their timers (store probes, lease renewal,
  // connection sweeps): about 40 times a second here; the clock thread alone would add
  // a thousand.
  const long before = context_switches(server->pid());
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double per_second = static_cast<double>(context_switches(server->pid()) - before) / seconds;
  EXPECT_LT(per_second, 300) << listed;
}

}  // namespace
}  // namespace idforge::e2e
