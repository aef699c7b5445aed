// The client side of PostgreSQL that the segment store uses: one libpq connection whose
// calls cannot hang, a small pool of them, and the mapping of failures to a Status.
//
// No call can hang: connecting gives up after kConnectTimeoutS, the server cancels a
// statement after kStatementTimeoutMs (a lock held elsewhere, an overloaded server), and
// the client stops waiting for an answer after kAnswerTimeoutMs (a server that stopped
// answering at all). A connection that failed is dropped and the next call reconnects.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/connection_pool.h"
#include "idforge/status.h"
#include "url/url_options.h"

namespace idforge::store {

// libpq's messages end in a newline and sometimes span lines; one line reads better.
std::string one_line(const char* message);

// A whole number the server sent as text; IoError if it is not one.
Result<int64_t> parse_pg_int(std::string_view text);

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
  // The commit went through but its wait for synchronous standbys was cancelled, so
  // they may not have it (PostgreSQL says so only in a warning).
  bool sync_wait_cancelled = false;

  // The text of a cell of the result.
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(result.get(), row, col),
                       static_cast<size_t>(PQgetlength(result.get(), row, col)));
  }
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
  bool looks_alive();

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
  bool sync_wait_cancelled_ = false;  // set by the notice receiver during run()
};

// A pool of connections to one database. Thread-safe.
class PgClient {
 public:
  // `url` goes to libpq as is; `shown` is the URL without its password.
  PgClient(std::string url, std::string shown);
  PgClient(const PgClient&) = delete;
  PgClient& operator=(const PgClient&) = delete;

  const std::string& shown() const { return shown_; }

  // Runs one statement on a pooled connection. A connection that had been idle may
  // have been closed by a server restart since; its quick failure earns one retry on a
  // new connection. (Retrying an allocation whose answer was lost skips a range at
  // worst.) On failure `sqlstate`, when given, receives the statement's SQLSTATE (""
  // for a connection failure).
  Result<Answer> run(const char* sql, const std::vector<std::string>& params,
                     std::string_view doing, std::string* sqlstate = nullptr);

 private:
  // The Status for a failed statement, by its SQLSTATE class.
  Status error(const Answer& answer, std::string_view doing) const;

  const std::string url_;
  const std::string shown_;
  ConnectionPool<PgConn> pool_;
};

}  // namespace idforge::store
