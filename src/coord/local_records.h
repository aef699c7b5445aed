// The fleet records of the `local:` registry: one file per record in DIR/fleet, changed
// under an flock on DIR/fleet/.lock and written durably (store/durable_file.h). Every
// process that uses DIR shares them, as it shares the slot files.
#pragma once

#include <memory>
#include <string>

#include "core/fleet_records.h"

namespace idforge::coord {

std::unique_ptr<FleetRecords> make_local_records(std::string dir, std::string described);

}  // namespace idforge::coord
