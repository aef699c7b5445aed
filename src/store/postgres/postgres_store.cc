// The PostgreSQL SegmentStore: one table shared by every idforge process that points at
// the database; each change is one autocommit statement, so the row lock PostgreSQL takes
// for the UPDATE is the only coordination between processes. Connections and timeouts:
// postgres_client.h; the failover guard's identity, places and durability:
// postgres_meta.h.
#include "store/postgres/postgres_store.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/postgres/postgres_client.h"
#include "store/postgres/postgres_meta.h"
#include "store/store_common.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

constexpr const char* kColumns = "tag, max_id, step, description, serial_template, updated_at";

constexpr const char* kCreateTableSql =
    "CREATE TABLE IF NOT EXISTS idforge_segments ("
    " tag TEXT PRIMARY KEY,"
    " max_id BIGINT NOT NULL,"
    " step BIGINT NOT NULL,"
    " description TEXT NOT NULL DEFAULT '',"
    " serial_template TEXT NOT NULL DEFAULT '',"
    " updated_at BIGINT NOT NULL)";

// $1 = requested step (0: the tag's own), $2 = now (unix ms), $3 = tag. A max_id + step
// past 2^63-1 makes PostgreSQL fail the statement (SQLSTATE 22003) with nothing
// changed; the extra WHERE terms refuse a hand-edited row that would move max_id down.
// The server's identity comes back with the range, read in the same transaction.
constexpr const char* kAllocateSql =
    "UPDATE idforge_segments"
    " SET max_id = max_id + (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END),"
    " updated_at = $2::bigint"
    " WHERE tag = $3 AND max_id >= 0"
    " AND (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END) >= 1"
    " RETURNING max_id, (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END),"
    " (SELECT system_identifier::text FROM pg_control_system()),"
    " pg_walfile_name(pg_current_wal_lsn())";

constexpr const char* kInsertSql =
    "INSERT INTO idforge_segments (tag, max_id, step, description, serial_template, updated_at)"
    " VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6::bigint)";

constexpr const char* kSetStepSql =
    "UPDATE idforge_segments SET step = $1::bigint, updated_at = $2::bigint WHERE tag = $3";

class PostgresStore final : public SegmentStore {
 public:
  PostgresStore(std::string url, const std::string& shown, uint32_t min_replicas)
      : db_(std::move(url), shown), replicas_(min_replicas), shown_(shown) {}

  Status open();

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return shown_; }

  Result<StoreIdentity> identity() override { return pg_identity(db_); }
  Result<bool> adopt_identity(const IdentityChange& change) override {
    return pg_adopt_identity(db_, change);
  }
  Result<Durability> durability() override { return pg_durability(db_, replicas_.wanted()); }
  Status claim_place(uint32_t index, uint32_t count) override {
    return pg_claim_place(db_, index, count);
  }

 private:
  Result<Answer> run(const char* sql, const std::vector<std::string>& params,
                     std::string_view doing, std::string* sqlstate = nullptr) {
    return db_.run(sql, params, doing, sqlstate);
  }
  Result<TagInfo> read_row(const PGresult* r, int row) const;
  // Creates table `name` with `create_sql` when missing, then checks its columns.
  Status ensure_table(const char* name, const char* create_sql, const char* columns);

  PgClient db_;
  PgReplicaCheck replicas_;
  const std::string shown_;
};

Status PostgresStore::ensure_table(const char* name, const char* create_sql, const char* columns) {
  // The table usually exists: checking first lets an operator create it and grant the
  // service only SELECT/INSERT/UPDATE.
  const std::string exists_sql = fmt::format("SELECT to_regclass('{}') IS NOT NULL", name);
  IDFORGE_ASSIGN_OR_RETURN(Answer exists, run(exists_sql.c_str(), {}, "looking for the table"));
  if (exists.text(0, 0) != "t") {
    Result<Answer> made = run(create_sql, {}, fmt::format("creating table {}", name));
    if (!made.ok()) {
      // Two processes starting at once may both try; PostgreSQL's IF NOT EXISTS can
      // then fail on a catalog unique index. The table is there either way.
      IDFORGE_ASSIGN_OR_RETURN(Answer again, run(exists_sql.c_str(), {}, "looking for the table"));
      if (again.text(0, 0) != "t") return made.status();
    }
  }
  Result<Answer> shape = run(fmt::format("SELECT {} FROM {} LIMIT 0", columns, name).c_str(), {},
                             fmt::format("checking table {}", name));
  if (!shape.ok()) {
    if (shape.status().code() == StatusCode::kIoError) {
      return Status::IoError(fmt::format("{}: table {} does not have the expected columns ({}): {}",
                                         shown_, name, columns, shape.status().message()));
    }
    return shape.status();
  }
  return Status::Ok();
}

Status PostgresStore::open() {
  IDFORGE_RETURN_IF_ERROR(ensure_table("idforge_segments", kCreateTableSql, kColumns));
  return ensure_table("idforge_meta", kPgCreateMetaSql, kPgMetaColumns);
}

Result<TagInfo> PostgresStore::read_row(const PGresult* r, int row) const {
  auto text = [r, row](int col) {
    return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
  };
  TagInfo info;
  info.name = text(0);
  Result<int64_t> max_id = parse_pg_int(text(1));
  Result<int64_t> step = parse_pg_int(text(2));
  Result<int64_t> updated = parse_pg_int(text(5));
  if (!max_id.ok() || !step.ok() || !updated.ok() || *max_id < 0 || *step < 1) {
    // The table is open to DBAs and other tools; a hand-edited row must not become a
    // wrong ID.
    return Status::IoError(
        fmt::format("{}: tag '{}' has max_id '{}' and step '{}'; both must be positive "
                    "integers (edited by hand?)",
                    shown_, info.name, text(1), text(2)));
  }
  info.max_id = static_cast<uint64_t>(*max_id);
  info.step = static_cast<uint64_t>(*step);
  info.description = text(3);
  info.serial_template = text(4);
  info.updated_at_ms = *updated;
  return info;
}

Result<Segment> PostgresStore::allocate(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  // With min_replicas, refuse before taking a range that no standby would confirm.
  IDFORGE_RETURN_IF_ERROR(replicas_.check(db_));
  const std::string doing = fmt::format("allocating for tag '{}'", tag);
  std::string sqlstate;
  Result<Answer> got =
      run(kAllocateSql, {std::to_string(step), std::to_string(now_unix_ms()), std::string(tag)},
          doing, &sqlstate);
  if (!got.ok()) {
    if (sqlstate == "22003") {  // numeric_value_out_of_range
      return Status::OutOfRange(fmt::format(
          "tag '{}' has run out of IDs in {}: max_id plus step passes 2^63-1", tag, shown_));
    }
    return got.status();
  }
  if (got->sync_wait_cancelled && replicas_.wanted() > 0) {
    return Status::Unavailable(fmt::format(
        "{}: the range was committed on the primary but the wait for synchronous standbys was "
        "cancelled (statement timeout), so they may not have it; it is skipped",
        shown_));
  }
  const PGresult* r = got->result.get();
  if (PQntuples(r) == 0) {
    // No row matched: the tag is unknown, or its row is one the WHERE clause refuses.
    IDFORGE_RETURN_IF_ERROR(get_tag(tag));
    return Status::IoError(
        fmt::format("{}: tag '{}' cannot be allocated from (edited by hand?)", shown_, tag));
  }
  Result<int64_t> max_id = parse_pg_int(PQgetvalue(r, 0, 0));
  Result<int64_t> used = parse_pg_int(PQgetvalue(r, 0, 1));
  if (!max_id.ok() || !used.ok() || *used < 1 || *max_id < *used) {
    return Status::Internal(fmt::format("{}: tag '{}' returned max_id '{}' for step '{}'", shown_,
                                        tag, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)));
  }
  IDFORGE_ASSIGN_OR_RETURN(std::string identity,
                           pg_identity_text(got->text(0, 2), got->text(0, 3), shown_));
  const auto count = static_cast<uint64_t>(*used);
  return Segment{static_cast<uint64_t>(*max_id) - count + 1, count, 1, std::move(identity)};
}

Status PostgresStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(check_new_tag(spec));
  const std::string doing = fmt::format("creating tag '{}'", spec.name);
  std::string sqlstate;
  Result<Answer> got = run(kInsertSql,
                           {spec.name, std::to_string(spec.start - 1), std::to_string(spec.step),
                            spec.description, spec.serial_template, std::to_string(now_unix_ms())},
                           doing, &sqlstate);
  if (got.ok()) return Status::Ok();
  if (sqlstate == "23505") {  // unique_violation
    return Status::AlreadyExists(fmt::format("tag '{}' already exists in {}", spec.name, shown_));
  }
  return got.status();
}

Result<std::vector<TagInfo>> PostgresStore::list_tags() {
  IDFORGE_ASSIGN_OR_RETURN(
      Answer got, run(fmt::format("SELECT {} FROM idforge_segments ORDER BY tag", kColumns).c_str(),
                      {}, "listing tags"));
  const PGresult* r = got.result.get();
  std::vector<TagInfo> tags;
  tags.reserve(static_cast<size_t>(PQntuples(r)));
  for (int i = 0; i < PQntuples(r); ++i) {
    IDFORGE_ASSIGN_OR_RETURN(TagInfo info, read_row(r, i));
    tags.push_back(std::move(info));
  }
  return tags;
}

Result<TagInfo> PostgresStore::get_tag(std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_ASSIGN_OR_RETURN(
      Answer got,
      run(fmt::format("SELECT {} FROM idforge_segments WHERE tag = $1", kColumns).c_str(),
          {std::string(name)}, fmt::format("reading tag '{}'", name)));
  if (PQntuples(got.result.get()) == 0) return unknown_tag(name);
  return read_row(got.result.get(), 0);
}

Status PostgresStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  IDFORGE_ASSIGN_OR_RETURN(
      Answer got,
      run(kSetStepSql, {std::to_string(step), std::to_string(now_unix_ms()), std::string(name)},
          fmt::format("setting the step of tag '{}'", name)));
  if (std::string_view(PQcmdTuples(got.result.get())) == "0") return unknown_tag(name);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_postgres_store(std::string_view url) {
  if (url.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("postgres store URL contains a NUL byte");
  }
  // min_replicas is idforge's own; libpq refuses keys it does not know.
  IDFORGE_ASSIGN_OR_RETURN(UrlOptions options, take_url_options(url, {"min_replicas"}));
  const std::string text = options.rest;
  uint32_t min_replicas = 0;
  if (auto it = options.taken.find("min_replicas"); it != options.taken.end()) {
    IDFORGE_ASSIGN_OR_RETURN(uint32_t n,
                             parse_option_number(it->first, it->second, kMaxMinReplicas));
    min_replicas = n;
  }
  // libpq's own URI parser validates the rest and says what is wrong.
  char* why = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(text.c_str(), &why);
  if (parsed == nullptr) {
    std::string message = why ? one_line(why) : "out of memory";
    PQfreemem(why);
    return Status::InvalidArgument(
        fmt::format("bad postgres store URL '{}': {}", redact_url(text), message));
  }
  PQconninfoFree(parsed);
  auto store = std::make_unique<PostgresStore>(text, redact_url(text), min_replicas);
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
