// Loads a TimeZone by name: the I/O half of idforge/time_zone.h.
//
//   "UTC", "Z", "+08:00", "-0530", "+08"   built in, no file
//   "Asia/Shanghai", "America/New_York"    the TZif file of that IANA name, looked up in
//                                          $TZDIR (when set) and then /usr/share/zoneinfo
//
// Names must be relative paths of letters, digits and "/_-+." with no ".." and no
// leading '/', so a name from a config file or an admin request cannot read outside the
// zoneinfo directories. Thread-safe (reads the environment and the file system only).
#pragma once

#include <string_view>

#include "idforge/status.h"
#include "idforge/time_zone.h"

namespace idforge::store {

// InvalidArgument for a bad name or a file that is not TZif, NotFound when no directory
// has it, IoError when it cannot be read.
Result<TimeZone> load_time_zone(std::string_view name);

}  // namespace idforge::store
