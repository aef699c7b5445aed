// Redis topologies for the failover tests (redis_sentinel_test.cc, redis_registry_test.cc):
// a Redis without persistence, a replica, and Sentinels, started by scripts/test-services
// in directories of the Services root, so Services::stop_all and the script's watchdogs
// stop them. Each is a Server: Services::kill, stop, restart, pause, resume and client
// work on it (on the Sentinels' directory: on every Sentinel).
//
// Not thread-safe: call from the test's thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "idforge/status.h"
#include "integration/services.h"

namespace idforge::integration::redis_ha {

// `start redis DIR [--no-persistence]`: without persistence a restart comes back empty.
Result<Server> start_redis(const std::string& name, bool persistence);
// `start redis-replica DIR --primary PDIR`; returns once the replica has synced.
Result<Server> start_replica(const Server& primary, const std::string& name);

struct Sentinels {
  Server group;  // url: redis-sentinel://127.0.0.1:P1,...,127.0.0.1:PN/NAME
  std::string master_name;
  std::vector<Server> members;  // DIR/sentinel-K, one Sentinel each
};

// `count` Sentinels watching `primary` as `master_name` (quorum count/2+1, a primary
// silent for 1 s is down). They answer at once but can fail over only once they have
// met: wait_until_ready.
Result<Sentinels> start_sentinels(const Server& primary, const std::string& name,
                                  const std::string& master_name, int count = 3);
// Waits until every Sentinel knows all the others and at least `replicas` replicas;
// DeadlineExceeded, with what each one knew, after `limit`.
Status wait_until_ready(const Sentinels& sentinels, int replicas, std::chrono::milliseconds limit);
// The port of the primary the first Sentinel that answers names; 0 when none does.
int named_primary_port(const Sentinels& sentinels);

// The port of a server's redis:// URL.
int port_of(const Server& server);

}  // namespace idforge::integration::redis_ha
