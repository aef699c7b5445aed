// EtcdClient: a small synchronous client for etcd v3's JSON gateway (the /v3/... paths
// of etcd 3.4 and later), over keep-alive HTTP/1.1 connections (etcd_connection.h), to any
// member of one etcd cluster.
//
// No C++ etcd client is packaged in Debian, and gRPC is a large dependency for the
// handful of calls a worker registry makes; the gateway maps each of them to one POST
// with a JSON body, where keys and values are base64 and 64-bit numbers are strings.
//
// Members: the URL names every member (etcd://A:1,B:2,C:3). Each call goes to the
// member in use; when it cannot be reached, does not answer in time, or answers that it
// cannot serve the call now (no leader, leader changed, request timed out: gRPC code
// Unavailable), the call moves on to the next member, until each was tried once or
// Timeouts::call_ms ran out; then Unavailable naming each member's error. A call that
// may have reached etcd is sent again only when repeating it is harmless (EtcdRepeat).
// Any member serves any call (the gateway forwards to the leader, and reads are
// linearizable), so the member in use stays in use while it answers; one that failed
// is tried first again only after Timeouts::backoff_ms.
//
// Every attempt is bounded: connecting by Timeouts::connect_ms, sending the request and
// reading the whole answer by Timeouts::request_ms. A call never throws: connection and JSON
// errors become a Status here (Unavailable when etcd cannot be reached or does not
// answer in time). Thread-safe: concurrent calls use connections of their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "coord/etcd/etcd_url.h"
#include "core/thread_annotations.h"
#include "idforge/status.h"

namespace idforge::coord {

class EtcdConnection;  // etcd_connection.h

// Standard base64 with padding, as the gateway uses for bytes fields.
std::string base64_encode(std::string_view bytes);
// False on anything but canonical padded base64.
bool base64_decode(std::string_view text, std::string* bytes);

// The end of the range of every key that starts with `prefix` (etcd's range_end).
std::string prefix_range_end(std::string_view prefix);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;  // 0: no lease
};

struct EtcdLeaseGrant {
  int64_t id = 0;
  int64_t ttl_s = 0;  // as granted: etcd raises a TTL below its minimum
};

// Builders for txn(): one compare or one request, in the gateway's JSON form.
namespace etcd_txn {
// `key`'s create_revision == `revision` (0: the key does not exist).
nlohmann::json create_revision_is(std::string_view key, int64_t revision);
// `key`'s mod_revision == `revision` (0: the key does not exist).
nlohmann::json mod_revision_is(std::string_view key, int64_t revision);
// `key` exists and holds `value`.
nlohmann::json value_is(std::string_view key, std::string_view value);
// `key` is attached to `lease` (0 when the key does not exist).
nlohmann::json lease_is(std::string_view key, int64_t lease);
nlohmann::json put(std::string_view key, std::string_view value, int64_t lease = 0);
nlohmann::json get(std::string_view key);
}  // namespace etcd_txn

// Whether a call may be sent to another member after an attempt whose fate is unknown:
// no answer in time, a connection dropped after the request went out, or an answer
// such as "request timed out" that leaves open whether etcd applied it. A call that
// reached no member (no connection) always moves on.
enum class EtcdRepeat {
  kSafe,      // repeating it changes nothing a second time (reads, keep-alives, guarded txns)
  kIfUnsent,  // it might act twice: moves on only when no member got it
};

struct EtcdTxnResult {
  bool succeeded = false;
  // One entry per request of the branch that ran: the key-values a get() returned,
  // empty for a put().
  std::vector<std::vector<EtcdKeyValue>> ranges;
};

class EtcdClient {
 public:
  struct Timeouts {
    int connect_ms = 1000;  // per attempt
    int request_ms = 2000;  // per attempt: the request out and the whole answer in
    // A call's attempts on all members together; 0: connect_ms + request_ms per member.
    int call_ms = 0;
    // A member that failed is tried first again only after this.
    int backoff_ms = 2000;
  };

  // `target` as parse_etcd_target takes it.
  static Result<std::unique_ptr<EtcdClient>> open(std::string_view target, Timeouts timeouts);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // "etcd://HOST:PORT[,HOST:PORT...]", every member, for messages.
  const std::string& shown() const { return shown_; }
  const std::vector<EtcdMember>& members() const { return members_; }

  // Asks every member for its status, one attempt each, which may take the connect
  // time plus the larger of request_ms and call_ms (no lease is at stake yet at open):
  // InvalidArgument when two of them belong to different etcd clusters (a URL listing
  // members of two clusters would give the same slot out twice once a call moves on),
  // Unavailable naming each error when none answers. Members that do not answer are not
  // an error while one does.
  Status check_members();

  // Sent to another member after an unknown fate too: a lease granted twice leaves one
  // nobody knows of, which holds no key and simply expires after ttl_s.
  Result<EtcdLeaseGrant> lease_grant(int64_t ttl_s);
  // The lease's TTL in seconds after the refresh; 0 when the lease does not exist.
  Result<int64_t> lease_keep_alive(int64_t id);
  // NotFound when the lease does not exist (expired, or revoked already, which a
  // revoke sent twice also finds).
  Status lease_revoke(int64_t id);
  // Seconds left; -1 when the lease does not exist.
  Result<int64_t> lease_time_to_live(int64_t id);

  // The key `key` alone, or every key in [key, range_end) when range_end is not empty.
  Result<std::vector<EtcdKeyValue>> range(std::string_view key, std::string_view range_end = {},
                                          bool keys_only = false);
  // How many keys were deleted. Not sent twice: a second delete could remove a key
  // created since by someone else.
  Result<int64_t> delete_key(std::string_view key);
  // All `compares` hold: run `success`, else `failure` (both of put() and get()).
  // `repeat`: kSafe only when the compares make a second run harmless.
  Result<EtcdTxnResult> txn(const std::vector<nlohmann::json>& compares,
                            const std::vector<nlohmann::json>& success,
                            const std::vector<nlohmann::json>& failure,
                            EtcdRepeat repeat = EtcdRepeat::kIfUnsent);

  // One POST of `body` to `path` ("/v3/kv/range"): the answer's JSON object, or the
  // error etcd reported (NotFound for gRPC code 5, InvalidArgument for 3, else
  // Unavailable or IoError).
  Result<nlohmann::json> call(std::string_view path, const nlohmann::json& body,
                              EtcdRepeat repeat = EtcdRepeat::kIfUnsent);

 private:
  struct Attempt;
  using Clock = std::chrono::steady_clock;

  EtcdClient(std::vector<EtcdMember> members, Timeouts timeouts);
  // One try of the request on member `m`, within `deadline`; the request itself (once
  // connected) within `request_ms` too.
  Attempt attempt(size_t m, std::string_view path, const std::string& payload,
                  Clock::time_point deadline, int request_ms) IDFORGE_EXCLUDES(mu_);
  // The members in the order this call tries them: the one in use first, then the
  // others in URL order, those in back-off last.
  std::vector<size_t> order_of_members() IDFORGE_EXCLUDES(mu_);
  void note(size_t m, bool ok) IDFORGE_EXCLUDES(mu_);
  std::unique_ptr<EtcdConnection> take_connection(size_t m) IDFORGE_EXCLUDES(mu_);
  void give_back(size_t m, std::unique_ptr<EtcdConnection> connection) IDFORGE_EXCLUDES(mu_);
  // An answer from another cluster than the first one that answered: its error.
  Status check_cluster(size_t m, const nlohmann::json& answer) IDFORGE_EXCLUDES(mu_);

  const std::vector<EtcdMember> members_;
  const std::string shown_;
  const Timeouts timeouts_;
  Mutex mu_;
  size_t in_use_ IDFORGE_GUARDED_BY(mu_) = 0;
  std::vector<Clock::time_point> failed_until_ IDFORGE_GUARDED_BY(mu_);
  // Open connections not in use, per member; a call takes one (or opens one) and puts
  // it back after, so calls from several threads do not wait on each other.
  std::vector<std::vector<std::unique_ptr<EtcdConnection>>> idle_ IDFORGE_GUARDED_BY(mu_);
  std::string cluster_id_ IDFORGE_GUARDED_BY(mu_);  // the first answer's; "" before
};

}  // namespace idforge::coord
