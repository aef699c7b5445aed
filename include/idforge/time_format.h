// Unix milliseconds as ISO-8601 text and back, as idforge prints and reads times: show
// the time of a decoded ID (DecodedId::unix_ms, Ulid::unix_ms, inspect(uuid).unix_ms),
// read an epoch or a time given as text.
//
//   idforge::format_iso8601_utc(decoded.unix_ms)       // "2017-09-20T13:43:08.849Z"
//   idforge::parse_time("2010-11-04T01:42:54.657Z")    // 1288834974657
//
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
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

}  // namespace idforge
