// FleetRecords: small records the whole fleet shares, kept by the worker-id registry the
// fleet already runs (etcd, ZooKeeper, Redis, or the files of `local:`), and changed only
// by compare-and-set. The fleet floor (fleet_floor.h) keeps in them what every node has
// taken of each segment tag, in a place that cannot go back together with a store.
//
// Internal: included as "core/fleet_records.h". Implementations: src/coord/*_records.cc,
// reached through WorkerRegistry::fleet_records(). They block; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "idforge/status.h"

namespace idforge {

// One record as read: absent, or present with its value.
struct FleetRecord {
  bool exists = false;
  std::string value;

  bool operator==(const FleetRecord&) const = default;
};

class FleetRecords {
 public:
  virtual ~FleetRecords() = default;

  // `name` is 1 to 200 of [A-Za-z0-9_.:-] and never "." or ".."; each backend maps it
  // under its cluster's prefix. Unavailable or IoError when the registry cannot answer.
  virtual Result<FleetRecord> read(std::string_view name) = 0;

  // Sets `name` to `value` only if it is still `expected` (absent, or present with that
  // value): true. Otherwise changes nothing, puts the record as it is now in *now and
  // answers false. Atomic against every other replace of the fleet; durable (as the
  // registry keeps its leases) when it answers true. An error leaves open whether the
  // write happened: the caller reads again.
  virtual Result<bool> replace(std::string_view name, const FleetRecord& expected,
                               std::string_view value, FleetRecord* now) = 0;

  // Where the records are, for messages: "etcd://127.0.0.1:2379 cluster default".
  virtual std::string describe() const = 0;
};

// InvalidArgument unless `name` is a record name as read() describes.
Status check_record_name(std::string_view name);

}  // namespace idforge
