#include "store/mysql/mysql_client.h"

#include <errmsg.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <chrono>
#include <utility>

namespace idforge::store {
namespace {

// A connection the server closed while it sat idle fails at once; a slower failure is
// a server in trouble, and retrying would only double the caller's wait.
constexpr auto kStaleFailure = std::chrono::milliseconds(500);

// The server's errors that mean "not now" rather than "wrong": the caller may retry
// later or on another store.
bool is_transient(unsigned err) {
  // A TLS handshake that fails (a certificate from another CA, a name that does not
  // match) is a setting to fix, not a link to retry.
  if (err == CR_SSL_CONNECTION_ERROR) return false;
  if (err >= CR_MIN_ERROR && err <= CR_MAX_ERROR) return true;  // client side: the link
  switch (err) {
    case 1040:  // ER_CON_COUNT_ERROR: too many connections
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
    case 1213:  // ER_LOCK_DEADLOCK
    case 1290:  // ER_OPTION_PREVENTS_STATEMENT: --read-only (a replica, a fenced primary)
    case 1317:  // ER_QUERY_INTERRUPTED
    case 1792:  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 1969:  // ER_STATEMENT_TIMEOUT (MariaDB's max_statement_time)
    case 3024:  // ER_QUERY_TIMEOUT (MySQL's max_execution_time)
      return true;
    default:
      return false;
  }
}

// The connection itself is unusable after these (as opposed to one statement failing).
bool breaks_connection(unsigned err) {
  return (err >= CR_MIN_ERROR && err <= CR_MAX_ERROR) || err == 1053 || err == 1927;
}

void set_keepalive(MYSQL* m) {
  const int fd = static_cast<int>(mysql_get_socket(m));
  if (fd < 0) return;
  // A peer that vanished (a host down, a network cut) is noticed within about 9 s even
  // on an idle pooled connection; failures here only lose that early warning.
  const int on = 1, idle = 5, interval = 2, count = 2;
  const unsigned user_timeout_ms = 10'000;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

}  // namespace

std::string MysqlAnswer::text(size_t row, size_t col) const {
  if (row >= rows.size() || col >= rows[row].size() || !rows[row][col]) return "";
  return *rows[row][col];
}

MysqlConn::~MysqlConn() { mysql_close(m_); }

Result<std::unique_ptr<MysqlConn>> MysqlConn::connect(const MysqlUrl& url) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Status::Unavailable(url.shown + ": out of memory in the MySQL client");
  std::unique_ptr<MysqlConn> conn(new MysqlConn(m));
  const unsigned connect_s = url.connect_timeout_s;
  const unsigned read_s = url.read_timeout_s;
  const unsigned write_s = url.write_timeout_s;
  const my_bool no = 0, yes = 1;
  const unsigned tcp = MYSQL_PROTOCOL_TCP;
  mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
  mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &read_s);
  mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &write_s);
  mysql_optionsv(m, MYSQL_OPT_RECONNECT, &no);
  mysql_optionsv(m, MYSQL_OPT_LOCAL_INFILE, &no);
  // "localhost" would otherwise mean the Unix socket; the URL names a TCP endpoint.
  mysql_optionsv(m, MYSQL_OPT_PROTOCOL, &tcp);
  mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(m, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", "idforge");
  if (url.tls != MysqlTls::kOff) {
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &yes);
    const my_bool verify = url.tls == MysqlTls::kVerify ? 1 : 0;
    mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    if (!url.tls_ca.empty()) mysql_optionsv(m, MYSQL_OPT_SSL_CA, url.tls_ca.c_str());
    if (!url.tls_cert.empty()) mysql_optionsv(m, MYSQL_OPT_SSL_CERT, url.tls_cert.c_str());
    if (!url.tls_key.empty()) mysql_optionsv(m, MYSQL_OPT_SSL_KEY, url.tls_key.c_str());
  }
  // CLIENT_FOUND_ROWS: an UPDATE reports the rows it matched, so setting a step to the
  // value it has is not taken for an unknown tag.
  if (mysql_real_connect(m, url.host.c_str(), url.user.c_str(), url.password.c_str(),
                         url.database.c_str(), url.port, nullptr, CLIENT_FOUND_ROWS) == nullptr) {
    const unsigned err = mysql_errno(m);
    std::string message =
        fmt::format("{}: cannot connect: {} ({})", url.shown, mysql_error(m), err);
    if (is_transient(err)) return Status::Unavailable(std::move(message));
    return Status::IoError(std::move(message));  // access denied, unknown database, TLS
  }
  set_keepalive(m);
  // READ COMMITTED: a read that follows an update in a transaction sees the newest
  // committed rows, and no gap locks are taken. Strict mode turns a value that does not
  // fit its column into an error instead of a silently clipped one.
  const std::string setup[] = {
      "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
      fmt::format("SET SESSION innodb_lock_wait_timeout = {}, SESSION sql_mode = "
                  "CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES')",
                  url.lock_wait_timeout_s)};
  for (const std::string& sql : setup) {
    MysqlAnswer a = conn->run(sql);
    if (!a.ok()) {
      return Status::Unavailable(
          fmt::format("{}: setting up the session: {} ({})", url.shown, a.message, a.error));
    }
  }
  conn->reset_statements();
  return conn;
}

bool MysqlConn::looks_alive() {
  if (broken_) return false;
  pollfd p{static_cast<int>(mysql_get_socket(m_)), POLLIN, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  broken_ = true;  // an idle connection is never sent anything but its end
  return false;
}

MysqlAnswer MysqlConn::run(std::string_view sql) {
  ++statements_;
  MysqlAnswer answer;
  auto fail = [this, &answer] {
    answer.error = mysql_errno(m_);
    if (answer.error == 0) answer.error = CR_UNKNOWN_ERROR;
    answer.message = mysql_error(m_);
    if (answer.message.empty()) answer.message = "unknown error";
    if (breaks_connection(answer.error)) broken_ = true;
    return answer;
  };
  if (mysql_real_query(m_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) return fail();
  MYSQL_RES* res = mysql_store_result(m_);
  if (res == nullptr) {
    if (mysql_field_count(m_) != 0) return fail();  // rows were due but did not come
    answer.affected = mysql_affected_rows(m_);
  } else {
    const unsigned cols = mysql_num_fields(res);
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      const unsigned long* lengths = mysql_fetch_lengths(res);
      auto& out = answer.rows.emplace_back();
      out.reserve(cols);
      for (unsigned c = 0; c < cols; ++c) {
        if (row[c] == nullptr) {
          out.emplace_back(std::nullopt);
        } else {
          out.emplace_back(std::string(row[c], lengths[c]));
        }
      }
    }
    mysql_free_result(res);
  }
  // A statement that returns several results is never sent; drain any to stay in step.
  while (mysql_more_results(m_)) {
    if (mysql_next_result(m_) > 0) return fail();
    if (MYSQL_RES* more = mysql_store_result(m_)) mysql_free_result(more);
  }
  return answer;
}

std::string MysqlConn::quote(std::string_view text) {
  std::string out(text.size() * 2 + 3, '\0');
  out[0] = '\'';
  const unsigned long n = mysql_real_escape_string(m_, out.data() + 1, text.data(),
                                                   static_cast<unsigned long>(text.size()));
  out.resize(n + 1);
  out += '\'';
  return out;
}

MysqlClient::MysqlClient(MysqlUrl url)
    : url_(std::move(url)), pool_(url_.pool, [this] { return MysqlConn::connect(url_); }) {}

Status MysqlClient::with_connection(const std::function<Status(MysqlConn&)>& body) {
  for (int attempt = 0;; ++attempt) {
    IDFORGE_ASSIGN_OR_RETURN(ConnectionPool<MysqlConn>::Lease lease, pool_.acquire());
    lease->reset_statements();
    const auto started = std::chrono::steady_clock::now();
    Status st = body(*lease);
    if (st.ok()) return st;
    const bool stale = lease->broken() && lease.reused() && lease->statements() == 1 &&
                       std::chrono::steady_clock::now() - started < kStaleFailure;
    if (stale && attempt == 0) continue;
    return st;
  }
}

Result<MysqlAnswer> MysqlClient::run(std::string_view sql, std::string_view doing) {
  MysqlAnswer out;
  IDFORGE_RETURN_IF_ERROR(with_connection([&](MysqlConn& conn) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(out, exec(*this, conn, sql, doing));
    return Status::Ok();
  }));
  return out;
}

Status MysqlClient::transaction(const std::function<Status(MysqlConn&)>& body,
                                std::string_view doing) {
  return with_connection([&](MysqlConn& conn) -> Status {
    IDFORGE_RETURN_IF_ERROR(exec(*this, conn, "START TRANSACTION", doing));
    Status st = body(conn);
    if (st.ok()) {
      Result<MysqlAnswer> committed = exec(*this, conn, "COMMIT", doing);
      if (committed.ok()) return Status::Ok();
      st = committed.status();
    }
    // The server rolls back on its own when the connection is gone.
    if (!conn.broken()) (void)conn.run("ROLLBACK");
    return st;
  });
}

Status MysqlClient::error(const MysqlAnswer& answer, std::string_view doing) const {
  std::string message =
      fmt::format("{}: {}: {} (error {})", url_.shown, doing, answer.message, answer.error);
  if (is_transient(answer.error)) return Status::Unavailable(std::move(message));
  return Status::IoError(std::move(message));
}

Result<MysqlAnswer> exec(MysqlClient& client, MysqlConn& conn, std::string_view sql,
                         std::string_view doing) {
  MysqlAnswer a = conn.run(sql);
  if (!a.ok()) return client.error(a, doing);
  return a;
}

Result<int64_t> parse_mysql_int(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::IoError(fmt::format("expected an integer from the server, got '{}'", text));
  }
  return v;
}

}  // namespace idforge::store
