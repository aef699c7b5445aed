// quote_text(): user text as it may appear inside an error message. Input can come off
// the network and messages end up in logs, JSON and RESP "-ERR" lines, so the result is
// printable ASCII, one line, and short: the quote mark, a backslash and anything
// outside 0x20..0x7e become \xNN, and text past `max_shown` bytes becomes "...".
// Pure function: thread-safe. Internal: included as "core/quote.h" ("quote.h" in core).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace idforge {

std::string quote_text(std::string_view text, char mark = '\'', size_t max_shown = 64);

}  // namespace idforge
