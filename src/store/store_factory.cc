#include "store/store_factory.h"

#include <string>

#include "store/mysql_store.h"
#include "store/postgres_store.h"
#include "store/redis_store.h"
#include "store/sqlite_store.h"

namespace idforge::store {

Result<std::unique_ptr<SegmentStore>> open_store(std::string_view url) {
  if (url.starts_with("sqlite:")) return open_sqlite_store(url.substr(7));
  if (url.starts_with("postgres://") || url.starts_with("postgresql://")) {
    return open_postgres_store(url);
  }
  if (url.starts_with("mysql://") || url.starts_with("mariadb://")) return open_mysql_store(url);
  if (url.starts_with("redis://") || url.starts_with("redis-sentinel://")) {
    return open_redis_store(url);
  }
  return Status::InvalidArgument(
      "unknown store URL '" + std::string(url) +
      "' (expected sqlite:PATH, postgres://..., mysql://..., redis://HOST:PORT or "
      "redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME)");
}

}  // namespace idforge::store
