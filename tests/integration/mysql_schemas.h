// The tables of the systems idforge takes over in place, as their projects publish them
// (Leaf's leaf_alloc, Tinyid's tiny_id_info and tiny_id_token, the classic SEQUENCE
// table), and the statements their servers run on them, for the tests that run those
// servers' statements beside idforge.
#pragma once

#include <string>

namespace idforge::integration::mysql_schema {

inline constexpr const char* kLeafAlloc =
    "CREATE TABLE IF NOT EXISTS leaf_alloc ("
    " biz_tag varchar(128) NOT NULL DEFAULT '',"
    " max_id bigint(20) NOT NULL DEFAULT '1',"
    " step int(11) NOT NULL,"
    " description varchar(256) DEFAULT NULL,"
    " update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,"
    " PRIMARY KEY (biz_tag)) ENGINE=InnoDB";

inline constexpr const char* kTinyIdInfo =
    "CREATE TABLE IF NOT EXISTS tiny_id_info ("
    " id bigint(20) unsigned NOT NULL AUTO_INCREMENT,"
    " biz_type varchar(63) NOT NULL DEFAULT '',"
    " begin_id bigint(20) NOT NULL DEFAULT '0',"
    " max_id bigint(20) NOT NULL DEFAULT '0',"
    " step int(11) DEFAULT '0',"
    " delta int(11) NOT NULL DEFAULT '1',"
    " remainder int(11) NOT NULL DEFAULT '0',"
    " create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',"
    " update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',"
    " version bigint(20) NOT NULL DEFAULT '0',"
    " PRIMARY KEY (id), UNIQUE KEY uniq_biz_type (biz_type)) ENGINE=InnoDB";

inline constexpr const char* kTinyIdToken =
    "CREATE TABLE IF NOT EXISTS tiny_id_token ("
    " id int(11) unsigned NOT NULL AUTO_INCREMENT,"
    " token varchar(255) NOT NULL DEFAULT '',"
    " biz_type varchar(63) NOT NULL DEFAULT '',"
    " remark varchar(255) NOT NULL DEFAULT '',"
    " create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',"
    " update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',"
    " PRIMARY KEY (id)) ENGINE=InnoDB";

inline constexpr const char* kSequence =
    "CREATE TABLE IF NOT EXISTS SEQUENCE ("
    " table_name varchar(64) NOT NULL PRIMARY KEY,"
    " next_id bigint NOT NULL) ENGINE=InnoDB";

// One allocation as a Leaf server makes it (updateMaxIdAndGetLeafAlloc, or with a
// custom step updateMaxIdByCustomStepAndGetLeafAlloc): the row moves by the step, then
// is read back in the same transaction; Leaf hands out [max_id - step, max_id). Prints
// "max_id<TAB>step used".
inline std::string leaf_allocation(const std::string& tag, long custom_step = 0) {
  const std::string add = custom_step > 0 ? std::to_string(custom_step) : "step";
  const std::string used = custom_step > 0 ? std::to_string(custom_step) : "step";
  return "START TRANSACTION; UPDATE leaf_alloc SET max_id = max_id + " + add +
         " WHERE biz_tag = '" + tag + "'; SELECT max_id, " + used +
         " FROM leaf_alloc WHERE biz_tag = '" + tag + "'; COMMIT;";
}

// One attempt as a Tinyid server makes it (DbSegmentIdServiceImpl.getNextSegmentId):
// read the row, then move max_id by the step only if max_id and version are still
// what was read. Prints "updated<TAB>old max<TAB>new max<TAB>delta<TAB>remainder"; the
// server hands out (old, new] with x % delta == remainder when updated is 1.
inline std::string tinyid_attempt(const std::string& tag) {
  return "SELECT id, max_id, step, version, delta, remainder INTO @id, @m, @s, @v, @d, @r FROM "
         "tiny_id_info WHERE biz_type = '" +
         tag +
         "'; UPDATE tiny_id_info SET max_id = @m + @s, update_time = NOW(), version = version + 1"
         " WHERE id = @id AND max_id = @m AND version = @v AND biz_type = '" +
         tag + "'; SELECT ROW_COUNT(), @m, @m + @s, @d, @r;";
}

}  // namespace idforge::integration::mysql_schema
