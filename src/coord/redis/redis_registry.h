// The Redis WorkerRegistry. See core/worker_registry.h for the contract.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/worker_registry.h"

namespace idforge::coord {

// What a Redis registry URL's query says beyond the common ttl_ms and cluster.
struct RedisLeaseWrites {
  // WAIT for this many replicas after each acquire and renew; fewer in time is a
  // failed acquire or renew. 0: no WAIT.
  uint32_t min_replicas = 0;
  // How long WAIT waits; 0: half the command timeout (which follows the TTL).
  uint32_t replica_wait_ms = 0;
};

struct RedisRegistryUrl {
  std::string rest;  // the URL without the options taken
  RedisLeaseWrites writes;
};

// Takes min_replicas and replica_wait_ms off `url`'s query; InvalidArgument naming a
// bad value. The rest (ttl_ms, cluster) stays for open_registry.
Result<RedisRegistryUrl> take_redis_registry_options(std::string_view url);

// `target` is the URL without its ?query (parsed into `options` by the factory).
Result<std::unique_ptr<WorkerRegistry>> open_redis_registry(std::string_view target,
                                                            const RegistryOptions& options,
                                                            const RedisLeaseWrites& writes = {});

// Whether `registry` may forget a live lease together with its mark (Redis: a flush, a
// restart without persistence, a failover to a replica that missed writes). Its
// holders must then fence early enough that timing alone keeps them apart from the
// slot's next holder, whatever the start delay of their own lease (held_lease.cc).
bool may_lose_marks(const WorkerRegistry& registry);

}  // namespace idforge::coord
