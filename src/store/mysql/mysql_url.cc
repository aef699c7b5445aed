#include "store/mysql/mysql_url.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

#include "core/text.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

constexpr unsigned kMaxTimeoutS = 3600;
constexpr unsigned kMaxPool = 64;
constexpr unsigned kMaxRetries = 1000;
constexpr uint32_t kMaxStep = 1'000'000'000;  // kMaxSegmentStep
constexpr size_t kMaxIdentifier = 64;         // MySQL's limit for table and database names

constexpr std::string_view kOptions =
    "table, scheme, step, connect_timeout, read_timeout, write_timeout, lock_wait_timeout, pool, "
    "retries, tls, tls_ca, tls_cert, tls_key";

// Names idforge puts into SQL unquoted-by-value: letters, digits, '_' and '$', as
// MySQL's unquoted identifiers. They are still written in backticks.
bool valid_identifier(std::string_view name) {
  if (name.empty() || name.size() > kMaxIdentifier) return false;
  for (char c : name) {
    if (!text::is_alnum(c) && c != '_' && c != '$') return false;
  }
  return true;
}

Result<MysqlScheme> scheme_named(std::string_view name) {
  for (MysqlScheme s :
       {MysqlScheme::kIdforge, MysqlScheme::kLeaf, MysqlScheme::kTinyid, MysqlScheme::kSequence}) {
    if (name == mysql_scheme_name(s)) return s;
  }
  return Status::InvalidArgument(fmt::format(
      "store URL option scheme must be idforge, leaf, tinyid or sequence, got '{}'", name));
}

// The scheme a table's well-known name implies: Leaf's and Tinyid's tables and the
// classic SEQUENCE table are used in place with their own conventions.
MysqlScheme scheme_of_table(std::string_view table) {
  if (table == "leaf_alloc") return MysqlScheme::kLeaf;
  if (table == "tiny_id_info") return MysqlScheme::kTinyid;
  if (text::equals_ignore_case(table, "sequence")) return MysqlScheme::kSequence;
  return MysqlScheme::kIdforge;
}

Result<unsigned> seconds(const std::string& key, const std::string& value) {
  IDFORGE_ASSIGN_OR_RETURN(uint32_t n, parse_option_number(key, value, kMaxTimeoutS));
  if (n == 0) {
    return Status::InvalidArgument(
        fmt::format("store URL option {} is in seconds, from 1 to {}; 0 would wait forever", key,
                    kMaxTimeoutS));
  }
  return n;
}

}  // namespace

std::string_view mysql_scheme_name(MysqlScheme scheme) {
  switch (scheme) {
    case MysqlScheme::kLeaf:
      return "leaf";
    case MysqlScheme::kTinyid:
      return "tinyid";
    case MysqlScheme::kSequence:
      return "sequence";
    case MysqlScheme::kIdforge:
      break;
  }
  return "idforge";
}

Result<MysqlUrl> parse_mysql_url(std::string_view url) {
  const std::string shown = redact_url(url);
  auto bad = [&shown](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "bad mysql store URL '{}': {} (expected mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        "[?OPTION=VALUE&...])",
        shown, why));
  };
  if (url.find('\0') != std::string_view::npos) return bad("it contains a NUL byte");
  std::string_view rest;
  if (url.starts_with("mysql://")) {
    rest = url.substr(8);
  } else if (url.starts_with("mariadb://")) {
    rest = url.substr(10);
  } else {
    return bad("it must start with mysql:// or mariadb://");
  }
  MysqlUrl out;
  out.shown = shown;
  const size_t question = rest.find('?');
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  rest = rest.substr(0, question);

  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no database after the host");
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view database = rest.substr(slash + 1);
  if (!valid_identifier(database)) {
    return bad("the database must be 1 to 64 of A-Z a-z 0-9 _ $");
  }
  out.database = std::string(database);

  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return bad("no user (USER@HOST)");
  const std::string_view auth = authority.substr(0, at);
  const size_t colon = auth.find(':');
  Result<std::string> user = percent_decode(auth.substr(0, colon));
  Result<std::string> password =
      percent_decode(colon == std::string_view::npos ? std::string_view() : auth.substr(colon + 1));
  if (!user.ok() || !password.ok()) return bad("a bad %-escape in the user or password");
  if (user->empty()) return bad("the user is empty");
  out.user = std::move(user).value();
  out.password = std::move(password).value();

  std::string_view hostport = authority.substr(at + 1);
  std::string_view port;
  if (hostport.starts_with('[')) {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return bad("unclosed '[' in the host");
    out.host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return bad("expected ':PORT' after ']'");
    if (!after.empty()) port = after.substr(1);
  } else {
    const size_t c = hostport.rfind(':');
    out.host = std::string(hostport.substr(0, c));
    if (c != std::string_view::npos) port = hostport.substr(c + 1);
  }
  if (out.host.empty()) return bad("no host");
  if (!port.empty() && (!text::parse_int(port, &out.port) || out.port < 1 || out.port > 65535)) {
    return bad("the port must be a number from 1 to 65535");
  }

  bool scheme_given = false;
  std::string seen;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param.empty()) continue;
    const size_t eq = param.find('=');
    const std::string key(param.substr(0, eq));
    Result<std::string> decoded =
        percent_decode(eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1));
    if (!decoded.ok()) return bad(fmt::format("a bad %-escape in option {}", key));
    const std::string value = std::move(decoded).value();
    if (seen.find("," + key + ",") != std::string::npos) {
      return Status::InvalidArgument(fmt::format("store URL option '{}' is given twice", key));
    }
    seen += "," + key + ",";
    if (key == "table") {
      if (!valid_identifier(value)) {
        return bad("option table must be 1 to 64 of A-Z a-z 0-9 _ $");
      }
      out.table = value;
    } else if (key == "scheme") {
      IDFORGE_ASSIGN_OR_RETURN(out.scheme, scheme_named(value));
      scheme_given = true;
    } else if (key == "step") {
      IDFORGE_ASSIGN_OR_RETURN(out.step, parse_option_number(key, value, kMaxStep));
      if (out.step == 0) return bad("option step must be at least 1");
    } else if (key == "connect_timeout") {
      IDFORGE_ASSIGN_OR_RETURN(out.connect_timeout_s, seconds(key, value));
    } else if (key == "read_timeout") {
      IDFORGE_ASSIGN_OR_RETURN(out.read_timeout_s, seconds(key, value));
    } else if (key == "write_timeout") {
      IDFORGE_ASSIGN_OR_RETURN(out.write_timeout_s, seconds(key, value));
    } else if (key == "lock_wait_timeout") {
      IDFORGE_ASSIGN_OR_RETURN(out.lock_wait_timeout_s, seconds(key, value));
    } else if (key == "pool") {
      IDFORGE_ASSIGN_OR_RETURN(out.pool, parse_option_number(key, value, kMaxPool));
      if (out.pool == 0) return bad("option pool must be at least 1");
    } else if (key == "retries") {
      IDFORGE_ASSIGN_OR_RETURN(out.retries, parse_option_number(key, value, kMaxRetries));
      if (out.retries == 0) return bad("option retries must be at least 1");
    } else if (key == "tls") {
      if (value == "off") {
        out.tls = MysqlTls::kOff;
      } else if (value == "on") {
        out.tls = MysqlTls::kOn;
      } else if (value == "verify") {
        out.tls = MysqlTls::kVerify;
      } else {
        return bad(fmt::format("option tls must be off, on or verify, got '{}'", value));
      }
    } else if (key == "tls_ca") {
      out.tls_ca = value;
    } else if (key == "tls_cert") {
      out.tls_cert = value;
    } else if (key == "tls_key") {
      out.tls_key = value;
    } else {
      return bad(fmt::format("unknown option '{}' (known: {})", key, kOptions));
    }
  }
  if (!scheme_given) out.scheme = scheme_of_table(out.table);
  if (out.lock_wait_timeout_s >= out.read_timeout_s) {
    // A statement waiting on a row lock must be ended by the server, with its reason,
    // before the client gives up on the connection without one.
    return bad(fmt::format("lock_wait_timeout ({} s) must be below read_timeout ({} s)",
                           out.lock_wait_timeout_s, out.read_timeout_s));
  }
  if (out.tls == MysqlTls::kVerify && out.tls_ca.empty()) {
    return bad("tls=verify needs tls_ca (the CA file that signed the server's certificate)");
  }
  if (out.tls_cert.empty() != out.tls_key.empty()) {
    return bad("tls_cert and tls_key go together (a client certificate and its key)");
  }
  if (out.tls == MysqlTls::kOff && (!out.tls_ca.empty() || !out.tls_cert.empty())) {
    out.tls = out.tls_ca.empty() ? MysqlTls::kOn : MysqlTls::kVerify;
  }
  return out;
}

}  // namespace idforge::store
