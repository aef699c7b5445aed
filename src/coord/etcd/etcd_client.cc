#include "coord/etcd/etcd_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <exception>
#include <utility>

#include "coord/etcd/etcd_connection.h"

namespace idforge::coord {
namespace {

using nlohmann::json;

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
json value_is(std::string_view key, std::string_view value) {
  return json{{"target", "VALUE"},
              {"key", base64_encode(key)},
              {"result", "EQUAL"},
              {"value", base64_encode(value)}};
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

namespace {

// An answer's cluster id (header.cluster_id; a stream's is in result.header); empty
// when it carries none (an error answer).
std::string cluster_id_of(const json& answer) {
  const json* object = &answer;
  if (const auto result = answer.find("result"); result != answer.end() && result->is_object()) {
    object = &*result;
  }
  const auto header = object->find("header");
  if (header == object->end() || !header->is_object()) return "";
  const auto id = header->find("cluster_id");
  if (id == header->end() || id->is_null()) return "";
  return id->is_string() ? id->get<std::string>() : id->dump();
}

// The errors etcd gives when this member cannot serve a call now but another may: gRPC
// Unavailable (code 14), which etcd uses for "no leader", "leader changed" and "request
// timed out", and those words under any other code.
bool means_try_another(int64_t code, std::string_view message) {
  if (code == kGrpcUnavailable) return true;
  for (const std::string_view words :
       {"etcdserver: no leader", "leader changed", "request timed out"}) {
    if (message.find(words) != std::string_view::npos) return true;
  }
  return false;
}

constexpr size_t kMaxIdleConnections = 4;  // per member: the registry makes one call at a time

}  // namespace

// How one attempt on one member went.
struct EtcdClient::Attempt {
  Result<json> result = Status::Unavailable("not tried");
  bool move_on = false;  // this member cannot serve the call now: another may
  bool unsent = false;   // and it never got the request
};

Result<std::unique_ptr<EtcdClient>> EtcdClient::open(std::string_view target, Timeouts timeouts) {
  IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdMember> members, parse_etcd_target(target));
  if (timeouts.connect_ms < 1 || timeouts.request_ms < 1 || timeouts.call_ms < 0 ||
      timeouts.backoff_ms < 0) {
    return Status::InvalidArgument("etcd timeouts must be positive");
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(members), timeouts));
}

EtcdClient::EtcdClient(std::vector<EtcdMember> members, Timeouts timeouts)
    : members_(std::move(members)),
      shown_(etcd_target_shown(members_)),
      timeouts_(timeouts),
      failed_until_(members_.size()),
      idle_(members_.size()) {}

EtcdClient::~EtcdClient() = default;

std::vector<size_t> EtcdClient::order_of_members() {
  const auto now = Clock::now();
  std::vector<size_t> order;
  std::vector<size_t> waiting;
  MutexLock lock(mu_);
  for (size_t i = 0; i < members_.size(); ++i) {
    const size_t m = (in_use_ + i) % members_.size();
    (failed_until_[m] > now ? waiting : order).push_back(m);
  }
  order.insert(order.end(), waiting.begin(), waiting.end());
  return order;
}

void EtcdClient::note(size_t m, bool ok) {
  MutexLock lock(mu_);
  if (ok) {
    in_use_ = m;
    failed_until_[m] = {};
  } else {
    failed_until_[m] = Clock::now() + std::chrono::milliseconds(timeouts_.backoff_ms);
  }
}

std::unique_ptr<EtcdConnection> EtcdClient::take_connection(size_t m) {
  {
    MutexLock lock(mu_);
    if (!idle_[m].empty()) {
      std::unique_ptr<EtcdConnection> connection = std::move(idle_[m].back());
      idle_[m].pop_back();
      return connection;
    }
  }
  return std::make_unique<EtcdConnection>();
}

void EtcdClient::give_back(size_t m, std::unique_ptr<EtcdConnection> connection) {
  if (!connection->is_open()) return;
  MutexLock lock(mu_);
  if (idle_[m].size() < kMaxIdleConnections) idle_[m].push_back(std::move(connection));
}

Status EtcdClient::check_cluster(size_t m, const json& answer) {
  const std::string id = cluster_id_of(answer);
  if (id.empty()) return Status::Ok();
  MutexLock lock(mu_);
  if (cluster_id_.empty()) cluster_id_ = id;
  if (id == cluster_id_) return Status::Ok();
  return Status::Unavailable(
      fmt::format("{} answers for etcd cluster {}, not {} as the member that answered first: "
                  "is it listed by mistake?",
                  members_[m].shown, id, cluster_id_));
}

EtcdClient::Attempt EtcdClient::attempt(size_t m, std::string_view path, const std::string& payload,
                                        Clock::time_point deadline, int request_ms) {
  using std::chrono::milliseconds;
  const EtcdMember& member = members_[m];
  const auto left_ms = [&](int most) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 1, most));
  };
  Attempt out;
  const EtcdConnection::Request request{
      .host = std::string_view(member.shown).substr(7),  // without "etcd://"
      .path = path,
      .body = payload};
  EtcdConnection::Answer response;
  std::unique_ptr<EtcdConnection> connection = take_connection(m);
  // A kept-alive connection may have been closed by etcd (a restart) since its last
  // use; the request then fails before etcd read it, so it is sent once more on a new
  // connection. A timeout is not retried here: etcd may have acted on it.
  for (int tries = 0;; ++tries) {
    const bool reused = connection->is_open();
    if (!reused) {
      const Status connected = connection->connect(member.host, member.port,
                                                   milliseconds(left_ms(timeouts_.connect_ms)));
      if (!connected.ok()) {
        out.move_on = true;
        out.unsent = true;
        out.result = Status::Unavailable(
            fmt::format("{}: cannot connect: {}", member.shown, connected.message()));
        return out;
      }
    }
    bool answered = false;
    const Status exchanged =
        connection->exchange(request, &response, milliseconds(left_ms(request_ms)), &answered);
    if (exchanged.ok()) break;
    const bool timed_out = exchanged.code() == StatusCode::kDeadlineExceeded;
    if (reused && !answered && tries == 0 && !timed_out) continue;
    out.move_on = true;
    out.result =
        Status::Unavailable(fmt::format("{}: {}: {}", member.shown, path, exchanged.message()));
    return out;
  }
  give_back(m, std::move(connection));

  json answer = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    out.result = Status::IoError(
        fmt::format("{}: {}: HTTP {} with an answer that is not JSON: '{}'", member.shown, path,
                    response.status, response.body.substr(0, 200)));
    return out;
  }
  if (response.status == 200 && !answer.contains("error")) {
    out.result = std::move(answer);
    return out;
  }

  // A unary call's error is {"error": text, "message": text, "code": n}; a stream's
  // (keep-alive) is {"error": {"message": text, "grpc_code": n, ...}} with HTTP 200.
  std::string message = fmt::format("HTTP {}", response.status);
  int64_t code = 0;
  const auto error = answer.find("error");
  const json& detail = error != answer.end() && error->is_object() ? *error : answer;
  if (const auto it = detail.find("message"); it != detail.end() && it->is_string()) {
    message = it->get<std::string>();
  }
  if (!read_int(detail, detail.contains("grpc_code") ? "grpc_code" : "code", &code)) code = 0;
  const std::string text = fmt::format("{}: {}: {}", member.shown, path, message);
  out.move_on = means_try_another(code, message);
  switch (code) {
    case kGrpcNotFound:
      out.result = Status::NotFound(text);
      break;
    case kGrpcInvalidArgument:
      out.result = Status::InvalidArgument(text);
      break;
    default:
      // Timeouts, a lost leader, too many requests: worth another try later.
      out.result = code == kGrpcUnavailable || response.status >= 500 ? Status::Unavailable(text)
                                                                      : Status::IoError(text);
  }
  return out;
}

Result<json> EtcdClient::call(std::string_view path, const json& body, EtcdRepeat repeat) {
  std::string payload;
  try {
    payload = body.dump();
  } catch (const std::exception& e) {
    return Status::Internal(
        fmt::format("{}: cannot build the request to {}: {}", shown_, path, e.what()));
  }
  const int64_t budget_ms =
      timeouts_.call_ms > 0 ? timeouts_.call_ms
                            : static_cast<int64_t>(timeouts_.connect_ms + timeouts_.request_ms) *
                                  static_cast<int64_t>(members_.size());
  const auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
  std::string errors;
  const std::vector<size_t> order = order_of_members();
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t m = order[k];
    if (k > 0 && Clock::now() >= deadline) {
      errors += fmt::format("; {} and any after it not tried: the call's {} ms ran out",
                            members_[m].shown, budget_ms);
      break;
    }
    Attempt a = attempt(m, path, payload, deadline, timeouts_.request_ms);
    if (a.result.ok()) {
      if (Status foreign = check_cluster(m, *a.result); !foreign.ok()) {
        a.result = std::move(foreign);
        a.move_on = true;
      }
    }
    note(m, !a.move_on);
    if (!a.move_on) return std::move(a.result);
    if (members_.size() == 1) return a.result.status();
    errors += (errors.empty() ? "" : "; ") + a.result.status().message();
    if (!a.unsent && repeat == EtcdRepeat::kIfUnsent) {
      return Status::Unavailable(
          fmt::format("{}: {}: {}; not sent to another member, as etcd may have applied it", shown_,
                      path, errors));
    }
  }
  return Status::Unavailable(
      fmt::format("{}: {}: no member could serve it: {}", shown_, path, errors));
}

Status EtcdClient::check_members() {
  constexpr std::string_view kPath = "/v3/maintenance/status";
  std::string errors;
  std::vector<std::pair<size_t, std::string>> answered;  // member, its cluster id
  // Asked once, at open, when no lease is at stake yet: a member gets the whole call's
  // time to answer rather than one request's, so a busy etcd (a loaded machine, a GC
  // pause) does not fail a start that a second later would have worked.
  const int answer_ms = std::max(timeouts_.request_ms, timeouts_.call_ms);
  for (size_t m = 0; m < members_.size(); ++m) {
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(timeouts_.connect_ms + answer_ms);
    Attempt a = attempt(m, kPath, "{}", deadline, answer_ms);
    if (!a.result.ok()) {
      note(m, false);
      errors += (errors.empty() ? "" : "; ") + a.result.status().message();
      continue;
    }
    answered.emplace_back(m, cluster_id_of(*a.result));
  }
  if (answered.empty()) {
    return members_.size() == 1
               ? Status::Unavailable(errors)
               : Status::Unavailable(fmt::format("{}: no member answered: {}", shown_, errors));
  }
  for (const auto& [m, id] : answered) {
    const auto& [first, first_id] = answered.front();
    if (id != first_id) {
      return Status::InvalidArgument(fmt::format(
          "{}: {} belongs to etcd cluster {} but {} to cluster {}: name the members of one "
          "cluster only ({})",
          shown_, members_[first].shown, first_id, members_[m].shown, id, kEtcdTargetForm));
    }
  }
  for (const auto& [m, id] : answered) {
    IDFORGE_RETURN_IF_ERROR(check_cluster(m, json{{"header", {{"cluster_id", id}}}}));
  }
  note(answered.front().first, true);
  return Status::Ok();
}

Result<EtcdLeaseGrant> EtcdClient::lease_grant(int64_t ttl_s) {
  IDFORGE_ASSIGN_OR_RETURN(
      json answer,
      call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}, EtcdRepeat::kSafe));
  EtcdLeaseGrant grant;
  if (!read_int(answer, "ID", &grant.id) || !read_int(answer, "TTL", &grant.ttl_s) ||
      grant.id == 0 || grant.ttl_s <= 0) {
    return Status::IoError(
        fmt::format("{}: unexpected lease grant answer: {}", shown_, answer.dump().substr(0, 200)));
  }
  return grant;
}

Result<int64_t> EtcdClient::lease_keep_alive(int64_t id) {
  // A stream in gRPC: the gateway sends the one request and wraps the one answer in
  // {"result": ...}; a lease that is gone is answered with TTL 0 (left out).
  IDFORGE_ASSIGN_OR_RETURN(json answer, call("/v3/lease/keepalive",
                                             json{{"ID", std::to_string(id)}}, EtcdRepeat::kSafe));
  const auto result = answer.find("result");
  int64_t ttl = 0;
  if (result == answer.end() || !result->is_object() || !read_int(*result, "TTL", &ttl)) {
    return Status::IoError(fmt::format("{}: unexpected lease keep-alive answer: {}", shown_,
                                       answer.dump().substr(0, 200)));
  }
  return ttl < 0 ? 0 : ttl;
}

Status EtcdClient::lease_revoke(int64_t id) {
  Result<json> answer =
      call("/v3/lease/revoke", json{{"ID", std::to_string(id)}}, EtcdRepeat::kSafe);
  return answer.status();
}

Result<int64_t> EtcdClient::lease_time_to_live(int64_t id) {
  IDFORGE_ASSIGN_OR_RETURN(json answer, call("/v3/lease/timetolive",
                                             json{{"ID", std::to_string(id)}}, EtcdRepeat::kSafe));
  int64_t ttl = 0;
  if (!read_int(answer, "TTL", &ttl)) {
    return Status::IoError(fmt::format("{}: unexpected lease time-to-live answer: {}", shown_,
                                       answer.dump().substr(0, 200)));
  }
  return ttl;
}

Result<std::vector<EtcdKeyValue>> EtcdClient::range(std::string_view key,
                                                    std::string_view range_end, bool keys_only) {
  json body{{"key", base64_encode(key)}};
  if (!range_end.empty()) body["range_end"] = base64_encode(range_end);
  if (keys_only) body["keys_only"] = true;
  IDFORGE_ASSIGN_OR_RETURN(json answer, call("/v3/kv/range", body, EtcdRepeat::kSafe));
  std::vector<EtcdKeyValue> kvs;
  if (!read_kvs(answer, &kvs)) {
    return Status::IoError(
        fmt::format("{}: unexpected range answer: {}", shown_, answer.dump().substr(0, 200)));
  }
  return kvs;
}

Result<int64_t> EtcdClient::delete_key(std::string_view key) {
  IDFORGE_ASSIGN_OR_RETURN(json answer,
                           call("/v3/kv/deleterange", json{{"key", base64_encode(key)}}));
  int64_t deleted = 0;
  if (!read_int(answer, "deleted", &deleted)) {
    return Status::IoError(
        fmt::format("{}: unexpected delete answer: {}", shown_, answer.dump().substr(0, 200)));
  }
  return deleted;
}

Result<EtcdTxnResult> EtcdClient::txn(const std::vector<json>& compares,
                                      const std::vector<json>& success,
                                      const std::vector<json>& failure, EtcdRepeat repeat) {
  json body{{"compare", compares}, {"success", success}, {"failure", failure}};
  IDFORGE_ASSIGN_OR_RETURN(json answer, call("/v3/kv/txn", body, repeat));
  const auto unexpected = [&] {
    return Status::IoError(
        fmt::format("{}: unexpected txn answer: {}", shown_, answer.dump().substr(0, 200)));
  };
  EtcdTxnResult result;
  // proto3 leaves false out.
  if (const auto it = answer.find("succeeded"); it != answer.end()) {
    if (!it->is_boolean()) return unexpected();
    result.succeeded = it->get<bool>();
  }
  const auto responses = answer.find("responses");
  if (responses == answer.end() || responses->is_null()) return result;
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
