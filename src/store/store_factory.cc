#include "store/store_factory.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/text.h"
#include "store/mysql/mysql_store.h"
#include "store/postgres/postgres_store.h"
#include "store/redis/redis_store.h"
#include "store/sqlite/sqlite_store.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

constexpr std::string_view kSqliteScheme = "sqlite:";

Result<std::unique_ptr<SegmentStore>> open_sqlite_url(std::string_view url) {
  return open_sqlite_store(url.substr(kSqliteScheme.size()));
}

// The table of kinds. Each scheme is spelled here once; the kinds' own URL parsers
// (mysql_url.cc, redis/redis_url.cc) check the scheme of what they are given.
constexpr StoreKind kKinds[] = {
    {"sqlite", kSqliteScheme, "", "PATH", "an SQLite file (created if missing, WAL mode)",
     open_sqlite_url},
    {"postgres", "postgres://", "postgresql://", "USER@HOST:PORT/DB",
     "PostgreSQL (libpq keywords as ?KEY=VALUE)", open_postgres_store},
    {"mysql", "mysql://", "mariadb://", "USER:PASSWORD@HOST:PORT/DB",
     "MySQL or MariaDB (?table=leaf_alloc, tiny_id_info or SEQUENCE uses that table in place)",
     open_mysql_store},
    {"redis", "redis://", "", "HOST:PORT", "Redis", open_redis_store},
    {"redis", "redis-sentinel://", "", "HOST:PORT,.../MASTER",
     "Redis behind Sentinel: the primary the Sentinels name", open_redis_store},
};

}  // namespace

std::span<const StoreKind> store_kinds() { return kKinds; }

const StoreKind* find_store_kind(std::string_view url) {
  for (const StoreKind& kind : kKinds) {
    if (url.starts_with(kind.scheme)) return &kind;
    if (!kind.alias.empty() && url.starts_with(kind.alias)) return &kind;
  }
  return nullptr;
}

std::string store_url_forms() {
  std::vector<std::string> forms;
  for (const StoreKind& kind : kKinds) forms.push_back(fmt::format("{}{}", kind.scheme, kind.form));
  return text::join_alternatives(forms);
}

std::string store_url_form(std::string_view name) {
  for (const StoreKind& kind : kKinds) {
    if (kind.name == name) return fmt::format("{}{}", kind.scheme, kind.form);
  }
  return "";
}

std::string describe_store_kinds() {
  std::string out;
  for (const StoreKind& kind : kKinds) {
    if (!out.empty()) out += '\n';
    out += fmt::format("  {:<38} {}", fmt::format("{}{}", kind.scheme, kind.form), kind.what);
    if (!kind.alias.empty()) out += fmt::format(" (also {})", kind.alias);
  }
  return out;
}

Status check_store_url(std::string_view url) {
  if (find_store_kind(url) != nullptr) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("unknown store URL '{}' (expected {})", redact_url(url), store_url_forms()));
}

std::string sqlite_url(std::string_view path) { return fmt::format("{}{}", kSqliteScheme, path); }

Result<std::unique_ptr<SegmentStore>> open_store(std::string_view url) {
  const StoreKind* kind = find_store_kind(url);
  if (kind == nullptr) return check_store_url(url);
  return kind->open(url);
}

}  // namespace idforge::store
