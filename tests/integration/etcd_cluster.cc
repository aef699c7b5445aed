#include "integration/etcd_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "coord/etcd/etcd_client.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::trim;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

Result<EtcdCluster> start_etcd_cluster(const std::string& name, int members) {
  EtcdCluster cluster;
  cluster.dir = Services::get().make_dir(name);
  if (cluster.dir.empty()) return Status::IoError("cannot make a directory for " + name);
  const test_support::RunResult r = test_support::run_command(
      {script_path("test-services"), "start", "etcd-cluster", cluster.dir, "--members",
       std::to_string(members), "--owner", std::to_string(getpid())},
      cluster.dir + ".start", {.capture_err = false, .timeout = std::nullopt});
  cluster.url = trim(r.out);
  if (r.exit_code != 0 || cluster.url.rfind("etcd://", 0) != 0) {
    return Status::Unavailable("scripts/test-services start etcd-cluster failed (exit " +
                               std::to_string(r.exit_code) + "); see its message above and " +
                               cluster.dir);
  }
  std::string rest = cluster.url.substr(7);
  for (int k = 1; k <= members; ++k) {
    const size_t comma = rest.find(',');
    Server member;
    member.kind = ServerKind::kEtcd;
    member.dir = cluster.dir + "/member-" + std::to_string(k);
    member.url = "etcd://" + rest.substr(0, comma);
    cluster.members.push_back(std::move(member));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return cluster;
}

Result<size_t> etcd_leader(const EtcdCluster& cluster) {
  std::map<std::string, size_t> index_of;  // member id -> member
  std::map<std::string, int> votes;        // leader id -> members naming it
  std::string errors;
  for (size_t i = 0; i < cluster.members.size(); ++i) {
    auto client =
        coord::EtcdClient::open(cluster.members[i].url, {.connect_ms = 300, .request_ms = 1000});
    if (!client.ok()) return client.status();
    Result<nlohmann::json> status =
        (*client)->call("/v3/maintenance/status", nlohmann::json::object());
    if (!status.ok()) {
      errors += "; " + status.status().message();
      continue;
    }
    const nlohmann::json& answer = *status;
    if (answer.contains("header") && answer["header"].contains("member_id")) {
      index_of[answer["header"]["member_id"].get<std::string>()] = i;
    }
    if (answer.contains("leader") && answer["leader"].is_string()) {
      ++votes[answer["leader"].get<std::string>()];
    }
  }
  for (const auto& [leader, count] : votes) {
    if (const auto it = index_of.find(leader); it != index_of.end() && leader != "0") {
      return it->second;
    }
  }
  return Status::Unavailable("no etcd member names a leader that answers" + errors);
}

}  // namespace idforge::integration
