// Client tokens for both front ends (docs/operations.md, "Security"): the tokens file
// (auth_tokens.h) loaded into a table that the HTTP and RESP sessions look secrets up
// in, each token's limits (rate, in_flight, max_ids), and SIGHUP's reload.
//
//   std::shared_ptr<Auth> auth = Auth::load("/etc/idforge/tokens").value();
//   options.auth = auth;          // HttpOptions, RespOptions: every session checks it
//   auth->reload();               // SIGHUP: the old tokens stay if the file is bad
//
// A lookup hashes the secret (SHA-256) and compares the digest with every token's with
// CRYPTO_memcmp, never stopping at a match, so its time says nothing about how much of a
// guess was right, nor how long a secret is. The secret itself is never kept, logged or
// put in an error.
//
// Reload swaps the whole table under a mutex and bumps a generation counter. A session
// keeps the table it last saw (AuthView) and takes the mutex only when the generation
// moved, so a request costs one atomic load; a connection that authenticated (RESP)
// keeps its token's digest and looks it up again in the new table, so a token removed
// from the file stops working at once there too. A token whose secret stays across a
// reload keeps its rate bucket and in-flight count.
//
// Thread-safe. AuthView belongs to one session.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/status.h"
#include "server/auth/auth_tokens.h"
#include "server/auth/rate_limit.h"

namespace idforge::server {

// The limits a request can be refused by, as error texts and metrics name them.
enum class Limit { kRate, kInFlight, kMaxIds };
inline constexpr int kLimits = 3;
std::string_view limit_name(Limit limit);  // "rate", "in_flight", "max_ids"

// What a token's requests share across connections.
struct TokenState {
  RateLimiter rate;
  std::atomic<uint32_t> in_flight{0};
  // Its requests refused, for idforge_token_refusals_total: rare, so plain counters.
  std::atomic<uint64_t> scope_refusals{0};
  std::array<std::atomic<uint64_t>, kLimits> limit_refusals{};
};

struct Token {
  TokenSpec spec;
  std::shared_ptr<TokenState> state;  // never null
};

class TokenTable {
 public:
  explicit TokenTable(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  // The token with this digest, or null; compares against every token, constant time.
  const Token* find(const TokenDigest& digest) const;
  const Token* find_secret(std::string_view secret) const { return find(token_digest(secret)); }
  size_t size() const { return tokens_.size(); }
  const std::vector<Token>& tokens() const { return tokens_; }

 private:
  std::vector<Token> tokens_;
};

struct Refusal {
  Limit limit = Limit::kRate;
  std::string message;         // "token 'ci' may send 10 requests per second ..."
  int64_t retry_after_ns = 0;  // kRate: when a request would be admitted
};

// A request's place under its token's in_flight limit, from when it is admitted until
// its answer is written: release() or the destructor gives it back. Movable.
class InFlight {
 public:
  InFlight() = default;
  // Holds a place already counted in `state->in_flight` (admit() counts it).
  explicit InFlight(std::shared_ptr<TokenState> state) : state_(std::move(state)) {}
  InFlight(InFlight&& other) noexcept : state_(std::move(other.state_)) {}
  InFlight& operator=(InFlight&& other) noexcept {
    if (this != &other) {
      release();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() { release(); }

  void release() {
    if (state_) state_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    state_.reset();
  }
  bool holds() const { return state_ != nullptr; }

 private:
  std::shared_ptr<TokenState> state_;
};

class Auth;

// Checks one request of `ids` IDs (0: none) against the token's limits: max_ids, then
// rate, then in_flight. nullopt: admitted, and `ticket` holds its in-flight place when
// the token has that limit; a refusal is counted in the token's state. `auth`'s clock is
// read only for a token with a rate: a read per request was 4% of the server's CPU at
// pipeline 16 with a tokens file (docs/benchmarks.md).
std::optional<Refusal> admit(const Auth& auth, const Token& token, uint64_t ids, InFlight* ticket);
// The same for a connection's own rate (ConnectionLimits).
std::optional<Refusal> admit_connection(RateLimiter& bucket, const ConnectionLimits& limits,
                                        int64_t now_ns);

// Nanoseconds on the steady clock: the default clock of the limits.
int64_t steady_now_ns();

class Auth {
 public:
  // Monotonic nanoseconds, for the rate limits; tests pass their own.
  using Clock = std::function<int64_t()>;

  // Reads the tokens file at `path`; errors name PATH:LINE.
  static Result<std::shared_ptr<Auth>> load(std::string path);
  // Tokens from text; `source` names them in errors. reload() then fails: there is no file.
  static Result<std::shared_ptr<Auth>> from_text(std::string_view text, std::string source);

  // Re-reads the file. On error the tokens loaded before stay and the error is returned;
  // on success tokens no longer in the file stop working at once, on connections that
  // authenticated with them too.
  Status reload() IDFORGE_EXCLUDES(mu_);
  // The same with the file's new text given (reload() and tests).
  Status replace(std::string_view text) IDFORGE_EXCLUDES(mu_);

  size_t token_count() const IDFORGE_EXCLUDES(mu_);

  // Changes with every successful reload; sessions compare it with the one they saw.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // The table in force now, and its generation.
  std::shared_ptr<const TokenTable> table(uint64_t* generation = nullptr) const
      IDFORGE_EXCLUDES(mu_);

  int64_t now_ns() const { return clock_ ? clock_() : steady_now_ns(); }
  // For tests: before the Auth is handed to any session.
  void set_clock(Clock clock) { clock_ = std::move(clock); }

 private:
  Auth(std::string path, std::string source) : path_(std::move(path)), source_(std::move(source)) {}

  const std::string path_;    // empty: from_text
  const std::string source_;  // names the tokens in errors
  Clock clock_;
  mutable Mutex mu_;
  std::shared_ptr<const TokenTable> table_ IDFORGE_GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{0};
};

// One session's view of the tokens: the table as of the generation it last saw. Not
// thread-safe (one per session); keeps its table alive, so the Token pointers it
// returns stay valid until its next call.
class AuthView {
 public:
  AuthView() = default;
  explicit AuthView(std::shared_ptr<Auth> auth) : auth_(std::move(auth)) {}

  bool on() const { return auth_ != nullptr; }
  const Auth& auth() const { return *auth_; }

  // The token with this secret, or null (HTTP: every request carries its secret). The
  // last secret found is kept, so a keep-alive connection that sends the same one again
  // is answered with one constant-time comparison instead of a SHA-256 and a pass over
  // the table (5% of the server's CPU per HTTP request with a token, measured); a reload
  // drops it.
  const Token* find(std::string_view secret);
  // A connection that authenticates once (RESP AUTH): on success the token is kept;
  // a wrong secret leaves what was kept, as Redis does.
  const Token* authenticate(std::string_view secret);
  // The token the connection authenticated with, looked up again after a reload;
  // null when none, or when it was removed from the file (the connection must then
  // authenticate again).
  const Token* token();
  // Whether token() last found the connection's token removed by a reload (until the
  // next successful authenticate): RESP then closes the connection, as Redis closes the
  // connections of a deleted ACL user.
  bool revoked() const { return revoked_; }

 private:
  // Takes the current table when reload() changed it; true when it did.
  bool refresh();

  std::shared_ptr<Auth> auth_;
  std::shared_ptr<const TokenTable> table_;
  uint64_t generation_ = 0;
  std::optional<TokenDigest> digest_;  // of the connection's token, when it authenticated
  const Token* token_ = nullptr;
  std::string found_secret_;      // find(): the last secret found, and its token
  const Token* found_ = nullptr;  // (in table_; null when none)
  bool revoked_ = false;
};

}  // namespace idforge::server
