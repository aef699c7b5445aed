// The tables a MySQL or MariaDB store can use, and what it does on each: shared by
// mysql_store.cc (the SegmentStore), mysql_ranges.cc (allocation on each table) and
// mysql_meta.cc (the failover guard's calls). docs/stores.md, "MySQL and MariaDB".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/segment_store.h"
#include "store/mysql/mysql_client.h"
#include "store/mysql/mysql_url.h"

namespace idforge::store {

// The columns a scheme's table has, by role; "" when it has none.
struct MysqlColumns {
  const char* tag;
  const char* max_id;
  const char* step;
  const char* description;
  const char* updated;  // idforge: BIGINT Unix ms; leaf, tinyid: a TIMESTAMP
  const char* extra;    // further columns the scheme reads ("" for none)
};
const MysqlColumns& mysql_columns(MysqlScheme scheme);

// Whether the stored max_id is the next number to hand out (Leaf, SEQUENCE: a range is
// [max_id - step, max_id)) rather than the last one handed out (idforge, Tinyid:
// (max_id - step, max_id]).
inline bool stores_next_free(MysqlScheme scheme) {
  return scheme == MysqlScheme::kLeaf || scheme == MysqlScheme::kSequence;
}

// A store's table and how to reach it.
struct MysqlTable {
  MysqlClient& db;
  MysqlScheme scheme;
  std::string name;    // the table
  std::string quoted;  // `name`, for SQL
  bool mariadb = false;
  uint64_t default_step = 1000;  // SEQUENCE has no step column
};

// The expression that reads the server's identity in the same statement as a range
// (docs/stores.md, "When a store goes back"): MySQL's server_uuid; MariaDB, which has
// none, its server_id with host and port.
const char* mysql_identity_sql(bool mariadb);

// Allocation on each table (mysql_ranges.cc).
Result<Segment> mysql_allocate(MysqlTable& t, std::string_view tag, uint64_t step);
Status mysql_create_tag(MysqlTable& t, const TagSpec& spec);
Result<std::vector<TagInfo>> mysql_list_tags(MysqlTable& t);
Result<TagInfo> mysql_get_tag(MysqlTable& t, std::string_view name);
Status mysql_set_step(MysqlTable& t, std::string_view name, uint64_t step);

// The failover guard's calls (mysql_meta.cc), kept in table idforge_meta under keys
// named after the table, so stores on several tables of one database keep apart.
inline constexpr const char* kMysqlCreateMetaSql =
    "CREATE TABLE IF NOT EXISTS idforge_meta (k VARCHAR(128) NOT NULL PRIMARY KEY,"
    " v VARCHAR(255) NOT NULL) ENGINE=InnoDB";
Result<StoreIdentity> mysql_identity(MysqlTable& t);
Result<bool> mysql_adopt_identity(MysqlTable& t, const IdentityChange& change);
Result<Durability> mysql_durability(MysqlTable& t);
Status mysql_claim_place(MysqlTable& t, uint32_t index, uint32_t count);

}  // namespace idforge::store
