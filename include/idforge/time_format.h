// Conversions between Unix milliseconds and ISO-8601 text, used by the CLI, the server
// and decoders. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idforge/status.h"

namespace idforge {

// "2017-09-20T13:43:08.849Z" (always UTC, always milliseconds). Works for any
// int64 ms in years 0000..9999; outside that range returns the number as text.
std::string format_iso8601_utc(int64_t unix_ms);

// Accepts a decimal Unix ms ("1505914988849", "-1") or an ISO-8601 date-time:
// "2017-09-20T13:43:08.849Z", "2017-09-20T13:43:08Z", "2017-09-20 13:43:08+02:00",
// "2017-09-20" (midnight UTC). 'T' or a space between date and time; seconds and the
// fraction ('.' or ',') are optional; the zone is Z, ±HH:MM, ±HHMM or ±HH, and a missing
// zone means UTC. Fractions past ms are truncated. Years are 0000..9999; 23:59:60 (a
// leap second) has no Unix ms and is refused. No surrounding spaces. Anything else is
// an InvalidArgument that quotes the text and says what was expected.
Result<int64_t> parse_time(std::string_view text);

// Strict decimal parse of an unsigned 64-bit number: digits only (leading zeros are
// fine), no sign, no spaces, no overflow. The InvalidArgument names `what` ("ID",
// "--count") and quotes the text, escaped and cut at 64 bytes.
Result<uint64_t> parse_u64(std::string_view text, std::string_view what);

// Calendar arithmetic shared with serial templates and time zones. Proleptic Gregorian
// calendar, years 0000..9999 only.
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
