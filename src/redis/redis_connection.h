// The client side of Redis that the segment store and the worker registry share: the
// URL, one hiredis connection with its scripts loaded, and a small pool that retries a
// call once when a pooled connection turns out to have been closed by a restart.
//
// With redis-sentinel:// the primary's address is not in the URL: a new connection asks
// the Sentinels for it (SENTINEL get-master-addr-by-name, the first that answers) and
// checks with ROLE that the server it reaches is the primary. A connection that fails,
// or that the server answers READONLY (a primary demoted by a failover), makes every
// pooled connection reconnect, so the client follows the primary across a failover.
//
// Connecting gives up after RedisTimeouts::connect_ms and each command after
// command_ms, so a server that stops answering fails a call instead of hanging it. A
// connection that failed is dropped and the next call reconnects. SIGPIPE from a reset
// connection never reaches the process.
//
// RedisConnection is not thread-safe (the pool hands it to one caller at a time);
// RedisClient is.
#pragma once

#include <hiredis.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/connection_pool.h"
#include "idforge/status.h"
#include "redis/redis_url.h"

namespace idforge::redis {

struct RedisReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyFree>;

inline std::string_view reply_text(const redisReply* r) { return {r->str, r->len}; }

// The Status for an error reply `r` from the server `shown` while `doing`: Unavailable
// for replies that mean "not now" (loading, busy, read-only replica...), else IoError.
Status redis_error_status(const std::string& shown, const redisReply* r, std::string_view doing);

struct RedisTimeouts {
  int connect_ms = 3000;
  int command_ms = 5000;
};

// One hiredis connection with the given Lua scripts loaded.
class RedisConnection {
 public:
  // `scripts` must outlive the connection (static tables of script texts).
  // `target`'s host and port (a direct address, not Sentinels). `epoch`, when given,
  // is the client's count of failovers seen: once it moves on, this connection is old.
  static Result<std::unique_ptr<RedisConnection>> connect(
      const RedisTarget& target, const std::string& shown, std::span<const char* const> scripts,
      const RedisTimeouts& timeouts, const std::atomic<uint64_t>* epoch = nullptr);

  // Failed, or answered READONLY: its server is no longer the primary.
  bool broken() const { return demoted_ || ctx_ == nullptr || ctx_->err != 0; }
  bool demoted() const { return demoted_; }
  // An idle connection has nothing to read; readable means the server closed it. A
  // connection made before the client last saw a failover is not alive either.
  bool looks_alive() const;

  // One command. Fails (and breaks the connection) only when the server could not be
  // reached or did not answer in time; an error reply comes back as a reply.
  Result<RedisReplyPtr> command(const std::vector<std::string>& args);
  // EVALSHA of script number `script`, falling back to EVAL when the server forgot it.
  Result<RedisReplyPtr> eval(size_t script, const std::vector<std::string>& keys,
                             const std::vector<std::string>& args);
  // Several commands in one round trip; replies in order.
  Result<std::vector<RedisReplyPtr>> pipeline(
      const std::vector<std::vector<std::string>>& commands);

 private:
  struct ContextFree {
    void operator()(redisContext* c) const { redisFree(c); }
  };

  RedisConnection(redisContext* ctx, std::string shown, std::span<const char* const> scripts,
                  const std::atomic<uint64_t>* epoch)
      : ctx_(ctx),
        shown_(std::move(shown)),
        scripts_(scripts),
        epoch_(epoch),
        born_(epoch ? epoch->load() : 0) {}
  Status io_error() const;
  void note_reply(const redisReply* r);

  std::unique_ptr<redisContext, ContextFree> ctx_;
  std::string shown_;
  std::span<const char* const> scripts_;
  std::vector<std::string> shas_;
  const std::atomic<uint64_t>* epoch_;
  const uint64_t born_;
  bool demoted_ = false;
};

// A pool of connections to one server (redis://) or to whichever server the Sentinels
// name as the primary (redis-sentinel://). Thread-safe.
class RedisClient {
 public:
  RedisClient(RedisTarget target, std::span<const char* const> scripts, RedisTimeouts timeouts,
              size_t max_connections);
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // The URL without the password.
  const std::string& shown() const { return shown_; }

  // Runs `fn(RedisConnection&)`, which returns a Status or Result, on a pooled
  // connection. A connection that had been idle may have been closed by a server
  // restart since; its quick failure earns one retry on a new connection, so `fn` must
  // be safe to run twice (at worst it then wastes what the lost first run took). With
  // Sentinels, a quick failure or a READONLY answer also earns that retry, on the
  // primary the Sentinels name then.
  template <typename Fn>
  auto with_connection(Fn&& fn) -> decltype(fn(std::declval<RedisConnection&>()));

  // One PING: reports a wrong address or password now rather than at the first call.
  Status ping();

 private:
  // A connection the server closed while it sat idle fails at once; a slower failure
  // is a server in trouble (a timeout), and retrying would only double the caller's wait.
  static constexpr auto kStaleFailure = std::chrono::milliseconds(500);

  Result<std::unique_ptr<RedisConnection>> connect();
  // Asks the Sentinels for the primary and connects to it; Unavailable listing what was
  // tried when no Sentinel names a primary that answers as one in time.
  Result<std::unique_ptr<RedisConnection>> connect_via_sentinels();
  // After a call failed on `conn`: with Sentinels, every pooled connection is dropped.
  void note_failure(const RedisConnection& conn);

  const RedisTarget target_;
  const std::string shown_;
  const std::span<const char* const> scripts_;
  const RedisTimeouts timeouts_;
  // Failovers (or failures that may be one) seen; connections of an older epoch are
  // not reused.
  std::atomic<uint64_t> epoch_{0};
  // The Sentinel that named the primary last: asked first next time.
  std::atomic<size_t> good_sentinel_{0};
  ConnectionPool<RedisConnection> pool_;
};

template <typename Fn>
auto RedisClient::with_connection(Fn&& fn) -> decltype(fn(std::declval<RedisConnection&>())) {
  for (int attempt = 0;; ++attempt) {
    IDFORGE_ASSIGN_OR_RETURN(ConnectionPool<RedisConnection>::Lease lease, pool_.acquire());
    const auto started = std::chrono::steady_clock::now();
    auto result = fn(*lease);
    if (result.ok() || !lease->broken()) return result;
    note_failure(*lease);
    const bool quick = std::chrono::steady_clock::now() - started < kStaleFailure;
    if (attempt == 0 && quick && (lease.reused() || target_.via_sentinels())) continue;
    return result;
  }
}

}  // namespace idforge::redis
