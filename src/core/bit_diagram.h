// The bit diagram that `idforge parse` prints and the web page shows: an ID's 64 bits
// cut into a layout's fields. Presentation, not part of the library's API: the CLI and
// the server's JSON include it as "core/bit_diagram.h".
//
// Pure function: thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "idforge/layout.h"

namespace idforge {

// A table of `id`'s 64 bits cut into `layout`'s fields, one column per field (the unused
// high bits first, as "sign (1)" or "unused (n)"), each line ending in '|'. For twitter
// and 910499571847892992:
//   field  | sign (1) | time (41)                                 | datacenter (5) | ...
//   bits   | 63       | 62..22                                    | 21..17         | ...
//   binary | 0        | 00011001010001010111110100010010101110000 | 10001          | ...
//   value  | 0        | 217080014192                              | 17             | ...
// Works for any id, also one that Layout::decode() rejects (its high bits show as set).
std::string bit_diagram(const Layout& layout, uint64_t id);

}  // namespace idforge
