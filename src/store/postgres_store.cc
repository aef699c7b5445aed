// The PostgreSQL SegmentStore: one table shared by every idforge process that points at
// the database; each change is one autocommit statement, so the row lock PostgreSQL takes
// for the UPDATE is the only coordination between processes.
//
// No call can hang: connecting gives up after kConnectTimeoutS, the server cancels a
// statement after kStatementTimeoutMs (a lock held elsewhere, an overloaded server), and
// the client stops waiting for an answer after kAnswerTimeoutMs (a server that stopped
// answering at all). A connection that failed is dropped and the next call reconnects.
#include "store/postgres_store.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/connection_pool.h"

namespace idforge::store {
namespace {

constexpr const char* kConnectTimeoutS = "3";
constexpr int kStatementTimeoutMs = 4000;
constexpr int kAnswerTimeoutMs = 6000;  // above the statement timeout: let the server say why
constexpr size_t kMaxConnections = 4;
// A connection the server closed while it sat idle fails at once; a slower failure is
// a server in trouble, and retrying would only double the caller's wait.
constexpr auto kStaleFailure = std::chrono::milliseconds(500);
constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

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
constexpr const char* kAllocateSql =
    "UPDATE idforge_segments"
    " SET max_id = max_id + (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END),"
    " updated_at = $2::bigint"
    " WHERE tag = $3 AND max_id >= 0"
    " AND (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END) >= 1"
    " RETURNING max_id, (CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE step END)";

constexpr const char* kInsertSql =
    "INSERT INTO idforge_segments (tag, max_id, step, description, serial_template, updated_at)"
    " VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6::bigint)";

constexpr const char* kSetStepSql =
    "UPDATE idforge_segments SET step = $1::bigint, updated_at = $2::bigint WHERE tag = $3";

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The URL as it may appear in logs and errors: no password, neither in the user part
// (postgres://user:secret@host) nor as a parameter (?password=secret).
std::string redact_url(std::string_view url) {
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = out.find_first_of("/?", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
    const bool is_key = p > 0 && (out[p - 1] == '?' || out[p - 1] == '&' || out[p - 1] == ' ');
    const size_t value = p + std::strlen("password=");
    if (!is_key) {
      p = value;
      continue;
    }
    const size_t end = out.find_first_of("& ", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
    p = value + 3;
  }
  return out;
}

// libpq's messages end in a newline and sometimes span lines; one line reads better.
std::string one_line(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (size_t p = s.find('\n'); p != std::string::npos; p = s.find('\n', p)) s.replace(p, 1, "; ");
  return s.empty() ? "unknown error" : s;
}

Result<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::IoError(fmt::format("expected an integer from the server, got '{}'", text));
  }
  return v;
}

struct ResultClear {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultClear>;

// The outcome of one statement: the rows, or an error with its SQLSTATE ("" when the
// failure was the connection's, not the statement's).
struct Answer {
  PgResult result;
  std::string sqlstate;
  std::string error;  // empty on success
};

// One libpq connection. Not thread-safe; the pool gives it to one caller at a time.
class PgConn {
 public:
  explicit PgConn(PGconn* conn) : conn_(conn) {}
  ~PgConn() { PQfinish(conn_); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  static Result<std::unique_ptr<PgConn>> connect(const std::string& url, const std::string& shown);

  bool broken() const { return broken_ || PQstatus(conn_) != CONNECTION_OK; }

  // An idle connection has nothing to read; readable means the server closed it (or
  // sent a FATAL notice on shutdown), so it is not worth a round trip to find out.
  bool looks_alive() {
    if (broken()) return false;
    pollfd p{PQsocket(conn_), POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return true;
    if (PQconsumeInput(conn_) == 0) broken_ = true;
    return !broken();
  }

  // Runs one statement with text parameters and waits at most kAnswerTimeoutMs.
  Answer run(const char* sql, const std::vector<std::string>& params);

 private:
  // Waits until the socket is ready for `events` or the deadline passes.
  bool wait_socket(short events, std::chrono::steady_clock::time_point deadline);
  Answer fail(std::string why) {
    broken_ = true;
    return Answer{nullptr, "", std::move(why)};
  }

  PGconn* conn_;
  bool broken_ = false;
};

Result<std::unique_ptr<PgConn>> PgConn::connect(const std::string& url, const std::string& shown) {
  // Defaults first and the URL last: libpq lets later keywords win, so anything the
  // URL says (connect_timeout=10, keepalives=0, ...) overrides these.
  const char* keys[] = {"connect_timeout",           "keepalives",       "keepalives_idle",
                        "keepalives_interval",       "keepalives_count", "tcp_user_timeout",
                        "fallback_application_name", "dbname",           nullptr};
  const char* values[] = {kConnectTimeoutS, "1",       "5",         "2",    "2",
                          "5000",           "idforge", url.c_str(), nullptr};
  auto conn = std::make_unique<PgConn>(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (conn->conn_ == nullptr) return Status::Unavailable(shown + ": out of memory in libpq");
  if (PQstatus(conn->conn_) != CONNECTION_OK) {
    return Status::Unavailable(
        fmt::format("{}: cannot connect: {}", shown, one_line(PQerrorMessage(conn->conn_))));
  }
  // Notices ("relation already exists, skipping") would go to stderr; they say nothing
  // a caller needs.
  PQsetNoticeProcessor(
      conn->conn_, [](void*, const char*) {}, nullptr);
  if (PQsetnonblocking(conn->conn_, 1) != 0) {
    return Status::IoError(fmt::format("{}: cannot switch the connection to non-blocking: {}",
                                       shown, one_line(PQerrorMessage(conn->conn_))));
  }
  // The server-side limit ends a statement stuck on a lock (and releases what it holds)
  // before the client gives up on the connection.
  Answer set =
      conn->run(fmt::format("SET statement_timeout = {}", kStatementTimeoutMs).c_str(), {});
  if (!set.error.empty()) {
    return Status::Unavailable(fmt::format("{}: setting up the session: {}", shown, set.error));
  }
  return conn;
}

bool PgConn::wait_socket(short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{PQsocket(conn_), events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let libpq report the socket's error
  }
}

Answer PgConn::run(const char* sql, const std::vector<std::string>& params) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kAnswerTimeoutMs);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());

  if (PQsendQueryParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0) == 0) {
    return fail(one_line(PQerrorMessage(conn_)));
  }
  for (;;) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) break;
    if (flushed < 0) return fail(one_line(PQerrorMessage(conn_)));
    if (!wait_socket(POLLIN | POLLOUT, deadline)) {
      return fail(fmt::format("no answer within {} ms", kAnswerTimeoutMs));
    }
    if (PQconsumeInput(conn_) == 0) return fail(one_line(PQerrorMessage(conn_)));
  }

  Answer answer;
  for (;;) {
    while (PQisBusy(conn_) != 0) {
      if (!wait_socket(POLLIN, deadline)) {
        // The statement may still commit later; the caller never sees its range, so at
        // worst those numbers are skipped, never handed out twice.
        return fail(fmt::format("no answer within {} ms", kAnswerTimeoutMs));
      }
      if (PQconsumeInput(conn_) == 0) return fail(one_line(PQerrorMessage(conn_)));
    }
    PgResult r(PQgetResult(conn_));
    if (!r) break;  // the statement is complete
    const ExecStatusType st = PQresultStatus(r.get());
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
      if (answer.error.empty()) answer.result = std::move(r);
      continue;
    }
    if (answer.error.empty()) {
      const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
      answer.sqlstate = state ? state : "";
      const char* primary = PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY);
      answer.error = one_line(primary ? primary : PQresultErrorMessage(r.get()));
      answer.result.reset();
    }
  }
  if (answer.error.empty() && !answer.result) answer.error = "the server sent no result";
  if (PQstatus(conn_) != CONNECTION_OK) broken_ = true;
  return answer;
}

class PostgresStore final : public SegmentStore {
 public:
  PostgresStore(std::string url, std::string shown)
      : url_(std::move(url)),
        shown_(std::move(shown)),
        pool_(kMaxConnections, [this] { return PgConn::connect(url_, shown_); }) {}

  Status open();

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return shown_; }

 private:
  // Runs one statement on a pooled connection. A connection that had been idle may
  // have been closed by a server restart since; its quick failure earns one retry on a
  // new connection. (Retrying an allocation whose answer was lost skips a range at
  // worst.)
  // On failure `sqlstate`, when given, receives the statement's SQLSTATE ("" for a
  // connection failure).
  Result<Answer> run(const char* sql, const std::vector<std::string>& params,
                     std::string_view doing, std::string* sqlstate = nullptr);
  // The Status for a failed statement, by its SQLSTATE class.
  Status error(const Answer& answer, std::string_view doing) const;
  Result<TagInfo> read_row(const PGresult* r, int row) const;
  Status ensure_table();

  const std::string url_;
  const std::string shown_;
  ConnectionPool<PgConn> pool_;
};

Result<Answer> PostgresStore::run(const char* sql, const std::vector<std::string>& params,
                                  std::string_view doing, std::string* sqlstate) {
  for (int attempt = 0;; ++attempt) {
    Result<ConnectionPool<PgConn>::Lease> lease = pool_.acquire();
    if (!lease.ok()) return lease.status();
    const auto started = std::chrono::steady_clock::now();
    Answer answer = (*lease)->run(sql, params);
    if (answer.error.empty()) return answer;
    if ((*lease)->broken() && lease->reused() && attempt == 0 &&
        std::chrono::steady_clock::now() - started < kStaleFailure) {
      continue;
    }
    if (sqlstate != nullptr) *sqlstate = answer.sqlstate;
    return error(answer, doing);
  }
}

Status PostgresStore::error(const Answer& answer, std::string_view doing) const {
  std::string message = fmt::format("{}: {}: {}", shown_, doing, answer.error);
  const std::string_view state = answer.sqlstate;
  if (state.empty() || state.starts_with("08") ||  // connection exceptions
      state.starts_with("53") ||                   // too many connections, out of memory
      state.starts_with("57") ||                   // canceled (statement timeout), shutdown
      state.starts_with("40")) {                   // deadlock, serialization failure
    if (state == "57014") message += " (statement timeout)";
    return Status::Unavailable(std::move(message));
  }
  return Status::IoError(std::move(message));
}

Status PostgresStore::ensure_table() {
  // The table usually exists: checking first lets an operator create it and grant the
  // service only SELECT/INSERT/UPDATE.
  Result<Answer> exists =
      run("SELECT to_regclass('idforge_segments') IS NOT NULL", {}, "looking for the table");
  if (!exists.ok()) return exists.status();
  if (std::string_view(PQgetvalue(exists->result.get(), 0, 0)) != "t") {
    Result<Answer> made = run(kCreateTableSql, {}, "creating table idforge_segments");
    if (!made.ok()) {
      // Two processes starting at once may both try; PostgreSQL's IF NOT EXISTS can
      // then fail on a catalog unique index. The table is there either way.
      Result<Answer> again =
          run("SELECT to_regclass('idforge_segments') IS NOT NULL", {}, "looking for the table");
      if (!again.ok()) return again.status();
      if (std::string_view(PQgetvalue(again->result.get(), 0, 0)) != "t") return made.status();
    }
  }
  Result<Answer> shape =
      run(fmt::format("SELECT {} FROM idforge_segments LIMIT 0", kColumns).c_str(), {},
          "checking table idforge_segments");
  if (!shape.ok()) {
    if (shape.status().code() == StatusCode::kIoError) {
      return Status::IoError(
          fmt::format("{}: table idforge_segments does not have the expected columns ({}): {}",
                      shown_, kColumns, shape.status().message()));
    }
    return shape.status();
  }
  return Status::Ok();
}

Status PostgresStore::open() { return ensure_table(); }

Result<TagInfo> PostgresStore::read_row(const PGresult* r, int row) const {
  auto text = [r, row](int col) {
    return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
  };
  TagInfo info;
  info.name = text(0);
  Result<int64_t> max_id = parse_int(text(1));
  Result<int64_t> step = parse_int(text(2));
  Result<int64_t> updated = parse_int(text(5));
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
  const PGresult* r = got->result.get();
  if (PQntuples(r) == 0) {
    // No row matched: the tag is unknown, or its row is one the WHERE clause refuses.
    Result<TagInfo> info = get_tag(tag);
    if (!info.ok()) return info.status();
    return Status::IoError(
        fmt::format("{}: tag '{}' cannot be allocated from (edited by hand?)", shown_, tag));
  }
  Result<int64_t> max_id = parse_int(PQgetvalue(r, 0, 0));
  Result<int64_t> used = parse_int(PQgetvalue(r, 0, 1));
  if (!max_id.ok() || !used.ok() || *used < 1 || *max_id < *used) {
    return Status::Internal(fmt::format("{}: tag '{}' returned max_id '{}' for step '{}'", shown_,
                                        tag, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)));
  }
  const auto count = static_cast<uint64_t>(*used);
  return Segment{static_cast<uint64_t>(*max_id) - count + 1, count, 1};
}

Status PostgresStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(spec.name));
  if (spec.start < 1 || spec.start > kMaxId) {
    return Status::InvalidArgument(
        fmt::format("start must be from 1 to {}, got {}", kMaxId, spec.start));
  }
  IDFORGE_RETURN_IF_ERROR(validate_step(spec.step));
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
  Result<Answer> got =
      run(fmt::format("SELECT {} FROM idforge_segments ORDER BY tag", kColumns).c_str(), {},
          "listing tags");
  if (!got.ok()) return got.status();
  const PGresult* r = got->result.get();
  std::vector<TagInfo> tags;
  tags.reserve(static_cast<size_t>(PQntuples(r)));
  for (int i = 0; i < PQntuples(r); ++i) {
    Result<TagInfo> info = read_row(r, i);
    if (!info.ok()) return info.status();
    tags.push_back(std::move(info).value());
  }
  return tags;
}

Result<TagInfo> PostgresStore::get_tag(std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  Result<Answer> got =
      run(fmt::format("SELECT {} FROM idforge_segments WHERE tag = $1", kColumns).c_str(),
          {std::string(name)}, fmt::format("reading tag '{}'", name));
  if (!got.ok()) return got.status();
  if (PQntuples(got->result.get()) == 0) return unknown_tag(name);
  return read_row(got->result.get(), 0);
}

Status PostgresStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  Result<Answer> got =
      run(kSetStepSql, {std::to_string(step), std::to_string(now_unix_ms()), std::string(name)},
          fmt::format("setting the step of tag '{}'", name));
  if (!got.ok()) return got.status();
  if (std::string_view(PQcmdTuples(got->result.get())) == "0") return unknown_tag(name);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_postgres_store(std::string_view url) {
  if (url.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("postgres store URL contains a NUL byte");
  }
  std::string text(url);
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
  auto store = std::make_unique<PostgresStore>(text, redact_url(text));
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
