// EtcdClient: a small synchronous client for etcd v3's JSON gateway (the /v3/... paths
// of etcd 3.4 and later), over one keep-alive HTTP/1.1 connection (Boost.Beast).
//
// No C++ etcd client is packaged in Debian, and gRPC is a large dependency for the
// handful of calls a worker registry makes; the gateway maps each of them to one POST
// with a JSON body, where keys and values are base64 and 64-bit numbers are strings.
//
// Every call is bounded: connecting by Timeouts::connect_ms, sending the request and
// reading the whole answer by Timeouts::request_ms. A call never throws: Beast and JSON
// errors become a Status here (Unavailable when etcd cannot be reached or does not
// answer in time). Thread-safe: calls are serialized on the one connection.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge::coord {

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
// `key` is attached to `lease` (0 when the key does not exist).
nlohmann::json lease_is(std::string_view key, int64_t lease);
nlohmann::json put(std::string_view key, std::string_view value, int64_t lease = 0);
nlohmann::json get(std::string_view key);
}  // namespace etcd_txn

struct EtcdTxnResult {
  bool succeeded = false;
  // One entry per request of the branch that ran: the key-values a get() returned,
  // empty for a put().
  std::vector<std::vector<EtcdKeyValue>> ranges;
};

class EtcdClient {
 public:
  struct Timeouts {
    int connect_ms = 1000;
    int request_ms = 2000;
  };

  // `target` is "etcd://HOST:PORT" (no path, no query).
  static Result<std::unique_ptr<EtcdClient>> open(std::string_view target, Timeouts timeouts);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // "etcd://HOST:PORT", for messages.
  const std::string& shown() const { return shown_; }

  Result<EtcdLeaseGrant> lease_grant(int64_t ttl_s);
  // The lease's TTL in seconds after the refresh; 0 when the lease does not exist.
  Result<int64_t> lease_keep_alive(int64_t id);
  // NotFound when the lease does not exist (expired, or revoked already).
  Status lease_revoke(int64_t id);
  // Seconds left; -1 when the lease does not exist.
  Result<int64_t> lease_time_to_live(int64_t id);

  // The key `key` alone, or every key in [key, range_end) when range_end is not empty.
  Result<std::vector<EtcdKeyValue>> range(std::string_view key, std::string_view range_end = {},
                                          bool keys_only = false);
  // How many keys were deleted.
  Result<int64_t> delete_key(std::string_view key);
  // All `compares` hold: run `success`, else `failure` (both of put() and get()).
  Result<EtcdTxnResult> txn(const std::vector<nlohmann::json>& compares,
                            const std::vector<nlohmann::json>& success,
                            const std::vector<nlohmann::json>& failure);

  // One POST of `body` to `path` ("/v3/kv/range"): the answer's JSON object, or the
  // error etcd reported (NotFound for gRPC code 5, InvalidArgument for 3, else
  // Unavailable or IoError).
  Result<nlohmann::json> call(std::string_view path, const nlohmann::json& body);

 private:
  class Connection;
  EtcdClient(std::string host, std::string port, Timeouts timeouts);

  const std::string host_;
  const std::string port_;
  const std::string shown_;
  const Timeouts timeouts_;
  std::mutex mu_;
  std::unique_ptr<Connection> connection_;  // guarded by mu_
};

}  // namespace idforge::coord
