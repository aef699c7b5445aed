#include "integration/redis_sentinel.h"

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"
#include "support/text.h"

namespace idforge::integration::redis_ha {
namespace {

using test::trim;

using Clock = std::chrono::steady_clock;

// `scripts/test-services start KIND DIR ARGS... --owner <this process>`; the server's URL.
Result<Server> start(const std::string& kind, const std::string& name,
                     const std::vector<std::string>& args) {
  Server server;
  server.kind = ServerKind::kRedis;
  server.dir = Services::get().make_dir(name);
  if (server.dir.empty()) return Status::IoError("cannot make a directory for " + name);
  std::vector<std::string> argv = {script_path("test-services"), "start", kind, server.dir};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--owner", std::to_string(getpid())});
  // stderr stays on the test's own: a failing start explains itself in the test log.
  const test_support::RunResult r = test_support::run_command(
      argv, server.dir + ".start", {.capture_err = false, .timeout = std::nullopt});
  server.url = trim(r.out);
  if (r.exit_code != 0 || server.url.empty()) {
    return Status::Unavailable("scripts/test-services start " + kind + " failed (exit " +
                               std::to_string(r.exit_code) + "); see its message above and " +
                               server.dir);
  }
  return server;
}

// One field of `SENTINEL master NAME` as `member` answers it; "" when it does not.
std::string sentinel_field(const Server& member, const std::string& master,
                           const std::string& field) {
  const test_support::RunResult r = Services::get().client(member, {"SENTINEL", "master", master});
  std::istringstream lines(r.out);
  std::string line;
  std::string previous;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (previous == field) return line;
    previous = line;
  }
  return "";
}

}  // namespace

int port_of(const Server& server) {
  const size_t colon = server.url.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(server.url.c_str() + colon + 1);
}

Result<Server> start_redis(const std::string& name, bool persistence) {
  if (persistence) return start("redis", name, {});
  return start("redis", name, {"--no-persistence"});
}

Result<Server> start_replica(const Server& primary, const std::string& name) {
  return start("redis-replica", name, {"--primary", primary.dir});
}

Result<Sentinels> start_sentinels(const Server& primary, const std::string& name,
                                  const std::string& master_name, int count) {
  Result<Server> group =
      start("redis-sentinel", name,
            {"--primary", primary.dir, "--name", master_name, "--count", std::to_string(count)});
  if (!group.ok()) return group.status();
  Sentinels s;
  s.group = *group;
  s.master_name = master_name;
  for (int k = 1; k <= count; ++k) {
    Server member;
    member.kind = ServerKind::kRedis;
    member.dir = s.group.dir + "/sentinel-" + std::to_string(k);
    member.url =
        "redis-sentinel://127.0.0.1:" + trim(test_support::read_file(member.dir + "/port")) + "/" +
        master_name;
    s.members.push_back(member);
  }
  return s;
}

Status wait_until_ready(const Sentinels& sentinels, int replicas, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  const std::string others = std::to_string(sentinels.members.size() - 1);
  for (;;) {
    std::string seen;
    bool ready = true;
    for (const Server& m : sentinels.members) {
      const std::string known = sentinel_field(m, sentinels.master_name, "num-other-sentinels");
      const std::string slaves = sentinel_field(m, sentinels.master_name, "num-slaves");
      seen += " " + m.url + ": " + known + " other Sentinels, " + slaves + " replicas;";
      ready = ready && known == others && std::atoi(slaves.c_str()) >= replicas;
    }
    if (ready) return Status::Ok();
    if (Clock::now() > deadline) {
      return Status::DeadlineExceeded("the Sentinels did not meet in time:" + seen);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int named_primary_port(const Sentinels& sentinels) {
  for (const Server& m : sentinels.members) {
    const test_support::RunResult r =
        Services::get().client(m, {"SENTINEL", "get-master-addr-by-name", sentinels.master_name});
    std::istringstream lines(r.out);
    std::string host;
    std::string port;
    if (r.exit_code == 0 && std::getline(lines, host) && std::getline(lines, port)) {
      const int p = std::atoi(trim(port).c_str());
      if (p > 0) return p;
    }
  }
  return 0;
}

}  // namespace idforge::integration::redis_ha
