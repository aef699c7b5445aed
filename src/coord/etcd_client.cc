#include "coord/etcd_client.h"

#include <fmt/format.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <exception>
#include <utility>

namespace idforge::coord {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using net::ip::tcp;
using ErrorCode = boost::system::error_code;
using nlohmann::json;

// A status() over a large slot space reads every taken slot in one answer; anything
// past this is not an etcd we understand.
constexpr uint64_t kMaxAnswerBytes = 256u << 20;

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// A proto3 int64 as the gateway writes it: a decimal string, or a number; absent means 0.
bool read_int(const json& object, const char* field, int64_t* out) {
  *out = 0;
  const auto it = object.find(field);
  if (it == object.end() || it->is_null()) return true;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return true;
  }
  if (!it->is_string()) return false;
  const std::string& text = it->get_ref<const std::string&>();
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Absent bytes fields are empty.
bool read_bytes(const json& object, const char* field, std::string* out) {
  out->clear();
  const auto it = object.find(field);
  if (it == object.end() || it->is_null()) return true;
  return it->is_string() && base64_decode(it->get_ref<const std::string&>(), out);
}

bool read_kvs(const json& object, std::vector<EtcdKeyValue>* out) {
  out->clear();
  const auto it = object.find("kvs");
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_array()) return false;
  for (const json& item : *it) {
    if (!item.is_object()) return false;
    EtcdKeyValue kv;
    if (!read_bytes(item, "key", &kv.key) || !read_bytes(item, "value", &kv.value) ||
        !read_int(item, "create_revision", &kv.create_revision) ||
        !read_int(item, "mod_revision", &kv.mod_revision) || !read_int(item, "lease", &kv.lease)) {
      return false;
    }
    out->push_back(std::move(kv));
  }
  return true;
}

json compare(const char* target, std::string_view key, const char* field, int64_t number) {
  return json{{"target", target},
              {"key", base64_encode(key)},
              {"result", "EQUAL"},
              {field, std::to_string(number)}};
}

// gRPC status codes that etcd puts in its error answers.
constexpr int kGrpcInvalidArgument = 3;
constexpr int kGrpcNotFound = 5;
constexpr int kGrpcUnavailable = 14;

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = uint32_t{static_cast<uint8_t>(bytes[i])} << 16 |
                       uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8 |
                       uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    for (int shift = 18; shift >= 0; shift -= 6) out += kBase64Alphabet[(n >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) n |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kBase64Alphabet[(n >> 18) & 63];
    out += kBase64Alphabet[(n >> 12) & 63];
    out += rest == 2 ? kBase64Alphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::string* bytes) {
  bytes->clear();
  if (text.size() % 4 != 0) return false;
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < kBase64Alphabet.size(); ++i) {
    value[static_cast<uint8_t>(kBase64Alphabet[i])] = static_cast<int>(i);
  }
  bytes->reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return false;  // "x=y=" is not padding
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) {
      const int v = k >= 4 - pad ? 0 : value[static_cast<uint8_t>(text[i + k])];
      if (v < 0) return false;
      n = n << 6 | static_cast<uint32_t>(v);
    }
    bytes->push_back(static_cast<char>(n >> 16));
    if (pad < 2) bytes->push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) bytes->push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd: "\0" as range_end means every key from `key` on
}

namespace etcd_txn {
json create_revision_is(std::string_view key, int64_t revision) {
  return compare("CREATE", key, "create_revision", revision);
}
json mod_revision_is(std::string_view key, int64_t revision) {
  return compare("MOD", key, "mod_revision", revision);
}
json lease_is(std::string_view key, int64_t lease) { return compare("LEASE", key, "lease", lease); }
json put(std::string_view key, std::string_view value, int64_t lease) {
  json request{{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) request["lease"] = std::to_string(lease);
  return json{{"request_put", std::move(request)}};
}
json get(std::string_view key) {
  return json{{"request_range", json{{"key", base64_encode(key)}}}};
}
}  // namespace etcd_txn

// One keep-alive connection and the io_context that drives it. Beast's timeouts apply
// to asynchronous operations only, so each step starts one and runs the context until
// it completes; tcp_stream's timer closes the socket at the deadline, which completes
// the operation with beast::error::timeout.
class EtcdClient::Connection {
 public:
  bool is_open() const { return open_; }

  ErrorCode connect(const std::string& host, const std::string& port,
                    std::chrono::milliseconds timeout) {
    close();
    ErrorCode ec;
    tcp::resolver::results_type endpoints;
    const net::ip::address address = net::ip::make_address(host, ec);
    tcp::resolver resolver(ioc_);
    if (!ec) {
      endpoints =
          resolver.resolve(address.to_string(), port,
                           tcp::resolver::numeric_host | tcp::resolver::numeric_service, ec);
    } else {
      // Synchronous: a name lookup is not bounded by connect_ms (getaddrinfo cannot be
      // cancelled). Use an address in the URL where that matters.
      endpoints = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
    }
    if (ec) return ec;
    stream_.expires_after(timeout);
    stream_.async_connect(endpoints, [&](ErrorCode e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec) return ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);  // small requests, answered at once
    open_ = true;
    return {};
  }

  // Sends `request` and reads the answer into `response`. `*answered` tells whether any
  // byte of an answer arrived (a request on a connection the server had closed did not).
  ErrorCode exchange(const http::request<http::string_body>& request,
                     http::response<http::string_body>* response, std::chrono::milliseconds timeout,
                     bool* answered) {
    *answered = false;
    ErrorCode ec;
    stream_.expires_after(timeout);  // one deadline for the write and the read
    http::async_write(stream_, request, [&](ErrorCode e, size_t) { ec = e; });
    run();
    if (ec) return fail(ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxAnswerBytes);
    http::async_read(stream_, buffer_, parser, [&](ErrorCode e, size_t) { ec = e; });
    run();
    *answered = parser.got_some();
    if (ec) return fail(ec);
    *response = parser.release();
    if (!response->keep_alive()) close();
    return {};
  }

  void close() {
    ErrorCode ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    buffer_.clear();
    open_ = false;
  }

 private:
  void run() {
    ioc_.restart();
    ioc_.run();
  }
  ErrorCode fail(ErrorCode ec) {
    close();
    return ec;
  }

  net::io_context ioc_{1};
  beast::tcp_stream stream_{ioc_};
  beast::flat_buffer buffer_;
  bool open_ = false;
};

Result<std::unique_ptr<EtcdClient>> EtcdClient::open(std::string_view target, Timeouts timeouts) {
  constexpr std::string_view kScheme = "etcd://";
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("invalid etcd address '{}': {} (use etcd://HOST:PORT)", target, why));
  };
  if (target.substr(0, kScheme.size()) != kScheme) return bad("it does not start with etcd://");
  std::string_view rest = target.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("it has a path");
  if (rest.find('@') != std::string_view::npos) return bad("user names are not supported");
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {  // [::1]:2379
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("'[' without ']'");
    host = rest.substr(1, close - 1);
    if (rest.substr(close + 1, 1) != ":") return bad("no port after the address");
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad("no port (etcd listens on 2379 by default)");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  int port_number = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (host.empty()) return bad("no host");
  if (ec != std::errc() || end != port.data() + port.size() || port_number < 1 ||
      port_number > 65535) {
    return bad(fmt::format("port '{}' is not a number from 1 to 65535", port));
  }
  if (timeouts.connect_ms < 1 || timeouts.request_ms < 1) {
    return Status::InvalidArgument("etcd timeouts must be positive");
  }
  return std::unique_ptr<EtcdClient>(
      new EtcdClient(std::string(host), std::string(port), timeouts));
}

EtcdClient::EtcdClient(std::string host, std::string port, Timeouts timeouts)
    : host_(std::move(host)),
      port_(std::move(port)),
      // An IPv6 address goes in brackets, as in the URL.
      shown_(host_.find(':') == std::string::npos ? fmt::format("etcd://{}:{}", host_, port_)
                                                  : fmt::format("etcd://[{}]:{}", host_, port_)),
      timeouts_(timeouts),
      connection_(std::make_unique<Connection>()) {}

EtcdClient::~EtcdClient() = default;

Result<json> EtcdClient::call(std::string_view path, const json& body) {
  http::request<http::string_body> request{http::verb::post, std::string(path), 11};
  http::response<http::string_body> response;
  try {
    request.set(http::field::host, shown_.substr(7));  // without "etcd://"
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = body.dump();
    request.prepare_payload();
  } catch (const std::exception& e) {
    return Status::Internal(
        fmt::format("{}: cannot build the request to {}: {}", shown_, path, e.what()));
  }

  {
    std::lock_guard lock(mu_);
    // A kept-alive connection may have been closed by etcd (a restart) since its last
    // use; the request then fails before etcd read it, so it is sent once more on a
    // new connection. A timeout is not retried: etcd may have acted on it.
    for (int attempt = 0;; ++attempt) {
      const bool reused = connection_->is_open();
      if (!reused) {
        const ErrorCode ec =
            connection_->connect(host_, port_, std::chrono::milliseconds(timeouts_.connect_ms));
        if (ec) {
          return Status::Unavailable(
              fmt::format("{}: cannot connect: {}", shown_,
                          ec == beast::error::timeout
                              ? fmt::format("no answer within {} ms", timeouts_.connect_ms)
                              : ec.message()));
        }
      }
      bool answered = false;
      const ErrorCode ec = connection_->exchange(
          request, &response, std::chrono::milliseconds(timeouts_.request_ms), &answered);
      if (!ec) break;
      if (reused && !answered && attempt == 0 && ec != beast::error::timeout) continue;
      return Status::Unavailable(fmt::format(
          "{}: {}: {}", shown_, path,
          ec == beast::error::timeout ? fmt::format("no answer within {} ms", timeouts_.request_ms)
                                      : ec.message()));
    }
  }

  json answer = json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    const std::string& text = response.body();
    return Status::IoError(fmt::format("{}: {}: HTTP {} with an answer that is not JSON: '{}'",
                                       shown_, path, response.result_int(), text.substr(0, 200)));
  }
  if (response.result() == http::status::ok && !answer.contains("error")) return answer;

  // A unary call's error is {"error": text, "message": text, "code": n}; a stream's
  // (keep-alive) is {"error": {"message": text, "grpc_code": n, ...}} with HTTP 200.
  std::string message = fmt::format("HTTP {}", response.result_int());
  int64_t code = 0;
  const auto error = answer.find("error");
  const json& detail = error != answer.end() && error->is_object() ? *error : answer;
  if (const auto it = detail.find("message"); it != detail.end() && it->is_string()) {
    message = it->get<std::string>();
  }
  if (!read_int(detail, detail.contains("grpc_code") ? "grpc_code" : "code", &code)) code = 0;
  const std::string text = fmt::format("{}: {}: {}", shown_, path, message);
  switch (code) {
    case kGrpcNotFound:
      return Status::NotFound(text);
    case kGrpcInvalidArgument:
      return Status::InvalidArgument(text);
    case kGrpcUnavailable:
      return Status::Unavailable(text);
    default:
      // Timeouts, a lost leader, too many requests: worth another try later.
      return response.result_int() >= 500 ? Status::Unavailable(text) : Status::IoError(text);
  }
}

Result<EtcdLeaseGrant> EtcdClient::lease_grant(int64_t ttl_s) {
  Result<json> answer = call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}});
  if (!answer.ok()) return answer.status();
  EtcdLeaseGrant grant;
  if (!read_int(*answer, "ID", &grant.id) || !read_int(*answer, "TTL", &grant.ttl_s) ||
      grant.id == 0 || grant.ttl_s <= 0) {
    return Status::IoError(fmt::format("{}: unexpected lease grant answer: {}", shown_,
                                       answer->dump().substr(0, 200)));
  }
  return grant;
}

Result<int64_t> EtcdClient::lease_keep_alive(int64_t id) {
  // A stream in gRPC: the gateway sends the one request and wraps the one answer in
  // {"result": ...}; a lease that is gone is answered with TTL 0 (left out).
  Result<json> answer = call("/v3/lease/keepalive", json{{"ID", std::to_string(id)}});
  if (!answer.ok()) return answer.status();
  const auto result = answer->find("result");
  int64_t ttl = 0;
  if (result == answer->end() || !result->is_object() || !read_int(*result, "TTL", &ttl)) {
    return Status::IoError(fmt::format("{}: unexpected lease keep-alive answer: {}", shown_,
                                       answer->dump().substr(0, 200)));
  }
  return ttl < 0 ? 0 : ttl;
}

Status EtcdClient::lease_revoke(int64_t id) {
  Result<json> answer = call("/v3/lease/revoke", json{{"ID", std::to_string(id)}});
  return answer.status();
}

Result<int64_t> EtcdClient::lease_time_to_live(int64_t id) {
  Result<json> answer = call("/v3/lease/timetolive", json{{"ID", std::to_string(id)}});
  if (!answer.ok()) return answer.status();
  int64_t ttl = 0;
  if (!read_int(*answer, "TTL", &ttl)) {
    return Status::IoError(fmt::format("{}: unexpected lease time-to-live answer: {}", shown_,
                                       answer->dump().substr(0, 200)));
  }
  return ttl;
}

Result<std::vector<EtcdKeyValue>> EtcdClient::range(std::string_view key,
                                                    std::string_view range_end, bool keys_only) {
  json body{{"key", base64_encode(key)}};
  if (!range_end.empty()) body["range_end"] = base64_encode(range_end);
  if (keys_only) body["keys_only"] = true;
  Result<json> answer = call("/v3/kv/range", body);
  if (!answer.ok()) return answer.status();
  std::vector<EtcdKeyValue> kvs;
  if (!read_kvs(*answer, &kvs)) {
    return Status::IoError(
        fmt::format("{}: unexpected range answer: {}", shown_, answer->dump().substr(0, 200)));
  }
  return kvs;
}

Result<int64_t> EtcdClient::delete_key(std::string_view key) {
  Result<json> answer = call("/v3/kv/deleterange", json{{"key", base64_encode(key)}});
  if (!answer.ok()) return answer.status();
  int64_t deleted = 0;
  if (!read_int(*answer, "deleted", &deleted)) {
    return Status::IoError(
        fmt::format("{}: unexpected delete answer: {}", shown_, answer->dump().substr(0, 200)));
  }
  return deleted;
}

Result<EtcdTxnResult> EtcdClient::txn(const std::vector<json>& compares,
                                      const std::vector<json>& success,
                                      const std::vector<json>& failure) {
  json body{{"compare", compares}, {"success", success}, {"failure", failure}};
  Result<json> answer = call("/v3/kv/txn", body);
  if (!answer.ok()) return answer.status();
  const auto unexpected = [&] {
    return Status::IoError(
        fmt::format("{}: unexpected txn answer: {}", shown_, answer->dump().substr(0, 200)));
  };
  EtcdTxnResult result;
  // proto3 leaves false out.
  if (const auto it = answer->find("succeeded"); it != answer->end()) {
    if (!it->is_boolean()) return unexpected();
    result.succeeded = it->get<bool>();
  }
  const auto responses = answer->find("responses");
  if (responses == answer->end() || responses->is_null()) return result;
  if (!responses->is_array()) return unexpected();
  for (const json& item : *responses) {
    if (!item.is_object()) return unexpected();
    std::vector<EtcdKeyValue> kvs;
    if (const auto range = item.find("response_range"); range != item.end()) {
      if (!range->is_object() || !read_kvs(*range, &kvs)) return unexpected();
    }
    result.ranges.push_back(std::move(kvs));
  }
  return result;
}

}  // namespace idforge::coord
