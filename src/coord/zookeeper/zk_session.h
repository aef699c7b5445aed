// ZkSession: one ZooKeeper session through the multi-threaded C client, with blocking
// calls that answer a small code the registry branches on plus a ready-made Status.
//
// The C client keeps the session alive from its own I/O thread (pings every third of the
// timeout), reconnects after a dropped connection (to another member of an ensemble
// when the host list names several: the session and its ephemeral nodes go with it),
// and tells us through its watcher; the ZooKeeper header stays inside zk_session.cc. A
// session that expired cannot come back: the owner opens a new one. All methods are
// thread-safe; calls block until the server answers or the client gives up on the
// connection (the C client's own rule: after 2/3 of the session timeout without a word
// from a server that stopped answering; at once when the connection is closed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge::coord {

// What the registry reads from a node's Stat.
struct ZkNodeStat {
  int64_t czxid = 0;            // the transaction that created this incarnation of the node
  int32_t version = 0;          // data version, for compare-and-set
  int64_t ephemeral_owner = 0;  // session id of an ephemeral node's owner, 0 if persistent
};

enum class ZkCode {
  kOk,
  kNoNode,
  kNodeExists,
  kBadVersion,
  kSessionExpired,  // the session is gone for good, with its ephemeral nodes
  kConnectionLoss,  // not connected right now; the session may still live
  kError,           // anything else: see the Status
};

struct ZkReply {
  ZkCode code = ZkCode::kOk;
  Status status;  // why, when code != kOk: "<url>: <doing> <path>: <zerror> (rc)"
  bool ok() const { return code == ZkCode::kOk; }
};

enum class ZkState { kConnected, kConnecting, kExpired, kAuthFailed };

class ZkSession {
 public:
  // Starts a session with `hosts` ("h1:p1,h2:p2") asking for `timeout_ms`, and waits up
  // to `connect_timeout_ms` for it. `shown` (the URL, no secrets) prefixes every error.
  static Result<std::shared_ptr<ZkSession>> open(const std::string& hosts, int timeout_ms,
                                                 int connect_timeout_ms, std::string shown);
  // Closes the session: the server deletes its ephemeral nodes at once.
  ~ZkSession();
  ZkSession(const ZkSession&) = delete;
  ZkSession& operator=(const ZkSession&) = delete;

  int64_t id() const { return id_; }
  // The session timeout granted by the member we are connected to (each clamps the
  // request to its own limits, so it can change when the session moves).
  int timeout_ms() const;
  const std::string& shown() const { return shown_; }
  ZkState state() const;
  static std::string_view state_name(ZkState state);
  // Waits up to `timeout_ms` for a dropped connection to come back; Unavailable if not.
  Status wait_connected(int timeout_ms) const;

  ZkReply create(const std::string& path, std::string_view data, bool ephemeral) const;
  // `data` receives the node's data; larger than kMaxData is an error, never truncated.
  ZkReply get(const std::string& path, std::string* data, ZkNodeStat* stat) const;
  // Compare-and-set: fails with kBadVersion unless the node's version is `version`.
  ZkReply set(const std::string& path, std::string_view data, int32_t version) const;
  ZkReply exists(const std::string& path, ZkNodeStat* stat) const;
  // version -1: whatever the version.
  ZkReply remove(const std::string& path, int32_t version) const;
  ZkReply children(const std::string& path, std::vector<std::string>* names) const;
  // Creates `path` and its missing ancestors as empty persistent nodes.
  Status ensure_path(const std::string& path) const;

  static constexpr int kMaxData = 4096;

 private:
  struct Shared;  // the watcher's state; outlives the handle's threads
  ZkSession(std::string shown, std::unique_ptr<Shared> shared);
  ZkReply reply(int rc, std::string_view doing, const std::string& path) const;

  std::string shown_;
  std::unique_ptr<Shared> shared_;
  int64_t id_ = 0;
};

// "0x1000a2b3c4d0000", as zkCli prints session ids; and back (InvalidArgument if bad).
std::string session_hex(int64_t id);
Result<int64_t> parse_session_hex(std::string_view text);

}  // namespace idforge::coord
