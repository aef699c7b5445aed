// The fleet records of the `local:` registry: an append-only log, DIR/fleet-records, one
// line "NAME VALUE" per change, appended under an flock on DIR/fleet-records.lock and
// fsynced before the change is answered, and written anew (store/durable_file.h) when old
// lines make up most of it. At most one fsync per change however many records there are;
// changes made at the same time share one (group commit). Every process that
// uses DIR shares it, as it shares the slot files. Records of data directories from
// before the log (one file each in DIR/fleet) are carried into it by the first write.
#pragma once

#include <memory>
#include <string>

#include "core/fleet_records.h"

namespace idforge::coord {

std::unique_ptr<FleetRecords> make_local_records(std::string dir, std::string described);

}  // namespace idforge::coord
