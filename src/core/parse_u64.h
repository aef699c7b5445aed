// parse_u64(): a number the user typed (a flag, a query parameter, an ID), read
// strictly, with an error that says what was wrong. Pure function: thread-safe.
// Internal: included as "core/parse_u64.h".
#pragma once

#include <cstdint>
#include <string_view>

#include "idforge/status.h"

namespace idforge {

// Strict decimal parse of an unsigned 64-bit number: digits only (leading zeros are
// fine), no sign, no spaces, no overflow. The InvalidArgument names `what` ("ID",
// "--count") and quotes the text, escaped and cut at 64 bytes.
Result<uint64_t> parse_u64(std::string_view text, std::string_view what);

}  // namespace idforge
