// Calendar arithmetic shared by the ISO-8601 text (time_format.cc, where it is
// defined), serial templates and time zones. Proleptic Gregorian calendar, years
// 0000..9999 only. Pure functions: thread-safe. Internal: included as "core/calendar.h"
// ("calendar.h" in core).
#pragma once

#include <cstdint>
#include <optional>

namespace idforge {

struct CivilTime {
  int year;  // 0..9999
  int month;
  int day;
  int hour;
  int minute;
  int second;
  int millisecond;
};

// The calendar fields of `unix_ms` read as UTC (add a zone offset first for local
// time), or nullopt outside years 0000..9999.
std::optional<CivilTime> civil_time_from_unix_ms(int64_t unix_ms);

// Days since 1970-01-01 of a valid date (month 1..12, day within the month) in years
// 0000..9999; also 10000-01-01, so a caller can find the length of December 9999.
int64_t unix_days_from_civil(int year, int month, int day);

}  // namespace idforge
