#include "store/mysql/mysql_store.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/mysql/mysql_client.h"
#include "store/mysql/mysql_tables.h"
#include "store/mysql/mysql_url.h"

namespace idforge::store {
namespace {

// {} is the table: idforge_segments unless the URL names another.
constexpr const char* kCreateSegmentsSql =
    "CREATE TABLE IF NOT EXISTS `{}` ("
    " tag VARCHAR(64) NOT NULL PRIMARY KEY,"
    " max_id BIGINT NOT NULL,"
    " step BIGINT NOT NULL,"
    " description VARCHAR(1024) NOT NULL DEFAULT '',"
    " serial_template VARCHAR(256) NOT NULL DEFAULT '',"
    " updated_at BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";

// The columns each scheme reads and writes, as the error for a table without them
// lists them.
std::string expected_columns(MysqlScheme scheme) {
  switch (scheme) {
    case MysqlScheme::kLeaf:
      return "biz_tag, max_id, step, description, update_time";
    case MysqlScheme::kTinyid:
      return "id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, "
             "version";
    case MysqlScheme::kSequence:
      return "table_name, next_id";
    case MysqlScheme::kIdforge:
      break;
  }
  return "tag, max_id, step, description, serial_template, updated_at";
}

class MysqlStore final : public SegmentStore {
 public:
  explicit MysqlStore(MysqlUrl url)
      : db_(std::move(url)), table_{db_,
                                    db_.url().scheme,
                                    db_.url().table,
                                    "`" + db_.url().table + "`",
                                    false,
                                    db_.url().step} {}

  Status open();

  Result<Segment> allocate(std::string_view tag, uint64_t step) override {
    return mysql_allocate(table_, tag, step);
  }
  Status create_tag(const TagSpec& spec) override { return mysql_create_tag(table_, spec); }
  Result<std::vector<TagInfo>> list_tags() override { return mysql_list_tags(table_); }
  Result<TagInfo> get_tag(std::string_view name) override { return mysql_get_tag(table_, name); }
  Status set_step(std::string_view name, uint64_t step) override {
    return mysql_set_step(table_, name, step);
  }
  std::string describe() const override {
    return table_.name == "idforge_segments"
               ? db_.shown()
               : fmt::format("{} ({})", db_.shown(), mysql_scheme_name(table_.scheme));
  }

  Result<StoreIdentity> identity() override { return mysql_identity(table_); }
  Result<bool> adopt_identity(const IdentityChange& change) override {
    return mysql_adopt_identity(table_, change);
  }
  Result<Durability> durability() override { return mysql_durability(table_); }
  Status claim_place(uint32_t index, uint32_t count) override {
    return mysql_claim_place(table_, index, count);
  }

 private:
  // Creates `name` with `create_sql` when it is missing ("": never), then checks that it
  // has `columns`.
  Status ensure_table(const std::string& name, const std::string& create_sql,
                      const std::string& columns);

  MysqlClient db_;
  MysqlTable table_;
};

Status MysqlStore::ensure_table(const std::string& name, const std::string& create_sql,
                                const std::string& columns) {
  return db_.with_connection([&](MysqlConn& conn) -> Status {
    // The table usually exists: asking first lets an operator create it and grant the
    // service only SELECT, INSERT and UPDATE.
    IDFORGE_ASSIGN_OR_RETURN(
        MysqlAnswer found,
        exec(db_, conn,
             fmt::format("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                         "DATABASE() AND TABLE_NAME = {}",
                         conn.quote(name)),
             "looking for the table"));
    if (found.text(0, 0) == "0") {
      if (create_sql.empty()) {
        return Status::IoError(fmt::format(
            "{}: table {} does not exist in database {}; the {} scheme uses an existing table "
            "in place (columns {})",
            db_.shown(), name, db_.url().database, mysql_scheme_name(table_.scheme), columns));
      }
      IDFORGE_RETURN_IF_ERROR(exec(db_, conn, create_sql, fmt::format("creating table {}", name)));
    }
    MysqlAnswer shape = conn.run(fmt::format("SELECT {} FROM `{}` LIMIT 0", columns, name));
    if (shape.error == kErBadField) {
      // "Unknown column 'step' in 'field list'": the server names the first one missing.
      return Status::IoError(fmt::format("{}: table {} does not have the expected columns ({}): {}",
                                         db_.shown(), name, columns, shape.message));
    }
    if (!shape.ok()) return db_.error(shape, fmt::format("checking table {}", name));
    return Status::Ok();
  });
}

Status MysqlStore::open() {
  IDFORGE_ASSIGN_OR_RETURN(MysqlAnswer version, db_.run("SELECT VERSION()", "connecting"));
  table_.mariadb = version.text(0, 0).find("MariaDB") != std::string::npos;
  // idforge's own table is created when missing; Leaf's, Tinyid's and SEQUENCE tables
  // belong to those systems and must exist.
  const bool own = table_.scheme == MysqlScheme::kIdforge;
  IDFORGE_RETURN_IF_ERROR(ensure_table(table_.name,
                                       own ? fmt::format(kCreateSegmentsSql, table_.name) : "",
                                       expected_columns(table_.scheme)));
  return ensure_table("idforge_meta", kMysqlCreateMetaSql, "k, v");
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_mysql_store(std::string_view url) {
  IDFORGE_ASSIGN_OR_RETURN(MysqlUrl parsed, parse_mysql_url(url));
  auto store = std::make_unique<MysqlStore>(std::move(parsed));
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
