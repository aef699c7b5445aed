#include "store/postgres/postgres_client.h"

#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace idforge::store {
namespace {

constexpr const char* kConnectTimeoutS = "3";
constexpr int kStatementTimeoutMs = 4000;
constexpr int kAnswerTimeoutMs = 6000;  // above the statement timeout: let the server say why
constexpr size_t kMaxConnections = 4;
// A connection the server closed while it sat idle fails at once; a slower failure is
// a server in trouble, and retrying would only double the caller's wait.
constexpr auto kStaleFailure = std::chrono::milliseconds(500);

}  // namespace

std::string one_line(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (size_t p = s.find('\n'); p != std::string::npos; p = s.find('\n', p)) s.replace(p, 1, "; ");
  return s.empty() ? "unknown error" : s;
}

Result<int64_t> parse_pg_int(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::IoError(fmt::format("expected an integer from the server, got '{}'", text));
  }
  return v;
}

bool PgConn::looks_alive() {
  if (broken()) return false;
  pollfd p{PQsocket(conn_), POLLIN, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  if (PQconsumeInput(conn_) == 0) broken_ = true;
  return !broken();
}

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
  // a caller needs, except one: a commit whose wait for synchronous standbys was
  // cancelled (by statement_timeout) still reports success, with only this warning
  // saying the standbys may not have it.
  PQsetNoticeReceiver(
      conn->conn_,
      [](void* arg, const PGresult* notice) {
        const char* text = PQresultErrorField(notice, PG_DIAG_MESSAGE_PRIMARY);
        if (text != nullptr &&
            std::strstr(text, "canceling wait for synchronous replication") != nullptr) {
          static_cast<PgConn*>(arg)->sync_wait_cancelled_ = true;
        }
      },
      conn.get());
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

  sync_wait_cancelled_ = false;
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
  answer.sync_wait_cancelled = sync_wait_cancelled_;
  if (PQstatus(conn_) != CONNECTION_OK) broken_ = true;
  return answer;
}

PgClient::PgClient(std::string url, std::string shown)
    : url_(std::move(url)),
      shown_(std::move(shown)),
      pool_(kMaxConnections, [this] { return PgConn::connect(url_, shown_); }) {}

Result<Answer> PgClient::run(const char* sql, const std::vector<std::string>& params,
                             std::string_view doing, std::string* sqlstate) {
  for (int attempt = 0;; ++attempt) {
    IDFORGE_ASSIGN_OR_RETURN(ConnectionPool<PgConn>::Lease lease, pool_.acquire());
    const auto started = std::chrono::steady_clock::now();
    Answer answer = lease->run(sql, params);
    if (answer.error.empty()) return answer;
    if (lease->broken() && lease.reused() && attempt == 0 &&
        std::chrono::steady_clock::now() - started < kStaleFailure) {
      continue;
    }
    if (sqlstate != nullptr) *sqlstate = answer.sqlstate;
    return error(answer, doing);
  }
}

Status PgClient::error(const Answer& answer, std::string_view doing) const {
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

}  // namespace idforge::store
