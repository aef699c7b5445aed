// The fleet records of the ZooKeeper registry: one persistent node per record,
// PATH/CLUSTER/fleet/NAME, each replace a create (when absent) or a versioned set, so a
// quorum orders every write.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "coord/zookeeper/zk_session.h"
#include "core/fleet_records.h"

namespace idforge::coord {

// `session` hands out the registry's live session (opening one when needed); `dir` is
// PATH/CLUSTER/fleet, created by whoever opens a session.
std::unique_ptr<FleetRecords> make_zookeeper_records(
    std::function<Result<std::shared_ptr<ZkSession>>()> session, std::string dir,
    std::string described);

}  // namespace idforge::coord
