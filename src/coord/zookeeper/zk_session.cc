#include "coord/zookeeper/zk_session.h"

// The blocking calls (zoo_create, zoo_get, ...) are declared only for the multi-threaded
// client, which is the library we link.
#ifndef THREADED
#define THREADED 1
#endif
#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "core/leak_checks.h"
#include "core/thread_annotations.h"

namespace idforge::coord {
namespace {

// The client logs through a callback without a context pointer, so its latest error is
// kept once per process, with when it came: it names the cause ("Connection refused",
// "getaddrinfo: Name or service not known") that a connect timeout alone does not.
// Nothing is printed; the caller reports the Status.
struct ClientError {
  Mutex mu;
  std::chrono::steady_clock::time_point at IDFORGE_GUARDED_BY(mu);
  std::string text IDFORGE_GUARDED_BY(mu);
};
ClientError& client_error() {
  static ClientError e;
  return e;
}

// A line is "<time>:<pid>(<thread>):ZOO_ERROR@<function>@<line>: <text>".
void on_client_log(const char* message) {
  const std::string_view line = message == nullptr ? "" : message;
  const size_t tag = line.find("ZOO_ERROR@");
  const size_t text = tag == std::string_view::npos ? tag : line.find(": ", tag);
  if (text == std::string_view::npos) return;
  std::string_view rest = line.substr(text + 2);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.remove_suffix(1);
  ClientError& e = client_error();
  MutexLock lock(e.mu);
  e.at = std::chrono::steady_clock::now();
  e.text = rest;
}

// The latest client error since `since`, as "; <text>", or "".
std::string client_error_since(std::chrono::steady_clock::time_point since) {
  ClientError& e = client_error();
  MutexLock lock(e.mu);
  return e.at >= since && !e.text.empty() ? "; " + e.text : "";
}

// Errors only: warnings and INFO would record routine reconnects. The level is global to
// the library, which nothing else in the process uses.
void quiet_client_once() {
  static std::once_flag once;
  std::call_once(once, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
}

ZkState state_of(int s) {
  if (s == ZOO_CONNECTED_STATE) return ZkState::kConnected;
  if (s == ZOO_EXPIRED_SESSION_STATE) return ZkState::kExpired;
  if (s == ZOO_AUTH_FAILED_STATE) return ZkState::kAuthFailed;
  // Connecting, associating, not yet connected, and read-only (which we never ask for,
  // and which would refuse our writes anyway).
  return ZkState::kConnecting;
}

ZkNodeStat to_node_stat(const struct Stat& s) {
  return ZkNodeStat{s.czxid, s.version, s.ephemeralOwner};
}

}  // namespace

// Lives as long as the ZkSession; zookeeper_close() joins the client's threads before
// it is destroyed, so the watcher never sees a dangling context.
struct ZkSession::Shared {
  zhandle_t* zh = nullptr;
  Mutex mu;
  std::condition_variable changed;
  uint64_t events IDFORGE_GUARDED_BY(mu) = 0;  // session events seen, so a waiter cannot miss one

  static void on_event(zhandle_t*, int type, int, const char*, void* ctx) {
    if (type != ZOO_SESSION_EVENT) return;  // we set no node watches
    auto* shared = static_cast<Shared*>(ctx);
    {
      MutexLock lock(shared->mu);
      ++shared->events;
    }
    shared->changed.notify_all();
  }
};

ZkSession::ZkSession(std::string shown, std::unique_ptr<Shared> shared)
    : shown_(std::move(shown)), shared_(std::move(shared)) {}

ZkSession::~ZkSession() {
  if (shared_ && shared_->zh != nullptr) zookeeper_close(shared_->zh);
}

Result<std::shared_ptr<ZkSession>> ZkSession::open(const std::string& hosts, int timeout_ms,
                                                   int connect_timeout_ms, std::string shown) {
  quiet_client_once();
  auto shared = std::make_unique<Shared>();
  Shared* ctx = shared.get();
  std::shared_ptr<ZkSession> session(new ZkSession(std::move(shown), std::move(shared)));
  const auto started = std::chrono::steady_clock::now();
  errno = 0;
  ctx->zh = zookeeper_init2(hosts.c_str(), &Shared::on_event, timeout_ms, nullptr, ctx, 0,
                            &on_client_log);
  if (ctx->zh == nullptr) {
    // Fails at once only for a host list it cannot parse or resolve.
    const int err = errno;
    std::string why = client_error_since(started);
    if (why.empty()) why = "; " + std::string(err != 0 ? std::strerror(err) : "bad host list");
    return Status::Unavailable(
        fmt::format("{}: cannot start a ZooKeeper client for {}{}", session->shown_, hosts, why));
  }
  IDFORGE_RETURN_IF_ERROR(session->wait_connected(connect_timeout_ms));
  const clientid_t* client = zoo_client_id(ctx->zh);
  session->id_ = client != nullptr ? client->client_id : 0;
  return session;
}

ZkState ZkSession::state() const { return state_of(zoo_state(shared_->zh)); }

int ZkSession::timeout_ms() const { return zoo_recv_timeout(shared_->zh); }

std::string_view ZkSession::state_name(ZkState state) {
  switch (state) {
    case ZkState::kConnected:
      return "connected";
    case ZkState::kConnecting:
      return "connecting";
    case ZkState::kExpired:
      return "session expired";
    case ZkState::kAuthFailed:
      return "authentication failed";
  }
  return "unknown";
}

Status ZkSession::wait_connected(int timeout_ms) const {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(shared_->mu);
  while (true) {
    const uint64_t seen = shared_->events;
    const ZkState s = state();
    if (s == ZkState::kConnected) return Status::Ok();
    if (s == ZkState::kExpired || s == ZkState::kAuthFailed) {
      return Status::Unavailable(fmt::format("{}: {}", shown_, state_name(s)));
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    // Woken by the watcher; the 100 ms cap covers a state change the client makes
    // without an event.
    const auto until =
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    while (shared_->events == seen && std::chrono::steady_clock::now() < until) {
      lock.wait_until(shared_->changed, until);
    }
  }
  return Status::Unavailable(fmt::format("{}: not connected to ZooKeeper after {} ms{}", shown_,
                                         timeout_ms, client_error_since(started)));
}

ZkReply ZkSession::reply(int rc, std::string_view doing, const std::string& path) const {
  if (rc == ZOK) return {};
  std::string message = fmt::format("{}: {} {}: {}", shown_, doing, path, zerror(rc));
  switch (rc) {
    case ZNONODE:
      return {ZkCode::kNoNode, Status::NotFound(std::move(message))};
    case ZNODEEXISTS:
      return {ZkCode::kNodeExists, Status::AlreadyExists(std::move(message))};
    case ZBADVERSION:
      return {ZkCode::kBadVersion, Status::Unavailable(std::move(message))};
    case ZSESSIONEXPIRED:
      return {ZkCode::kSessionExpired, Status::Unavailable(std::move(message))};
    case ZINVALIDSTATE:
      // The client refuses calls on a handle whose session expired.
      if (state() == ZkState::kExpired) {
        return {ZkCode::kSessionExpired, Status::Unavailable(std::move(message))};
      }
      return {ZkCode::kConnectionLoss, Status::Unavailable(std::move(message))};
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONMOVED:
    case ZCLOSING:
    case ZNOTREADONLY:
    case ZTHROTTLEDOP:
      return {ZkCode::kConnectionLoss, Status::Unavailable(std::move(message))};
    case ZNOAUTH:
    case ZAUTHFAILED:
    case ZINVALIDACL:
    case ZSESSIONCLOSEDREQUIRESASLAUTH:
      return {ZkCode::kError,
              Status::IoError(message + " (the server's ACLs or authentication refuse us)")};
    case ZBADARGUMENTS:
      return {ZkCode::kError, Status::InvalidArgument(std::move(message))};
    default:
      return {ZkCode::kError, Status::IoError(std::move(message))};
  }
}

ZkReply ZkSession::create(const std::string& path, std::string_view data, bool ephemeral) const {
  const int rc =
      zoo_create(shared_->zh, path.c_str(), data.data(), static_cast<int>(data.size()),
                 &ZOO_OPEN_ACL_UNSAFE, ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT, nullptr, 0);
  return reply(rc, "create", path);
}

ZkReply ZkSession::get(const std::string& path, std::string* data, ZkNodeStat* stat) const {
  std::string buffer(kMaxData, '\0');
  int len = kMaxData;
  struct Stat s {};
  const int rc = zoo_get(shared_->zh, path.c_str(), 0, buffer.data(), &len, &s);
  if (rc != ZOK) return reply(rc, "get", path);
  if (s.dataLength > kMaxData) {
    return {ZkCode::kError,
            Status::IoError(fmt::format("{}: {} holds {} bytes, more than the {} expected here",
                                        shown_, path, s.dataLength, kMaxData))};
  }
  buffer.resize(len < 0 ? 0 : static_cast<size_t>(len));  // -1: the node has no data
  if (data != nullptr) *data = std::move(buffer);
  if (stat != nullptr) *stat = to_node_stat(s);
  return {};
}

ZkReply ZkSession::set(const std::string& path, std::string_view data, int32_t version) const {
  const int rc =
      zoo_set(shared_->zh, path.c_str(), data.data(), static_cast<int>(data.size()), version);
  return reply(rc, "set", path);
}

ZkReply ZkSession::exists(const std::string& path, ZkNodeStat* stat) const {
  struct Stat s {};
  const int rc = zoo_exists(shared_->zh, path.c_str(), 0, &s);
  if (rc == ZOK && stat != nullptr) *stat = to_node_stat(s);
  return reply(rc, "stat", path);
}

ZkReply ZkSession::remove(const std::string& path, int32_t version) const {
  return reply(zoo_delete(shared_->zh, path.c_str(), version), "delete", path);
}

ZkReply ZkSession::children(const std::string& path, std::vector<std::string>* names) const {
  struct String_vector v {};
  const int rc = zoo_get_children(shared_->zh, path.c_str(), 0, &v);
  if (rc != ZOK) return reply(rc, "list", path);
  names->clear();
  for (int32_t i = 0; i < v.count; ++i) names->emplace_back(v.data[i]);
  deallocate_String_vector(&v);
  return {};
}

Status ZkSession::ensure_path(const std::string& path) const {
  if (exists(path, nullptr).ok()) return Status::Ok();
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    const ZkReply r = create(prefix, "", /*ephemeral=*/false);
    if (!r.ok() && r.code != ZkCode::kNodeExists) return r.status;
    if (slash == std::string::npos) return Status::Ok();
  }
}

std::string session_hex(int64_t id) { return fmt::format("0x{:x}", static_cast<uint64_t>(id)); }

Result<int64_t> parse_session_hex(std::string_view text) {
  uint64_t value = 0;
  if (text.starts_with("0x")) {
    const std::string_view digits = text.substr(2);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty()) {
      return static_cast<int64_t>(value);
    }
  }
  return Status::InvalidArgument(
      fmt::format("lease token '{}' is not a ZooKeeper session id (0x...)", text));
}

}  // namespace idforge::coord

#if IDFORGE_LEAK_CHECKS
// LeakSanitizer reads its suppressions from here in every process that links this file.
// The multi-threaded client can close a handle with a session event still in its
// completion queue: 352 bytes in 5 blocks in one CI run (a completion entry with the
// watcher-event xid, its serialized event, the watcher list), allocated on the client's
// own threads. Only its completion thread frees that queue, and it has stopped; nothing
// of ours points into it. The rule names the library, so it also hides a block of the
// client's that our code forgets to give back (children()'s String_vector), and a handle
// we never close: ZookeeperRegistryTest.DestroyingTheRegistryFreesItsSlotsAtOnce catches
// that one (the session's nodes would outlive it). ZookeeperClientLeaksTest checks the rule.
extern "C" const char* __lsan_default_suppressions() { return "leak:libzookeeper_mt.so\n"; }
#endif
