// The SQLite SegmentStore: one table, one connection per store object, WAL mode.
//
// Several store objects and several processes may share one file: every change is a
// single autocommit statement, so SQLite's write lock (waited for up to kBusyTimeoutMs)
// is the only coordination needed. synchronous=FULL makes a commit durable through a
// power loss, which is what "a returned range is never handed out again" rests on.
#include "store/sqlite/sqlite_store.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/thread_annotations.h"
#include "store/batched_calls.h"
#include "store/store_common.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

constexpr int kBusyTimeoutMs = 5000;
// Allocations one transaction commits at most (SqliteStore::allocate_batch).
constexpr size_t kMaxAllocateBatch = 64;

constexpr const char* kCreateTableSql =
    "CREATE TABLE IF NOT EXISTS idforge_segments ("
    " tag TEXT PRIMARY KEY,"
    " max_id INTEGER NOT NULL,"
    " step INTEGER NOT NULL,"
    " description TEXT NOT NULL DEFAULT '',"
    " serial_template TEXT NOT NULL DEFAULT '',"
    " updated_at INTEGER NOT NULL)";

// ?1 = requested step (0: the tag's own), ?2 = now (unix ms), ?3 = tag. The WHERE clause
// refuses the update instead of letting SQLite's integer overflow turn max_id into a
// REAL; a refused row is then told apart from a missing one off the hot path.
constexpr const char* kAllocateSql =
    "UPDATE idforge_segments"
    " SET max_id = max_id + (CASE WHEN ?1 > 0 THEN ?1 ELSE step END), updated_at = ?2"
    " WHERE tag = ?3 AND max_id >= 0"
    " AND (CASE WHEN ?1 > 0 THEN ?1 ELSE step END) BETWEEN 1 AND 9223372036854775807 - max_id"
    " RETURNING max_id, (CASE WHEN ?1 > 0 THEN ?1 ELSE step END)";

constexpr const char* kCreateMetaSql =
    "CREATE TABLE IF NOT EXISTS idforge_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

constexpr const char* kInsertSql =
    "INSERT INTO idforge_segments (tag, max_id, step, description, serial_template, updated_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

constexpr const char* kSelectColumns =
    "SELECT tag, max_id, step, description, serial_template, updated_at FROM idforge_segments";

constexpr const char* kSetStepSql =
    "UPDATE idforge_segments SET step = ?1, updated_at = ?2 WHERE tag = ?3";

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Resets a cached statement however the caller leaves, so its read transaction never
// outlives the call (a held read snapshot would pin the WAL and block checkpoints).
class StmtUse {
 public:
  explicit StmtUse(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StmtUse() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

// Rolls an open transaction back however the caller leaves, unless it committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {}
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void done() { done_ = true; }

 private:
  sqlite3* db_;
  bool done_ = false;
};

class SqliteStore final : public SegmentStore {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  Status open() IDFORGE_EXCLUDES(mu_);

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return "sqlite:" + path_; }

  Result<StoreIdentity> identity() override;
  Result<bool> adopt_identity(const IdentityChange& change) override;
  Result<Durability> durability() override;
  Status claim_place(uint32_t index, uint32_t count) override;

 private:
  // An error from the last SQLite call on this connection, naming the file. A locked
  // database is worth retrying; anything else is an I/O problem.
  Status error(int rc, std::string_view doing) const IDFORGE_REQUIRES(mu_);
  Status exec(const char* sql, std::string_view doing) IDFORGE_REQUIRES(mu_);
  Result<StmtPtr> prepare(const char* sql, std::string_view doing) IDFORGE_REQUIRES(mu_);
  Status bind_text(sqlite3_stmt* stmt, int index, std::string_view text) IDFORGE_REQUIRES(mu_);
  Status bind_int(sqlite3_stmt* stmt, int index, int64_t value) IDFORGE_REQUIRES(mu_);
  Result<TagInfo> read_row(sqlite3_stmt* stmt);
  // Why the allocate statement matched no row: unknown tag, run out, or a bad row.
  Status explain_refused(std::string_view tag, uint64_t step) IDFORGE_REQUIRES(mu_);
  Result<TagInfo> get_tag_locked(std::string_view name) IDFORGE_REQUIRES(mu_);
  // The value of `key` in idforge_meta, "" when there is none.
  Result<std::string> meta_locked(const char* key) IDFORGE_REQUIRES(mu_);
  // The first column of the one row `sql` returns, as text.
  Result<std::string> pragma_locked(const char* sql) IDFORGE_REQUIRES(mu_);
  // Sets every tag's max_id for adopt_identity; inside its transaction.
  Status bump_tags_locked(const IdentityChange& change) IDFORGE_REQUIRES(mu_);
  // One allocation waiting for its batch (store/batched_calls.h).
  struct AllocateCall {
    std::string_view tag;
    uint64_t step;
    Result<Segment> result;
  };
  void allocate_batch(std::span<AllocateCall* const> calls) IDFORGE_EXCLUDES(mu_);
  Result<Segment> allocate_locked(std::string_view tag, uint64_t step) IDFORGE_REQUIRES(mu_);

  const std::string path_;
  // "sqlite:DEV:INO" of the file as open() found it; "" for :memory:.
  std::string file_identity_;
  Mutex mu_;  // one connection, used by one thread at a time
  DbPtr db_ IDFORGE_GUARDED_BY(mu_);
  StmtPtr allocate_ IDFORGE_GUARDED_BY(mu_);
  StmtPtr insert_ IDFORGE_GUARDED_BY(mu_);
  StmtPtr select_one_ IDFORGE_GUARDED_BY(mu_);
  StmtPtr select_all_ IDFORGE_GUARDED_BY(mu_);
  StmtPtr set_step_ IDFORGE_GUARDED_BY(mu_);
  BatchedCalls<AllocateCall> allocations_{kMaxAllocateBatch};
};

Status SqliteStore::error(int rc, std::string_view doing) const {
  const char* detail = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  std::string message = fmt::format("{}: {}: {}", describe(), doing, detail);
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return Status::Unavailable(message +
                               fmt::format(" (still locked after {} ms)", kBusyTimeoutMs));
  }
  return Status::IoError(std::move(message));
}

Status SqliteStore::exec(const char* sql, std::string_view doing) {
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return error(rc, doing);
  return Status::Ok();
}

Result<StmtPtr> SqliteStore::prepare(const char* sql, std::string_view doing) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error(rc, doing);
  }
  return StmtPtr(stmt);
}

Status SqliteStore::bind_text(sqlite3_stmt* stmt, int index, std::string_view text) {
  const int rc =
      sqlite3_bind_text64(stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(rc, "binding a value");
  return Status::Ok();
}

Status SqliteStore::bind_int(sqlite3_stmt* stmt, int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt, index, value);
  if (rc != SQLITE_OK) return error(rc, "binding a value");
  return Status::Ok();
}

Status SqliteStore::open() {
  if (path_ != ":memory:") {
    // SQLite's own "unable to open database file" does not say why; the usual reason
    // is a missing directory, which the caller (the CLI's data dir) is meant to create.
    const std::filesystem::path file(path_);
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return Status::IoError(
          fmt::format("{}: directory '{}' does not exist", describe(), dir.string()));
    }
  }

  MutexLock lock(mu_);  // uncontended (the store is not shared yet), as the rule says
  sqlite3* raw = nullptr;
  // NOMUTEX: mu_ already serializes every use of the connection.
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path_.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) return error(rc, "cannot open the database");
  sqlite3_extended_result_codes(db_.get(), 1);
  // Before anything else touches the file: another process may hold the write lock.
  sqlite3_busy_timeout(db_.get(), kBusyTimeoutMs);

  {
    IDFORGE_ASSIGN_OR_RETURN(StmtPtr mode,
                             prepare("PRAGMA journal_mode=WAL", "switching to WAL mode"));
    StmtUse use(mode.get());
    const int step_rc = sqlite3_step(use.get());
    if (step_rc != SQLITE_ROW) return error(step_rc, "switching to WAL mode");
    const auto* got = reinterpret_cast<const char*>(sqlite3_column_text(use.get(), 0));
    const std::string journal = got ? got : "";
    if (journal != "wal" && path_ != ":memory:") {
      return Status::IoError(
          fmt::format("{}: the file cannot use WAL mode (journal mode is '{}'; is it on a network "
                      "file system?)",
                      describe(), journal));
    }
  }
  IDFORGE_RETURN_IF_ERROR(exec("PRAGMA synchronous=FULL", "setting synchronous=FULL"));
  IDFORGE_RETURN_IF_ERROR(exec(kCreateTableSql, "creating table idforge_segments"));
  IDFORGE_RETURN_IF_ERROR(exec(kCreateMetaSql, "creating table idforge_meta"));
  if (path_ != ":memory:") {
    // A restored or copied file is a new inode (or on another device); the same file
    // keeps both while it is written to, renamed within its file system or reopened.
    // Taken once, so it names the file this connection writes even if the path is
    // later pointed at another file.
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      return Status::IoError(fmt::format("{}: cannot stat the file: {}", describe(),
                                         std::generic_category().message(errno)));
    }
    file_identity_ = fmt::format("sqlite:{}:{}", static_cast<uint64_t>(st.st_dev),
                                 static_cast<uint64_t>(st.st_ino));
  }

  // Preparing here also checks that an existing table has the columns we use.
  const std::string one = std::string(kSelectColumns) + " WHERE tag = ?1";
  const std::string all = std::string(kSelectColumns) + " ORDER BY tag";
  const char* kSchema = "table idforge_segments does not have the expected columns";
  struct Wanted {
    StmtPtr* slot;
    const char* sql;
  };
  for (const Wanted& w : {Wanted{&allocate_, kAllocateSql}, Wanted{&insert_, kInsertSql},
                          Wanted{&select_one_, one.c_str()}, Wanted{&select_all_, all.c_str()},
                          Wanted{&set_step_, kSetStepSql}}) {
    IDFORGE_ASSIGN_OR_RETURN(StmtPtr stmt, prepare(w.sql, kSchema));
    *w.slot = std::move(stmt);
  }
  return Status::Ok();
}

Result<TagInfo> SqliteStore::read_row(sqlite3_stmt* stmt) {
  auto text = [stmt](int col) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
    return std::string(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
  };
  // The table is open to DBAs and other tools; a hand-edited row must not become a
  // wrong ID, so anything a correct writer never stores is reported instead.
  for (int col : {1, 2, 5}) {
    if (sqlite3_column_type(stmt, col) != SQLITE_INTEGER) {
      return Status::IoError(fmt::format("{}: tag '{}' has a non-integer {} (edited by hand?)",
                                         describe(), text(0), sqlite3_column_name(stmt, col)));
    }
  }
  TagInfo info;
  info.name = text(0);
  const int64_t max_id = sqlite3_column_int64(stmt, 1);
  const int64_t step = sqlite3_column_int64(stmt, 2);
  if (max_id < 0 || step < 1) {
    return Status::IoError(
        fmt::format("{}: tag '{}' has max_id {} and step {}; both must be positive (edited by "
                    "hand?)",
                    describe(), info.name, max_id, step));
  }
  info.max_id = static_cast<uint64_t>(max_id);
  info.step = static_cast<uint64_t>(step);
  info.description = text(3);
  info.serial_template = text(4);
  info.updated_at_ms = sqlite3_column_int64(stmt, 5);
  return info;
}

Result<Segment> SqliteStore::allocate(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) {
    return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  }
  AllocateCall call{tag, step, Status::Unavailable("not run")};
  allocations_.run(call, [this](std::span<AllocateCall* const> calls) { allocate_batch(calls); });
  return std::move(call.result);
}

// Tags whose ranges were asked for at the same time (a burst of first requests after a
// start) share one transaction, and so one commit and one fsync; SQLite commits one
// transaction at a time, so this is what lets them go faster than one a commit. A tag
// the store refuses (unknown, run out) is answered so and the others commit; a failed
// statement or commit fails them all, and none of their ranges is used.
void SqliteStore::allocate_batch(std::span<AllocateCall* const> calls) {
  MutexLock lock(mu_);
  if (calls.size() == 1) {
    calls[0]->result = allocate_locked(calls[0]->tag, calls[0]->step);
    return;
  }
  const auto fail_all = [&](const Status& why) {
    for (AllocateCall* c : calls) c->result = why;
  };
  Status begun = exec("BEGIN IMMEDIATE", "starting an allocation");
  if (!begun.ok()) return fail_all(begun);
  Transaction txn(db_.get());
  for (AllocateCall* c : calls) {
    c->result = allocate_locked(c->tag, c->step);
    if (!c->result.ok() && c->result.status().code() == StatusCode::kIoError) {
      return fail_all(c->result.status());  // rolled back by txn
    }
  }
  Status committed = exec("COMMIT", "committing allocations");
  if (!committed.ok()) return fail_all(committed);
  txn.done();
}

// Runs the allocation statement: committed on return outside a transaction, by the
// caller's COMMIT inside one.
Result<Segment> SqliteStore::allocate_locked(std::string_view tag, uint64_t step) {
  StmtUse use(allocate_.get());
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 1, static_cast<int64_t>(step)));
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 2, now_unix_ms()));
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 3, tag));

  int rc = sqlite3_step(use.get());
  if (rc == SQLITE_DONE) return explain_refused(tag, step);
  if (rc != SQLITE_ROW) return error(rc, fmt::format("allocating for tag '{}'", tag));
  const int64_t max_id = sqlite3_column_int64(use.get(), 0);
  const int64_t used_step = sqlite3_column_int64(use.get(), 1);
  // With RETURNING, the commit happens when the statement runs to completion, not
  // when the row appears: only SQLITE_DONE means the range is durable and ours.
  rc = sqlite3_step(use.get());
  if (rc != SQLITE_DONE) return error(rc, fmt::format("committing allocation for tag '{}'", tag));
  if (used_step < 1 || max_id < used_step) {
    return Status::Internal(fmt::format("{}: tag '{}' returned max_id {} for step {}", describe(),
                                        tag, max_id, used_step));
  }
  const auto count = static_cast<uint64_t>(used_step);
  return Segment{static_cast<uint64_t>(max_id) - count + 1, count, 1, file_identity_};
}

Status SqliteStore::explain_refused(std::string_view tag, uint64_t step) {
  IDFORGE_ASSIGN_OR_RETURN(TagInfo info, get_tag_locked(tag));
  const uint64_t used = step > 0 ? step : info.step;
  if (used > kMaxId - info.max_id) {
    return Status::OutOfRange(
        fmt::format("tag '{}' has run out of IDs in {}: max_id {} plus step {} passes 2^63-1", tag,
                    describe(), info.max_id, used));
  }
  // The row changed between the two statements (another writer); the caller retries.
  return Status::Unavailable(
      fmt::format("{}: tag '{}' changed during allocation; try again", describe(), tag));
}

Status SqliteStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(check_new_tag(spec));

  MutexLock lock(mu_);
  StmtUse use(insert_.get());
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 1, spec.name));
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 2, static_cast<int64_t>(spec.start - 1)));
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 3, static_cast<int64_t>(spec.step)));
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 4, spec.description));
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 5, spec.serial_template));
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 6, now_unix_ms()));
  const int rc = sqlite3_step(use.get());
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
    return Status::AlreadyExists(
        fmt::format("tag '{}' already exists in {}", spec.name, describe()));
  }
  if (rc != SQLITE_DONE) return error(rc, fmt::format("creating tag '{}'", spec.name));
  return Status::Ok();
}

Result<std::vector<TagInfo>> SqliteStore::list_tags() {
  MutexLock lock(mu_);
  StmtUse use(select_all_.get());
  std::vector<TagInfo> tags;
  for (;;) {
    const int rc = sqlite3_step(use.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return error(rc, "listing tags");
    IDFORGE_ASSIGN_OR_RETURN(TagInfo info, read_row(use.get()));
    tags.push_back(std::move(info));
  }
  return tags;
}

Result<TagInfo> SqliteStore::get_tag(std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  MutexLock lock(mu_);
  return get_tag_locked(name);
}

Result<TagInfo> SqliteStore::get_tag_locked(std::string_view name) {
  StmtUse use(select_one_.get());
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 1, name));
  const int rc = sqlite3_step(use.get());
  if (rc == SQLITE_DONE) return unknown_tag(name);
  if (rc != SQLITE_ROW) return error(rc, fmt::format("reading tag '{}'", name));
  return read_row(use.get());
}

Status SqliteStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  MutexLock lock(mu_);
  StmtUse use(set_step_.get());
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 1, static_cast<int64_t>(step)));
  IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 2, now_unix_ms()));
  IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 3, name));
  const int rc = sqlite3_step(use.get());
  if (rc != SQLITE_DONE) return error(rc, fmt::format("setting the step of tag '{}'", name));
  if (sqlite3_changes(db_.get()) == 0) return unknown_tag(name);
  return Status::Ok();
}

Result<std::string> SqliteStore::meta_locked(const char* key) {
  IDFORGE_ASSIGN_OR_RETURN(StmtPtr stmt, prepare("SELECT value FROM idforge_meta WHERE key = ?1",
                                                 "reading idforge_meta"));
  IDFORGE_RETURN_IF_ERROR(bind_text(stmt.get(), 1, key));
  const int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return error(rc, "reading idforge_meta");
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0));
  return std::string(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(stmt.get(), 0)));
}

Result<std::string> SqliteStore::pragma_locked(const char* sql) {
  IDFORGE_ASSIGN_OR_RETURN(StmtPtr stmt, prepare(sql, sql));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return error(rc, sql);
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0));
  return std::string(p ? p : "");
}

Result<StoreIdentity> SqliteStore::identity() {
  StoreIdentity id;
  id.current = file_identity_;
  MutexLock lock(mu_);
  IDFORGE_ASSIGN_OR_RETURN(std::string recorded, meta_locked("identity"));
  id.recorded = std::move(recorded);
  return id;
}

Status SqliteStore::bump_tags_locked(const IdentityChange& change) {
  // Work out every new max_id first, so an overflow anywhere changes nothing (the
  // caller's rollback would undo it too; this keeps the error about the right tag).
  std::vector<std::pair<std::string, int64_t>> plan;
  {
    IDFORGE_ASSIGN_OR_RETURN(
        StmtPtr all, prepare("SELECT tag, max_id FROM idforge_segments", "reading the tags"));
    for (;;) {
      const int rc = sqlite3_step(all.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return error(rc, "reading the tags");
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(all.get(), 0));
      std::string tag(p ? p : "");
      const int64_t stored = sqlite3_column_int64(all.get(), 1);
      if (sqlite3_column_type(all.get(), 1) != SQLITE_INTEGER || stored < 0) {
        return Status::IoError(fmt::format(
            "{}: tag '{}' has a max_id that is not a positive integer (edited by hand?); nothing "
            "changed",
            describe(), tag));
      }
      uint64_t base = static_cast<uint64_t>(stored);
      if (auto f = change.floors.find(tag); f != change.floors.end())
        base = std::max(base, f->second);
      if (base > kMaxId || change.margin > kMaxId - base) {
        return Status::OutOfRange(
            fmt::format("{}: moving tag '{}' forward by {} would pass 2^63-1; nothing changed",
                        describe(), tag, change.margin));
      }
      plan.emplace_back(std::move(tag), static_cast<int64_t>(base + change.margin));
    }
  }
  IDFORGE_ASSIGN_OR_RETURN(
      StmtPtr update,
      prepare("UPDATE idforge_segments SET max_id = ?1, updated_at = ?2 WHERE tag = ?3",
              "moving tags"));
  const int64_t now = now_unix_ms();
  for (const auto& [tag, max_id] : plan) {
    StmtUse use(update.get());
    IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 1, max_id));
    IDFORGE_RETURN_IF_ERROR(bind_int(use.get(), 2, now));
    IDFORGE_RETURN_IF_ERROR(bind_text(use.get(), 3, tag));
    const int rc = sqlite3_step(use.get());
    if (rc != SQLITE_DONE) return error(rc, fmt::format("moving tag '{}' forward", tag));
  }
  return Status::Ok();
}

Result<bool> SqliteStore::adopt_identity(const IdentityChange& change) {
  if (change.adopt.empty()) return Status::InvalidArgument("the identity to adopt is empty");
  MutexLock lock(mu_);
  // IMMEDIATE takes the write lock now: a second process adopting at the same time
  // waits here and then reads the identity this one recorded.
  IDFORGE_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE", "starting a transaction"));
  Transaction tx(db_.get());
  IDFORGE_ASSIGN_OR_RETURN(std::string recorded, meta_locked("identity"));
  if (recorded != change.expected) return false;
  IDFORGE_RETURN_IF_ERROR(bump_tags_locked(change));
  IDFORGE_ASSIGN_OR_RETURN(StmtPtr record,
                           prepare("INSERT INTO idforge_meta (key, value) VALUES ('identity', ?1)"
                                   " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   "recording the identity"));
  IDFORGE_RETURN_IF_ERROR(bind_text(record.get(), 1, change.adopt));
  const int rc = sqlite3_step(record.get());
  if (rc != SQLITE_DONE) return error(rc, "recording the identity");
  IDFORGE_RETURN_IF_ERROR(exec("COMMIT", "committing the new identity"));
  tx.done();
  return true;
}

Status SqliteStore::claim_place(uint32_t index, uint32_t count) {
  if (count < 1 || index >= count) {
    return Status::InvalidArgument(
        fmt::format("store place {} of {}: the index must be below the count", index, count));
  }
  const std::string wanted = place_text(index, count);
  MutexLock lock(mu_);
  {
    IDFORGE_ASSIGN_OR_RETURN(
        StmtPtr insert,
        prepare("INSERT OR IGNORE INTO idforge_meta (key, value) VALUES ('place', ?1)",
                "recording the store's place"));
    IDFORGE_RETURN_IF_ERROR(bind_text(insert.get(), 1, wanted));
    const int rc = sqlite3_step(insert.get());
    if (rc != SQLITE_DONE) return error(rc, "recording the store's place");
  }
  IDFORGE_ASSIGN_OR_RETURN(std::string recorded, meta_locked("place"));
  return check_place(describe(), recorded, index, count);
}

Result<Durability> SqliteStore::durability() {
  MutexLock lock(mu_);
  IDFORGE_ASSIGN_OR_RETURN(std::string journal, pragma_locked("PRAGMA journal_mode"));
  IDFORGE_ASSIGN_OR_RETURN(std::string sync, pragma_locked("PRAGMA synchronous"));
  static constexpr const char* kLevels[] = {"off", "normal", "full", "extra"};
  const std::string level =
      sync.size() == 1 && sync[0] >= '0' && sync[0] <= '3' ? kLevels[sync[0] - '0'] : sync;
  Durability d;
  d.summary = fmt::format("journal_mode={} synchronous={}", journal, level);
  // FULL syncs the WAL (or the rollback journal) at every commit, so a committed range
  // survives a power loss; NORMAL in WAL mode survives a crash of the process only.
  // open() sets WAL and FULL on this connection, so this reports that, or what changed.
  if (journal == "off" || journal == "memory") {
    d.safe = false;
    d.risk = fmt::format("journal_mode={}: a crash during a commit can corrupt the file; use WAL",
                         journal);
  } else if (level != "full" && level != "extra") {
    d.safe = false;
    d.risk = fmt::format(
        "synchronous={}: a power loss can forget the last commits, and those ranges would be "
        "handed out again; use synchronous=FULL",
        level);
  }
  return d;
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_sqlite_store(std::string_view path) {
  if (path.empty()) {
    return Status::InvalidArgument("sqlite: store URL needs a file path (sqlite:PATH)");
  }
  if (path.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("sqlite: store path contains a NUL byte");
  }
  auto store = std::make_unique<SqliteStore>(std::string(path));
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
