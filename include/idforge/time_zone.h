// TimeZone: the UTC offset in effect at an instant, for serial templates and anything
// else that prints local dates. Core, no I/O: the bytes of a zoneinfo file come from the
// caller, who reads them (from /usr/share/zoneinfo/Asia/Shanghai, say) and passes them
// to from_tzif.
//
// A zone is UTC, a fixed offset, a POSIX TZ rule, or a parsed TZif file (RFC 8536,
// versions 1 to 4) with its transitions and, after the last transition, the POSIX TZ
// rule from the file's footer (so DST keeps working past 2037 and in "slim" files).
// Leap seconds are not modelled: files with leap-second records (the "right/" zones)
// are refused, because their transition times are not Unix times.
//
// A TimeZone is immutable; copies share the parsed data and are cheap. Multiple threads
// may call const methods on the same object without synchronization.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "idforge/status.h"

namespace idforge {

class TimeZone {
 public:
  // UTC, named "UTC".
  TimeZone() = default;
  static TimeZone utc() { return TimeZone(); }

  // "UTC" or "Z" (UTC), or an ISO-8601 offset "+08:00", "-0530", "+08" (east of UTC is
  // positive, -23:59..+23:59). Named "UTC" or the canonical "+HH:MM".
  static Result<TimeZone> fixed(std::string_view text);

  // A POSIX TZ rule as found in a TZif footer: "CST-8", "EST5EDT,M3.2.0,M11.1.0",
  // "<+0330>-3:30", including RFC 8536's extensions (hours -167..167 in rule times).
  // Note POSIX's sign: "EST5" is five hours *west* of UTC. A rule with a DST name must
  // say when DST starts and ends. Named `rule`.
  static Result<TimeZone> from_posix_tz(std::string_view rule);

  // The contents of a TZif file. Uses the 64-bit data block when the version is 2 or
  // later; before the first transition the first local time type applies, after the
  // last one the footer rule (or, without one, the last transition's type). Every count
  // and index is bounds-checked: arbitrary bytes give an InvalidArgument, never a crash.
  static Result<TimeZone> from_tzif(std::string_view bytes, std::string name);

  // Seconds to add to UTC to get local time at `unix_ms` (+28800 for Asia/Shanghai).
  int32_t offset_seconds_at(int64_t unix_ms) const;

  // "UTC", "+08:00", or the name given to from_tzif ("Asia/Shanghai").
  const std::string& name() const { return name_; }

  // True for UTC and fixed offsets: offset_seconds_at is the same at every instant.
  bool is_fixed() const { return rules_ == nullptr; }

  struct Rules;  // defined in time_zone.cc

 private:
  TimeZone(std::string name, int32_t fixed_offset, std::shared_ptr<const Rules> rules)
      : name_(std::move(name)), fixed_offset_(fixed_offset), rules_(std::move(rules)) {}

  std::string name_ = "UTC";
  int32_t fixed_offset_ = 0;            // used when rules_ is null
  std::shared_ptr<const Rules> rules_;  // transitions and/or a POSIX rule
};

}  // namespace idforge
