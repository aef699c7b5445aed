// Opening each kind of store against its real server (or file), for tests that run the
// same checks on all of them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>

#include "idforge/segment_store.h"
#include "integration/services.h"
#include "store/store_factory.h"

namespace idforge::integration {

// kMysqlLeaf and kMysqlTinyid: MariaDB with Leaf's and Tinyid's own tables used in place.
enum class StoreKind { kSqlite, kPostgres, kRedis, kMysql, kMysqlLeaf, kMysqlTinyid };

inline std::string store_kind_name(StoreKind kind) {
  switch (kind) {
    case StoreKind::kSqlite:
      return "sqlite";
    case StoreKind::kPostgres:
      return "postgres";
    case StoreKind::kRedis:
      return "redis";
    case StoreKind::kMysql:
      return "mysql";
    case StoreKind::kMysqlLeaf:
      return "mysql_leaf";
    case StoreKind::kMysqlTinyid:
      return "mysql_tinyid";
  }
  return "unknown";
}

inline bool is_mysql(StoreKind kind) {
  return kind == StoreKind::kMysql || kind == StoreKind::kMysqlLeaf ||
         kind == StoreKind::kMysqlTinyid;
}

// What describe() starts with: the URL scheme.
inline std::string store_scheme_name(StoreKind kind) {
  return is_mysql(kind) ? "mysql" : store_kind_name(kind);
}

// The highest ID a tag can reach: 2^63-1, except on Leaf's table, whose max_id is the
// next number to hand out and so cannot pass the BIGINT limit itself.
inline uint64_t highest_id(StoreKind kind) {
  const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return kind == StoreKind::kMysqlLeaf ? max - 1 : max;
}

// Whether a store of `kind` keeps a tag's description and serial template: Leaf's table
// has no serial template, Tinyid's neither.
inline bool keeps_descriptions(StoreKind kind) { return kind != StoreKind::kMysqlTinyid; }
inline bool keeps_serial_templates(StoreKind kind) {
  return kind != StoreKind::kMysqlLeaf && kind != StoreKind::kMysqlTinyid;
}

// A MariaDB store on table `table` of the shared server, made with `create_sql` (whose
// {} is the table) unless it is idforge's own; `query` adds to the URL.
inline Result<std::string> mysql_table_url(const std::string& table, const char* create_sql,
                                           const std::string& query) {
  Result<std::string> url = Services::get().mariadb_url();
  if (!url.ok()) return url.status();
  if (create_sql != nullptr) {
    Result<Server> server = Services::get().shared(ServerKind::kMariadb);
    if (!server.ok()) return server.status();
    std::string ddl = create_sql;
    ddl.replace(ddl.find("{}"), 2, table);
    const test_support::RunResult made = Services::get().client(*server, {"-e", ddl});
    if (made.exit_code != 0) return Status::IoError("CREATE TABLE failed: " + made.err);
  }
  return *url + "?table=" + table + query;
}

inline constexpr const char* kLeafTableSql =
    "CREATE TABLE IF NOT EXISTS {} (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) "
    "NOT NULL DEFAULT '1', step int(11) NOT NULL, description varchar(256) DEFAULT NULL, "
    "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "
    "PRIMARY KEY (biz_tag)) ENGINE=InnoDB";
inline constexpr const char* kTinyidTableSql =
    "CREATE TABLE IF NOT EXISTS {} (id bigint(20) unsigned NOT NULL AUTO_INCREMENT, biz_type "
    "varchar(63) NOT NULL DEFAULT '', begin_id bigint(20) NOT NULL DEFAULT '0', max_id bigint(20) "
    "NOT NULL DEFAULT '0', step int(11) DEFAULT '0', delta int(11) NOT NULL DEFAULT '1', "
    "remainder int(11) NOT NULL DEFAULT '0', create_time timestamp NOT NULL DEFAULT '2010-01-01 "
    "00:00:00', update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', version bigint(20) "
    "NOT NULL DEFAULT '0', PRIMARY KEY (id), UNIQUE KEY uniq_biz_type (biz_type)) ENGINE=InnoDB";

// The URL of a store of `kind`: the shared server, or a new SQLite file per call.
inline Result<std::string> store_url(StoreKind kind) {
  switch (kind) {
    case StoreKind::kSqlite: {
      const std::string dir = Services::get().make_dir("sqlite");
      if (dir.empty()) return Status::IoError("cannot make a directory for SQLite");
      return "sqlite:" + dir + "/ids.db";
    }
    case StoreKind::kPostgres:
      return Services::get().postgres_url();
    case StoreKind::kRedis:
      return Services::get().redis_url();
    case StoreKind::kMysql:
      return Services::get().mariadb_url();
    case StoreKind::kMysqlLeaf:
      return mysql_table_url("leaf_alloc", kLeafTableSql, "");
    case StoreKind::kMysqlTinyid:
      return mysql_table_url("tiny_id_info", kTinyidTableSql, "");
  }
  return Status::Internal("unknown store kind");
}

// The URL of a store of `kind` that nothing has written to yet, for tests of what is
// recorded store-wide (identity, place): a new SQLite file, a new schema on the shared
// PostgreSQL server (tables are created in the first schema of search_path), a new
// Redis server of the test's own, or a new table on the shared MariaDB server. `name` is a prefix;
// each call gets a new store.
inline Result<std::string> fresh_store_url(StoreKind kind, const std::string& name) {
  switch (kind) {
    case StoreKind::kSqlite:
      return store_url(kind);
    case StoreKind::kPostgres: {
      Result<std::string> url = Services::get().postgres_url();
      if (!url.ok()) return url.status();
      Result<Server> server = Services::get().shared(ServerKind::kPostgres);
      if (!server.ok()) return server.status();
      const std::string schema = unique_tag(name);
      const test_support::RunResult made =
          Services::get().client(*server, {"-c", "CREATE SCHEMA \"" + schema + "\""});
      if (made.exit_code != 0) return Status::IoError("CREATE SCHEMA failed: " + made.err);
      return *url + "?options=-csearch_path%3D" + schema;
    }
    case StoreKind::kRedis: {
      Result<Server> server = Services::get().start_private(ServerKind::kRedis, unique_tag(name));
      if (!server.ok()) return server.status();
      return server->url;
    }
    // A new table on the shared server: what a store records is kept per table.
    case StoreKind::kMysql:
      return mysql_table_url(unique_tag(name), nullptr, "");
    case StoreKind::kMysqlLeaf:
      return mysql_table_url(unique_tag(name), kLeafTableSql, "&scheme=leaf");
    case StoreKind::kMysqlTinyid:
      return mysql_table_url(unique_tag(name), kTinyidTableSql, "&scheme=tinyid");
  }
  return Status::Internal("unknown store kind");
}

// So gtest names the parameter ("sqlite") instead of dumping its bytes.
inline void PrintTo(StoreKind kind, std::ostream* os) { *os << store_kind_name(kind); }

struct StoreKindName {
  std::string operator()(const ::testing::TestParamInfo<StoreKind>& info) const {
    return store_kind_name(info.param);
  }
};

}  // namespace idforge::integration
