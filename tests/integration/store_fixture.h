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

// So gtest names the parameter ("sqlite") instead of dumping its bytes.
inline void PrintTo(StoreKind kind, std::ostream* os) { *os << store_kind_name(kind); }

struct StoreKindName {
  std::string operator()(const ::testing::TestParamInfo<StoreKind>& info) const {
    return store_kind_name(info.param);
  }
};

}  // namespace idforge::integration
