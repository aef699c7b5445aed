#include "client/endpoint.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "client/json_reader.h"
#include "core/text.h"

namespace idforge::client {
namespace {

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 16 * 1024 * 1024;
constexpr size_t kMaxIdleConnections = 8;  // per server; more concurrent requests open their own
constexpr int kMaxRespDepth = 8;
constexpr int64_t kMaxRespItems = 1'000'000;

// Spaces and tabs at either end: HTTP's optional white space (OWS).
constexpr std::string_view trim(std::string_view in) { return text::trim(in, " \t"); }

// For messages: at most `n` bytes, control bytes shown as '?'.
std::string cut(std::string_view text, size_t n = 80) {
  std::string out(text.substr(0, n));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// Digits only (from_chars reads no sign for an unsigned type), at most 20 of them.
bool parse_u64(std::string_view digits, uint64_t* out) {
  return digits.size() <= 20 && text::parse_int(digits, out);
}

// A UUIDv7 or ULID as text: printable ASCII without spaces.
bool is_id_text(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

// The Status of an answer that says the request itself is wrong: the server's code when it
// is one of ours, else what its HTTP status means.
Status wrong_request(std::string_view code, int http_status, std::string message,
                     const std::string& url) {
  message += " (from " + url + ")";
  if (code == "invalid_argument") return Status::InvalidArgument(std::move(message));
  if (code == "out_of_range") return Status::OutOfRange(std::move(message));
  if (code == "not_found") return Status::NotFound(std::move(message));
  if (code == "already_exists") return Status::AlreadyExists(std::move(message));
  if (http_status == 404) return Status::NotFound(std::move(message));
  if (http_status == 409) return Status::AlreadyExists(std::move(message));
  return Status::InvalidArgument(std::move(message));
}

Status failure(std::string reason) { return Status::IoError(std::move(reason)); }

bool is_integer_kind(Kind kind) { return kind == Kind::kSnowflake || kind == Kind::kSegment; }

// One RESP reply (RESP2, and the RESP3 types a server might send): its type byte, its
// text (a string, an error, an integer as written) and its items.
struct RespReply {
  char type = 0;
  bool null = false;
  std::string text;
  std::vector<RespReply> items;
};

Result<RespReply> read_reply(Connection& conn, const Deadline& deadline, int depth) {
  IDFORGE_ASSIGN_OR_RETURN(std::string line, conn.read_line(deadline, kMaxHeaderBytes));
  if (line.empty()) return failure("an empty RESP line");
  RespReply reply;
  reply.type = line[0];
  const std::string_view rest = std::string_view(line).substr(1);
  switch (reply.type) {
    case '+':
    case '-':
    case ':':
      reply.text = std::string(rest);
      return reply;
    case '_':
      reply.null = true;
      return reply;
    case '$':
    case '*':
    case '~':
    case '>':
    case '%': {
      int64_t n = 0;
      if (!text::parse_int(rest, &n)) return failure("bad RESP length '" + cut(rest, 40) + "'");
      if (n < 0) {
        reply.null = true;
        return reply;
      }
      if (reply.type == '$') {
        if (static_cast<uint64_t>(n) > kMaxBodyBytes) return failure("a RESP string is too large");
        IDFORGE_ASSIGN_OR_RETURN(std::string data,
                                 conn.read_exact(static_cast<size_t>(n) + 2, deadline));
        if (data.compare(data.size() - 2, 2, "\r\n") != 0) {
          return failure("a RESP string without its CRLF");
        }
        data.resize(data.size() - 2);
        reply.text = std::move(data);
        return reply;
      }
      if (depth >= kMaxRespDepth || n > kMaxRespItems) {
        return failure("a RESP array is too large or too deep");
      }
      if (reply.type == '%') n *= 2;
      reply.items.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        IDFORGE_ASSIGN_OR_RETURN(RespReply item, read_reply(conn, deadline, depth + 1));
        reply.items.push_back(std::move(item));
      }
      return reply;
    }
    default:
      return failure("not a RESP answer: '" + cut(line) + "'");
  }
}

}  // namespace

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kSnowflake:
      return "snowflake";
    case Kind::kSegment:
      return "segment";
    case Kind::kUuid7:
      return "uuid7";
    case Kind::kUlid:
      return "ulid";
  }
  return "snowflake";
}

Result<ServerAddress> parse_server_url(std::string_view url) {
  const std::string quoted = "server '" + std::string(url) + "'";
  const std::string_view trimmed = trim(url);
  const size_t sep = trimmed.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument(quoted +
                                   " is not a URL like http://HOST:PORT or redis://HOST:PORT");
  }
  ServerAddress address;
  const std::string scheme = text::ascii_lower(trimmed.substr(0, sep));
  if (scheme != "http" && scheme != "redis") {
    return Status::InvalidArgument(quoted +
                                   ": the scheme must be http:// (the JSON API) or redis:// "
                                   "(the Redis protocol)");
  }
  address.http = scheme == "http";
  std::string_view rest = trimmed.substr(sep + 3);
  const size_t tail = rest.find_first_of("/?#");
  if (tail != std::string_view::npos) {
    if (rest.substr(tail) != "/") {
      return Status::InvalidArgument(quoted + ": give only scheme://HOST:PORT");
    }
    rest = rest.substr(0, tail);
  }
  if (rest.find('@') != std::string_view::npos) {
    return Status::InvalidArgument(quoted + ": idforge servers take no user or password");
  }
  std::string_view port_text;
  bool has_port = false;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(quoted + ": an IPv6 address without its ']'");
    }
    address.host = std::string(rest.substr(1, close - 1));
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument(quoted + ": give only HOST:PORT");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
      return Status::InvalidArgument(quoted + ": write an IPv6 address in brackets, [::1]:8080");
    }
    address.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = rest.substr(colon + 1);
    }
  }
  if (address.host.empty()) return Status::InvalidArgument(quoted + " has no host");
  if (has_port) {
    uint64_t port = 0;
    if (!parse_u64(port_text, &port) || port == 0 || port > 65535) {
      return Status::InvalidArgument(quoted + ": port '" + std::string(port_text) +
                                     "' is not in 1..65535");
    }
    address.port = static_cast<uint16_t>(port);
  } else {
    address.port = address.http ? 80 : 6380;  // the URL's default; idforge's RESP port
  }
  const std::string host =
      address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host;
  address.url = scheme + "://" + host + ":" + std::to_string(address.port);
  return address;
}

Endpoint::Endpoint(ServerAddress address, int wake_fd, const std::atomic<bool>* closed)
    : address_(std::move(address)),
      host_header_(address_.url.substr(address_.url.find("://") + 3)),
      wake_fd_(wake_fd),
      closed_(closed) {}

std::unique_ptr<Connection> Endpoint::take_idle() {
  MutexLock lock(mu_);
  if (idle_.empty()) return nullptr;
  std::unique_ptr<Connection> conn = std::move(idle_.back());
  idle_.pop_back();
  return conn;
}

void Endpoint::give_back(std::unique_ptr<Connection> conn) {
  conn->used = true;
  if (closed_->load() || !conn->reusable || conn->buffered() != 0) return;
  MutexLock lock(mu_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(conn));
}

Attempt Endpoint::fetch(Kind kind, std::string_view tag, uint64_t count, int64_t timeout_ms) {
  const Deadline deadline{Clock::now() + std::chrono::milliseconds(timeout_ms), timeout_ms};
  Attempt attempt;
  std::unique_ptr<Connection> conn = take_idle();
  for (;;) {
    if (conn == nullptr) {
      Result<std::unique_ptr<Connection>> opened =
          Connection::open(address_.host, address_.port, deadline, wake_fd_);
      if (!opened.ok()) {
        attempt.reason = closed_->load() ? "the client is closed" : opened.status().message();
        return attempt;
      }
      conn = std::move(opened).value();
    }
    conn->got_bytes = false;
    Status wrong;
    Result<FetchedIds> ids = address_.http ? http(*conn, kind, tag, count, deadline, &wrong)
                                           : resp(*conn, kind, tag, count, deadline, &wrong);
    if (ids.ok()) {
      give_back(std::move(conn));
      attempt.outcome = Attempt::Outcome::kIds;
      attempt.ids = std::move(ids).value();
      return attempt;
    }
    if (!wrong.ok()) {
      give_back(std::move(conn));  // a whole answer: the connection is fine
      attempt.outcome = Attempt::Outcome::kWrongRequest;
      attempt.error = std::move(wrong);
      return attempt;
    }
    const Status status = ids.status();
    const bool stale = conn->used && !conn->got_bytes && status.code() == StatusCode::kUnavailable;
    conn.reset();
    if (closed_->load()) {
      attempt.reason = "the client is closed";
      return attempt;
    }
    // A kept-alive connection the server closed while it was idle: one new connection,
    // within the same deadline. A timeout is the server's, never retried here.
    if (stale) continue;
    attempt.reason = status.message();
    return attempt;
  }
}

Result<FetchedIds> Endpoint::http(Connection& conn, Kind kind, std::string_view tag, uint64_t count,
                                  const Deadline& deadline, Status* wrong) {
  std::string path = "/v1/" + std::string(kind_name(kind));
  if (kind == Kind::kSegment) path += "/" + percent_encode(tag);
  const std::string request = "GET " + path + "?count=" + std::to_string(count) +
                              " HTTP/1.1\r\nHost: " + host_header_ +
                              "\r\nUser-Agent: idforge-cpp\r\nAccept: application/json\r\n\r\n";
  IDFORGE_RETURN_IF_ERROR(conn.send_all(request, deadline));

  IDFORGE_ASSIGN_OR_RETURN(std::string status_line, conn.read_line(deadline, kMaxHeaderBytes));
  // "HTTP/1.1 200 OK"
  const bool http_1 = status_line.starts_with("HTTP/1.") && status_line.size() >= 12 &&
                      status_line[8] == ' ' && (status_line.size() == 12 || status_line[12] == ' ');
  uint64_t status_value = 0;
  if (!http_1 || !parse_u64(std::string_view(status_line).substr(9, 3), &status_value)) {
    return failure("not an HTTP answer: '" + cut(status_line) + "'");
  }
  const int status = static_cast<int>(status_value);
  bool close = status_line.starts_with("HTTP/1.0");
  std::optional<size_t> length;
  size_t header_bytes = status_line.size() + 2;
  for (;;) {
    IDFORGE_ASSIGN_OR_RETURN(std::string line, conn.read_line(deadline, kMaxHeaderBytes));
    header_bytes += line.size() + 2;
    if (header_bytes > kMaxHeaderBytes) return failure("the answer's headers are too large");
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return failure("a malformed header '" + cut(line) + "'");
    const std::string_view name = trim(std::string_view(line).substr(0, colon));
    const std::string_view value = trim(std::string_view(line).substr(colon + 1));
    if (text::equals_ignore_case(name, "content-length")) {
      uint64_t n = 0;
      if (!parse_u64(value, &n) || n > kMaxBodyBytes) {
        return failure("bad Content-Length '" + cut(value, 40) + "'");
      }
      length = static_cast<size_t>(n);
    } else if (text::equals_ignore_case(name, "connection")) {
      const std::string v = text::ascii_lower(value);
      close = v.find("close") != std::string::npos ||
              (close && v.find("keep-alive") == std::string::npos);
    } else if (text::equals_ignore_case(name, "transfer-encoding")) {
      return failure("a Transfer-Encoding answer (idforge sends Content-Length)");
    }
  }
  std::string body;
  if (length) {
    IDFORGE_ASSIGN_OR_RETURN(body, conn.read_exact(*length, deadline));
  } else {
    IDFORGE_ASSIGN_OR_RETURN(body, conn.read_to_eof(deadline, kMaxBodyBytes));
    close = true;
  }
  if (close) conn.reusable = false;

  const std::optional<JsonValue> doc = parse_json(body);
  if (status < 200 || status > 299) {
    std::string code;
    std::string message;
    const JsonValue* error = doc ? doc->find("error") : nullptr;
    const JsonValue* code_value = error ? error->find("code") : nullptr;
    const JsonValue* message_value = error ? error->find("message") : nullptr;
    if (code_value && message_value && code_value->type == JsonValue::Type::kString &&
        message_value->type == JsonValue::Type::kString) {
      code = code_value->text;
      message = message_value->text;
    } else {
      code = "http_" + std::to_string(status);
      message = std::string(trim(std::string_view(body).substr(0, 200)));
      if (message.empty()) message = "HTTP " + std::to_string(status);
    }
    if (status == 400 || status == 404 || status == 409) {
      *wrong = wrong_request(code, status, message, address_.url);
      return *wrong;
    }
    // A 5xx, or any answer that does not say the request is wrong (a proxy's 401, 403,
    // 429): another server may answer.
    return failure("HTTP " + std::to_string(status) + " " + code + ": " + message);
  }
  const JsonValue* ids = doc ? doc->find("ids") : nullptr;
  if (ids == nullptr || ids->type != JsonValue::Type::kArray || ids->items.size() != count) {
    return failure("a malformed answer (not " + std::to_string(count) + " IDs): '" + cut(body) +
                   "'");
  }
  FetchedIds out;
  if (is_integer_kind(kind)) out.numbers.reserve(ids->items.size());
  for (const JsonValue& item : ids->items) {
    uint64_t n = 0;
    if (item.type != JsonValue::Type::kString) {
      return failure("a malformed answer (an ID that is not text): '" + cut(body) + "'");
    }
    if (is_integer_kind(kind)) {
      if (!parse_u64(item.text, &n)) {
        return failure("a malformed answer (an ID that is not a number): '" + cut(item.text) + "'");
      }
      out.numbers.push_back(n);
    } else {
      if (!is_id_text(item.text)) return failure("a malformed answer (a bad ID text)");
      out.texts.push_back(item.text);
    }
  }
  return out;
}

Result<FetchedIds> Endpoint::resp(Connection& conn, Kind kind, std::string_view tag, uint64_t count,
                                  const Deadline& deadline, Status* wrong) {
  std::vector<std::string> args;
  switch (kind) {
    case Kind::kSnowflake:
      args = {"ID.SNOWFLAKE"};
      break;
    case Kind::kSegment:
      args = {"ID.NEXT", std::string(tag)};
      break;
    case Kind::kUuid7:
      args = {"ID.UUID7"};
      break;
    case Kind::kUlid:
      args = {"ID.ULID"};
      break;
  }
  args.push_back(std::to_string(count));
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& arg : args) {
    request += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  IDFORGE_RETURN_IF_ERROR(conn.send_all(request, deadline));
  IDFORGE_ASSIGN_OR_RETURN(RespReply reply, read_reply(conn, deadline, 0));

  if (reply.type == '-') {
    // "ERR not_found: unknown tag 'x' ..." (src/server/resp/resp_reply.cc).
    const std::string_view text = reply.text;
    if (text.starts_with("ERR ")) {
      const std::string_view rest = text.substr(4);
      const size_t colon = rest.find(':');
      const std::string_view code = colon == std::string_view::npos ? "" : rest.substr(0, colon);
      if (code == "invalid_argument" || code == "out_of_range" || code == "not_found") {
        *wrong = wrong_request(code, 0, std::string(trim(rest.substr(colon + 1))), address_.url);
        return *wrong;
      }
    }
    // unavailable, lease_lost, io_error, internal; an unknown command from a server that
    // is not idforge: another server may answer.
    return failure(reply.text);
  }
  const char want = is_integer_kind(kind) ? ':' : '$';
  const bool shaped = reply.type == '*' && !reply.null && reply.items.size() == count &&
                      std::all_of(reply.items.begin(), reply.items.end(),
                                  [&](const RespReply& r) { return r.type == want && !r.null; });
  if (!shaped) {
    return failure("unexpected answer to " + args[0] + " (not " + std::to_string(count) +
                   " IDs): '" + cut(reply.type == '*' ? "an array" : reply.text) + "'");
  }
  FetchedIds out;
  if (is_integer_kind(kind)) {
    out.numbers.reserve(reply.items.size());
    for (const RespReply& item : reply.items) {
      uint64_t n = 0;
      if (!parse_u64(item.text, &n))
        return failure("an ID that is not a number: " + cut(item.text));
      out.numbers.push_back(n);
    }
  } else {
    out.texts.reserve(reply.items.size());
    for (RespReply& item : reply.items) {
      if (!is_id_text(item.text)) return failure("a malformed answer (a bad ID text)");
      out.texts.push_back(std::move(item.text));
    }
  }
  return out;
}

}  // namespace idforge::client
