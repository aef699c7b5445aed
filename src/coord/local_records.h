// The fleet records of the `local:` registry: an append-only log, DIR/fleet-records, one
// line "NAME VALUE" per change, appended and fsynced under an flock on
// DIR/fleet-records.lock, and written anew (store/durable_file.h) when old lines make up
// most of it. One fsync per change however many records there are. Every process that
// uses DIR shares it, as it shares the slot files. Records of data directories from
// before the log (one file each in DIR/fleet) are carried into it by the first write.
#pragma once

#include <memory>
#include <string>

#include "core/fleet_records.h"

namespace idforge::coord {

std::unique_ptr<FleetRecords> make_local_records(std::string dir, std::string described);

}  // namespace idforge::coord
