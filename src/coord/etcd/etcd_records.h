// The fleet records of the etcd registry: one key per record, /idforge/CLUSTER/fleet/NAME,
// each replace one transaction that compares the key's value (or its absence).
#pragma once

#include <memory>
#include <string>

#include "coord/etcd/etcd_client.h"
#include "core/fleet_records.h"

namespace idforge::coord {

// `client` must outlive the records; `prefix` is "/idforge/CLUSTER/".
std::unique_ptr<FleetRecords> make_etcd_records(EtcdClient& client, std::string prefix,
                                                std::string described);

}  // namespace idforge::coord
