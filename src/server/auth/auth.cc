#include "server/auth/auth.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/text.h"
#include "log/log.h"

namespace idforge::server {
namespace {

// The file holds secrets: like ssh with a private key, say so when users other than its
// owner may read it. A warning, not a refusal: the tokens still work, and a server that
// would not start after a package upgrade reset a mode is worse than a log line.
void warn_if_others_may_read(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO)) == 0) return;
  log::warn("tokens.file_readable", {{"file", path},
                                     {"mode", fmt::format("{:04o}", st.st_mode & 07777)},
                                     {"fix", "chmod 600 " + path}});
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the tokens file: {}", path, text::errno_text(err)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::InvalidArgument(fmt::format("{}: cannot read the tokens file", path));
  }
  warn_if_others_may_read(path);
  return text.str();
}

// A table of `specs`, each token keeping the shared state of the same secret in `old`
// (its rate bucket and in-flight count), so a reload neither refills buckets nor
// forgets requests under way.
std::shared_ptr<const TokenTable> make_table(std::vector<TokenSpec> specs, const TokenTable* old) {
  std::vector<Token> tokens;
  tokens.reserve(specs.size());
  for (TokenSpec& spec : specs) {
    const Token* before = old != nullptr ? old->find(spec.digest) : nullptr;
    std::shared_ptr<TokenState> state =
        before != nullptr ? before->state : std::make_shared<TokenState>();
    tokens.push_back(Token{std::move(spec), std::move(state)});
  }
  return std::make_shared<const TokenTable>(std::move(tokens));
}

std::string seconds_text(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e9);
}

std::optional<Refusal> check_limits(const Auth& auth, const Token& token, uint64_t ids,
                                    InFlight* ticket) {
  const TokenLimits& limits = token.spec.limits;
  if (limits.max_ids != 0 && ids > limits.max_ids) {
    return Refusal{Limit::kMaxIds,
                   fmt::format("token '{}' may ask for at most {} IDs in one request, this one "
                               "asks for {}",
                               token.spec.name, limits.max_ids, ids),
                   0};
  }
  const int64_t wait =
      limits.rate > 0 ? token.state->rate.acquire(limits.rate, limits.burst, auth.now_ns()) : 0;
  if (wait > 0) {
    return Refusal{Limit::kRate,
                   fmt::format("token '{}' may send {} requests per second (burst {}); retry in "
                               "{} s",
                               token.spec.name, limits.rate, limits.burst, seconds_text(wait)),
                   wait};
  }
  if (limits.in_flight != 0) {
    const uint32_t before = token.state->in_flight.fetch_add(1, std::memory_order_relaxed);
    if (before >= limits.in_flight) {
      token.state->in_flight.fetch_sub(1, std::memory_order_relaxed);
      return Refusal{Limit::kInFlight,
                     fmt::format("token '{}' may have at most {} requests being answered at once",
                                 token.spec.name, limits.in_flight),
                     0};
    }
    *ticket = InFlight(token.state);
  }
  return std::nullopt;
}

}  // namespace

const Token* TokenTable::find(const TokenDigest& digest) const {
  // Every entry is compared, whatever matched before: the time depends on the table's
  // size only.
  const Token* found = nullptr;
  for (const Token& token : tokens_) {
    const bool same = CRYPTO_memcmp(token.spec.digest.data(), digest.data(), digest.size()) == 0;
    found = same ? &token : found;
  }
  return found;
}

std::string_view limit_name(Limit limit) {
  switch (limit) {
    case Limit::kRate:
      return "rate";
    case Limit::kInFlight:
      return "in_flight";
    case Limit::kMaxIds:
      return "max_ids";
  }
  return "unknown";
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::optional<Refusal> admit(const Auth& auth, const Token& token, uint64_t ids, InFlight* ticket) {
  std::optional<Refusal> refusal = check_limits(auth, token, ids, ticket);
  if (refusal) {
    token.state->limit_refusals[static_cast<size_t>(refusal->limit)].fetch_add(
        1, std::memory_order_relaxed);
  }
  return refusal;
}

std::optional<Refusal> admit_connection(RateLimiter& bucket, const ConnectionLimits& limits,
                                        int64_t now_ns) {
  const int64_t wait = bucket.acquire(limits.rate, limits.burst, now_ns);
  if (wait == 0) return std::nullopt;
  return Refusal{
      Limit::kRate,
      fmt::format("this connection may send {} requests per second (burst {}); retry in {} s",
                  limits.rate, RateLimiter::effective_burst(limits.rate, limits.burst),
                  seconds_text(wait)),
      wait};
}

Result<std::shared_ptr<Auth>> Auth::load(std::string path) {
  IDFORGE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::string source = path;
  std::shared_ptr<Auth> auth(new Auth(std::move(path), std::move(source)));
  IDFORGE_RETURN_IF_ERROR(auth->replace(text));
  return auth;
}

Result<std::shared_ptr<Auth>> Auth::from_text(std::string_view text, std::string source) {
  std::shared_ptr<Auth> auth(new Auth("", std::move(source)));
  IDFORGE_RETURN_IF_ERROR(auth->replace(text));
  return auth;
}

Status Auth::reload() {
  if (path_.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: the tokens were not read from a file; nothing to re-read", source_));
  }
  IDFORGE_ASSIGN_OR_RETURN(std::string text, read_file(path_));
  return replace(text);
}

Status Auth::replace(std::string_view text) {
  IDFORGE_ASSIGN_OR_RETURN(std::vector<TokenSpec> specs, parse_tokens(text, source_));
  // Built under the lock, so two reloads at once cannot lose each other's states.
  MutexLock lock(mu_);
  table_ = make_table(std::move(specs), table_.get());
  generation_.fetch_add(1, std::memory_order_release);
  return Status::Ok();
}

size_t Auth::token_count() const {
  MutexLock lock(mu_);
  return table_ ? table_->size() : 0;
}

std::shared_ptr<const TokenTable> Auth::table(uint64_t* generation) const {
  MutexLock lock(mu_);
  if (generation != nullptr) *generation = generation_.load(std::memory_order_relaxed);
  return table_;
}

bool AuthView::refresh() {
  if (table_ && auth_->generation() == generation_) return false;
  table_ = auth_->table(&generation_);
  return true;
}

const Token* AuthView::find(std::string_view secret) {
  if (refresh()) found_ = nullptr;  // it pointed into the old table
  if (found_ != nullptr && secret.size() == found_secret_.size() &&
      CRYPTO_memcmp(secret.data(), found_secret_.data(), secret.size()) == 0) {
    return found_;
  }
  const Token* token = table_ ? table_->find_secret(secret) : nullptr;
  if (token != nullptr) {
    found_secret_.assign(secret);
    found_ = token;
  }
  return token;
}

const Token* AuthView::authenticate(std::string_view secret) {
  const TokenDigest digest = token_digest(secret);
  refresh();
  const Token* found = table_ ? table_->find(digest) : nullptr;
  if (found != nullptr) {
    digest_ = digest;
    token_ = found;
    revoked_ = false;
  }
  return found;
}

const Token* AuthView::token() {
  if (refresh()) {
    token_ = digest_ && table_ ? table_->find(*digest_) : nullptr;
    if (token_ == nullptr && digest_) {  // revoked: AUTH again
      digest_.reset();
      revoked_ = true;
    }
  }
  return token_;
}

}  // namespace idforge::server
