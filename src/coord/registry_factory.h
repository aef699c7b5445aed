// Opens a WorkerRegistry from its URL: the one place that picks the backend.
//
//   static:DC/WORKER                 fixed ids (also from IDFORGE_DATACENTER_ID / _WORKER_ID)
//   local:DIR                        one flock'ed file per slot in DIR
//   redis://HOST:PORT[/DB]           Redis, atomic Lua scripts
//   etcd://HOST:PORT                 etcd v3 through its JSON gateway
//   zookeeper://HOST:PORT/PATH       ZooKeeper, ephemeral nodes
//
// Any of them takes ?ttl_ms=N&cluster=NAME, overriding `options`.
#pragma once

#include <memory>
#include <string_view>

#include "core/worker_registry.h"

namespace idforge::coord {

Result<std::unique_ptr<WorkerRegistry>> open_registry(std::string_view url,
                                                      RegistryOptions options);

}  // namespace idforge::coord
