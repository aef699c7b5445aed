// Opening each kind of store against its real server (or file), for tests that run the
// same checks on all of them.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "idforge/segment_store.h"
#include "integration/services.h"
#include "store/store_factory.h"

namespace idforge::integration {

enum class StoreKind { kSqlite, kPostgres, kRedis };

inline std::string store_kind_name(StoreKind kind) {
  switch (kind) {
    case StoreKind::kSqlite:
      return "sqlite";
    case StoreKind::kPostgres:
      return "postgres";
    case StoreKind::kRedis:
      return "redis";
  }
  return "unknown";
}

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
  }
  return Status::Internal("unknown store kind");
}

// The URL of a store of `kind` that nothing has written to yet, for tests of what is
// recorded store-wide (identity, place): a new SQLite file, a new schema on the shared
// PostgreSQL server (tables are created in the first schema of search_path), or a new
// Redis server of the test's own. `name` is a prefix; each call gets a new store.
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
