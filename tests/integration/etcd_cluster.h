// A real multi-member etcd cluster and real `idforge serve` processes on it, for the
// tests in etcd_cluster_test.cc.
//
// The cluster comes from `scripts/test-services start etcd-cluster` in a directory of
// the Services root, so Services::stop_all (and the script's watchdog) stop it. Each
// member is a Server of its own (its directory DIR/member-K), so Services::kill, pause,
// resume, restart and stop work on one member.
//
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "idforge/status.h"
#include "integration/serve_node.h"
#include "integration/services.h"

namespace idforge::integration {

struct EtcdCluster {
  std::string dir;
  std::string url;              // etcd://127.0.0.1:P1,127.0.0.1:P2,...
  std::vector<Server> members;  // kind kEtcd, url etcd://127.0.0.1:PK
};

// `members` etcd members on 127.0.0.1, with a leader, or why not.
Result<EtcdCluster> start_etcd_cluster(const std::string& name, int members = 3);

// The member that is the leader now, as the members that answer say (etcd's
// /v3/maintenance/status, asked of each in turn); Unavailable when none names one.
Result<size_t> etcd_leader(const EtcdCluster& cluster);

}  // namespace idforge::integration
