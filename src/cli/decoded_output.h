// How `parse` and `compose` show a Snowflake ID: the same text and the same JSON
// object from both, so a composed ID can be checked against a parsed one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "idforge/layout.h"

namespace idforge::cli {

// {"id":"910499571847892992","layout":"twitter","unix_ms":...,"time":"...Z",
//  "datacenter":17,"worker":25,"sequence":0}: the id as a string (JavaScript loses
// integers above 2^53), then one key per non-time field by its layout's name.
nlohmann::ordered_json decoded_json(const Layout& layout, const DecodedId& decoded);

// Aligned "name: value" lines (the time as Unix ms and ISO-8601 UTC), a blank line
// and the layout's bit diagram.
std::string decoded_text(const Layout& layout, const DecodedId& decoded);

}  // namespace idforge::cli
