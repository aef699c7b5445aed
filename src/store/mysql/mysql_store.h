// The MySQL and MariaDB SegmentStore (docs/stores.md, "MySQL and MariaDB"): idforge's
// own table, or Leaf's, Tinyid's or a SEQUENCE table used in place with their own range
// conventions, so idforge servers can run beside Leaf or Tinyid servers on the same
// rows. See segment_store.h for the contract every store keeps; mysql_url.h for the URL.
#pragma once

#include <memory>
#include <string_view>

#include "idforge/segment_store.h"

namespace idforge::store {

// Connects, checks the table (creating idforge's own when missing) and returns the
// store. InvalidArgument for a bad URL; IoError for a missing table or one without the
// scheme's columns (naming the column); Unavailable when the server cannot be reached.
Result<std::unique_ptr<SegmentStore>> open_mysql_store(std::string_view url);

}  // namespace idforge::store
