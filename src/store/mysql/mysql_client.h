// The client side of MySQL and MariaDB that the segment store uses: one MariaDB
// Connector/C connection whose calls cannot hang, a small pool of them, transactions,
// and the mapping of failures to a Status.
//
// No call can hang: connecting gives up after connect_timeout, the server ends a
// statement that waits for a row lock after lock_wait_timeout (and MariaDB any
// statement after max_statement_time), and the client stops waiting for an answer
// after read_timeout (a server that stopped answering at all). TCP keepalive finds a
// peer that vanished. A connection that failed is dropped and the next call reconnects;
// the connector's own auto-reconnect is off, since it would silently end a transaction.
//
// Errors: the server unreachable, gone, restarting, read-only, a lock wait timeout or a
// deadlock are Unavailable (try again later or elsewhere); anything about the data or
// the schema is IoError, with the server's message.
#pragma once

#include <mysql.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/connection_pool.h"
#include "idforge/status.h"
#include "store/mysql/mysql_url.h"

namespace idforge::store {

// Server error numbers the store reacts to (mysqld_error.h names).
inline constexpr unsigned kErDupEntry = 1062;        // ER_DUP_ENTRY
inline constexpr unsigned kErBadField = 1054;        // ER_BAD_FIELD_ERROR
inline constexpr unsigned kErNoSuchTable = 1146;     // ER_NO_SUCH_TABLE
inline constexpr unsigned kErDataOutOfRange = 1690;  // ER_DATA_OUT_OF_RANGE (BIGINT overflow)
inline constexpr unsigned kErWarnOutOfRange = 1264;  // ER_WARN_DATA_OUT_OF_RANGE

// The outcome of one statement.
struct MysqlAnswer {
  unsigned error = 0;  // mysql_errno(); 0 on success
  std::string message;
  // Rows of a SELECT, each cell as text; nullopt for NULL.
  std::vector<std::vector<std::optional<std::string>>> rows;
  uint64_t affected = 0;  // rows an UPDATE matched (CLIENT_FOUND_ROWS), an INSERT added

  bool ok() const { return error == 0; }
  // The cell's text, "" for NULL or a cell that is not there.
  std::string text(size_t row, size_t col) const;
};

// One connection. Not thread-safe; the pool gives it to one caller at a time.
class MysqlConn {
 public:
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  static Result<std::unique_ptr<MysqlConn>> connect(const MysqlUrl& url);

  bool broken() const { return broken_; }
  // An idle connection has nothing to read; readable means the server closed it.
  bool looks_alive();

  // Runs one statement and reads its whole result.
  MysqlAnswer run(std::string_view sql);
  // `text` as a quoted SQL string literal for this connection's character set.
  std::string quote(std::string_view text);
  // Statements run since the connection left the pool (a failure of the first on a
  // reused connection means the server closed it while idle: nothing was done).
  int statements() const { return statements_; }
  void reset_statements() { statements_ = 0; }

 private:
  explicit MysqlConn(MYSQL* m) : m_(m) {}

  MYSQL* m_;
  bool broken_ = false;
  int statements_ = 0;
};

// A pool of connections to one database. Thread-safe.
class MysqlClient {
 public:
  explicit MysqlClient(MysqlUrl url);
  MysqlClient(const MysqlClient&) = delete;
  MysqlClient& operator=(const MysqlClient&) = delete;

  const MysqlUrl& url() const { return url_; }
  const std::string& shown() const { return url_.shown; }

  // Calls `body` with a pooled connection. When the first statement fails because a
  // reused connection had been closed by the server (a restart, an idle timeout), the
  // body runs once more on a new connection: nothing had been done.
  Status with_connection(const std::function<Status(MysqlConn&)>& body);

  // Runs one statement (autocommit) on a pooled connection; the Status of a failure
  // says what was being done (`doing`).
  Result<MysqlAnswer> run(std::string_view sql, std::string_view doing);

  // Runs `body` inside START TRANSACTION ... COMMIT on one connection; any error in the
  // body rolls back. A COMMIT whose answer is lost leaves the outcome unknown: callers
  // only use transactions whose repetition skips numbers at worst, never repeats them.
  Status transaction(const std::function<Status(MysqlConn&)>& body, std::string_view doing);

  // The Status for a failed statement: Unavailable for the server's or the
  // connection's trouble, IoError for everything else.
  Status error(const MysqlAnswer& answer, std::string_view doing) const;

 private:
  const MysqlUrl url_;
  ConnectionPool<MysqlConn> pool_;
};

// Runs `sql` on `conn` and turns a failure into a Status through `client`.
Result<MysqlAnswer> exec(MysqlClient& client, MysqlConn& conn, std::string_view sql,
                         std::string_view doing);

// A whole number the server sent as text; IoError if it is not one.
Result<int64_t> parse_mysql_int(std::string_view text);

}  // namespace idforge::store
