// The Redis SegmentStore: per tag one hash `idforge:seg:<tag>` (max_id, step,
// description, serial_template, updated_at) and one set `idforge:tags` of the names.
//
// Every change is one Lua script, which Redis runs atomically: allocate reads the hash,
// moves max_id up and stamps updated_at with no other command in between, so two
// processes can never be handed the same range. "Committed" here means applied in
// Redis's memory; it survives a Redis restart only as far as Redis's persistence does
// (appendonly yes + appendfsync always; see docs/stores.md).
//
// Connecting gives up after kConnectTimeoutMs and each command after kCommandTimeoutMs;
// a connection that failed is dropped and the next call reconnects.
#include "store/redis_store.h"

#include <fmt/format.h>
#include <hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/connection_pool.h"

namespace idforge::store {
namespace {

constexpr int kConnectTimeoutMs = 3000;
constexpr int kCommandTimeoutMs = 5000;
constexpr size_t kMaxConnections = 4;
// A connection the server closed while it sat idle fails at once; a slower failure is
// a server in trouble (a timeout), and retrying would only double the caller's wait.
constexpr auto kStaleFailure = std::chrono::milliseconds(500);
constexpr uint64_t kMaxStep = 1'000'000'000;
constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
constexpr std::string_view kKeyPrefix = "idforge:seg:";
constexpr std::string_view kTagSetKey = "idforge:tags";

// KEYS[1] = the tag's hash; ARGV[1] = step ("0": the tag's own), ARGV[2] = now (unix
// ms). Returns {new max_id, step used} as strings, nil for an unknown tag. Numbers stay
// strings throughout: Lua numbers are doubles and would round IDs above 2^53. HINCRBY
// refuses an overflow before writing anything.
constexpr const char* kAllocateLua = R"lua(
local max_id = redis.call('HGET', KEYS[1], 'max_id')
if not max_id then return false end
local step = ARGV[1]
if step == '0' then step = redis.call('HGET', KEYS[1], 'step') end
if not step or not string.match(step, '^[1-9]%d*$') or not string.match(max_id, '^%d+$') then
  return redis.error_reply('IDFORGE_BADROW max_id or step is not a positive integer')
end
redis.call('HINCRBY', KEYS[1], 'max_id', step)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
return {redis.call('HGET', KEYS[1], 'max_id'), step}
)lua";

// KEYS[1] = the tag's hash, KEYS[2] = the set of names; ARGV = name, max_id, step,
// description, serial_template, now. Returns 1 if created, 0 if the tag existed.
constexpr const char* kCreateLua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'step', ARGV[3], 'description', ARGV[4],
           'serial_template', ARGV[5], 'updated_at', ARGV[6])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
)lua";

// KEYS[1] = the tag's hash; ARGV = step, now. Returns 1, or 0 for an unknown tag.
constexpr const char* kSetStepLua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[1], 'updated_at', ARGV[2])
return 1
)lua";

enum Script { kAllocate, kCreate, kSetStep, kScriptCount };
constexpr const char* kScripts[kScriptCount] = {kAllocateLua, kCreateLua, kSetStepLua};

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

Status not_found(std::string_view tag) {
  return Status::NotFound(
      fmt::format("unknown tag '{}' (create it with: idforge tag create {})", tag, tag));
}

Status check_step(uint64_t step) {
  if (step < 1 || step > kMaxStep) {
    return Status::InvalidArgument(
        fmt::format("step must be from 1 to {}, got {}", kMaxStep, step));
  }
  return Status::Ok();
}

std::string tag_key(std::string_view tag) { return std::string(kKeyPrefix) + std::string(tag); }

timeval to_timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

template <typename Int>
bool parse_int(std::string_view text, Int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// The Status for an error reply of `shown` while `doing`.
Status error_reply_status(const std::string& shown, const redisReply* r, std::string_view doing) {
  const std::string_view text(r->str, r->len);
  std::string message = fmt::format("{}: {}: {}", shown, doing, text);
  // Replies that mean "not now": loading the data set, a busy script, a replica that
  // lost its primary or is read-only after a failover, a full disk for the AOF.
  for (std::string_view transient : {"LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN",
                                     "CLUSTERDOWN", "NOREPLICAS", "MISCONF"}) {
    if (text.starts_with(transient)) return Status::Unavailable(std::move(message));
  }
  // Anything else (a wrong password, a command the server refuses) fails again on retry.
  return Status::IoError(std::move(message));
}

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};

std::string_view text_of(const redisReply* r) { return {r->str, r->len}; }

// Where a store URL points: redis://[user[:password]@]host[:port][/db].
struct Target {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;
  std::string password;

  // The URL without the password, for errors and describe().
  std::string shown() const {
    const bool v6 = host.find(':') != std::string::npos;
    std::string s = fmt::format("redis://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (db != 0) s += fmt::format("/{}", db);
    return s;
  }
};

// "p%40ss" -> "p@ss", so a password may hold the URL's own delimiters.
Result<std::string> percent_decode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    unsigned value = 0;
    if (in.size() - i < 3) return Status::InvalidArgument("bad escape");
    const auto [end, ec] = std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16);
    if (ec != std::errc() || end != in.data() + i + 3) return Status::InvalidArgument("bad escape");
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

// hiredis writes with plain write(): on a connection the server has reset, that raises
// SIGPIPE, which would end the whole process. While a command runs, SIGPIPE is blocked
// for this thread, and one it caused is taken off the pending set before unblocking.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    already_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!already_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool already_pending_ = false;
};

Result<Target> parse_url(std::string_view url) {
  auto bad = [url](std::string_view why) {
    // The URL may carry a password; show only what is after the '@', if any.
    const size_t at = url.rfind('@');
    const std::string safe = at == std::string_view::npos
                                 ? std::string(url)
                                 : "redis://***@" + std::string(url.substr(at + 1));
    return Status::InvalidArgument(fmt::format(
        "bad redis store URL '{}': {} (expected redis://[USER:PASSWORD@]HOST[:PORT][/DB])", safe,
        why));
  };
  constexpr std::string_view kScheme = "redis://";
  if (!url.starts_with(kScheme)) return bad("it must start with redis://");
  std::string_view rest = url.substr(kScheme.size());
  Target t;
  const size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view auth = rest.substr(0, at);
    const size_t colon = auth.find(':');
    // As other Redis clients read it: user[:password], either part may be empty.
    Result<std::string> user = percent_decode(auth.substr(0, colon));
    Result<std::string> password = percent_decode(
        colon == std::string_view::npos ? std::string_view() : auth.substr(colon + 1));
    if (!user.ok() || !password.ok()) return bad("a bad %-escape in the user or password");
    t.user = *user;
    t.password = *password;
    rest = rest.substr(at + 1);
  }
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!parse_int(db, &t.db) || t.db < 0)) {
      return bad("the database after '/' must be a number");
    }
  }
  std::string_view port;
  if (hostport.starts_with('[')) {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return bad("unclosed '[' in the host");
    t.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return bad("expected ':PORT' after ']'");
      port = after.substr(1);
    }
  } else {
    const size_t colon = hostport.rfind(':');
    t.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (t.host.empty()) return bad("no host");
  if (!port.empty() && (!parse_int(port, &t.port) || t.port < 1 || t.port > 65535)) {
    return bad("the port must be a number from 1 to 65535");
  }
  return t;
}

// One hiredis connection with the scripts loaded. Not thread-safe; the pool gives it to
// one caller at a time.
class RedisConn {
 public:
  static Result<std::unique_ptr<RedisConn>> connect(const Target& target, const std::string& shown);

  bool broken() const { return ctx_ == nullptr || ctx_->err != 0; }

  // An idle connection has nothing to read; readable means the server closed it.
  bool looks_alive() const {
    if (broken()) return false;
    pollfd p{ctx_->fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  // One command. Fails (and breaks the connection) only when the server could not be
  // reached or did not answer in time; an error reply comes back as a reply.
  Result<ReplyPtr> command(const std::vector<std::string>& args);
  // EVALSHA of a loaded script, falling back to EVAL when the server forgot it.
  Result<ReplyPtr> eval(Script script, const std::vector<std::string>& keys,
                        const std::vector<std::string>& args);
  // Several commands in one round trip; replies in order.
  Result<std::vector<ReplyPtr>> pipeline(const std::vector<std::vector<std::string>>& commands);

 private:
  explicit RedisConn(redisContext* ctx, std::string shown) : ctx_(ctx), shown_(std::move(shown)) {}
  Status io_error() const {
    return Status::Unavailable(fmt::format("{}: {}", shown_, ctx_ ? ctx_->errstr : "no context"));
  }

  std::unique_ptr<redisContext, ContextFree> ctx_;
  std::string shown_;
  std::string shas_[kScriptCount];
};

Result<std::unique_ptr<RedisConn>> RedisConn::connect(const Target& target,
                                                      const std::string& shown) {
  redisContext* raw =
      redisConnectWithTimeout(target.host.c_str(), target.port, to_timeval(kConnectTimeoutMs));
  std::unique_ptr<RedisConn> conn(new RedisConn(raw, shown));
  if (raw == nullptr) return Status::Unavailable(shown + ": cannot allocate a connection");
  if (raw->err != 0) {
    return Status::Unavailable(fmt::format("{}: cannot connect: {}", shown, raw->errstr));
  }
  // SO_RCVTIMEO/SO_SNDTIMEO: a server that stops answering fails the call, not hangs it.
  if (redisSetTimeout(raw, to_timeval(kCommandTimeoutMs)) != REDIS_OK ||
      redisEnableKeepAlive(raw) != REDIS_OK) {
    return Status::Unavailable(
        fmt::format("{}: cannot set socket options: {}", shown, raw->errstr));
  }

  auto expect_ok = [&](const std::vector<std::string>& args,
                       std::string_view doing) -> Result<ReplyPtr> {
    Result<ReplyPtr> r = conn->command(args);
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) return error_reply_status(shown, r->get(), doing);
    return r;
  };
  if (!target.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!target.user.empty()) auth.push_back(target.user);
    auth.push_back(target.password);
    Result<ReplyPtr> r = expect_ok(auth, "AUTH");
    if (!r.ok()) return r.status();
  }
  if (target.db != 0) {
    Result<ReplyPtr> r = expect_ok({"SELECT", std::to_string(target.db)}, "SELECT");
    if (!r.ok()) return r.status();
  }
  for (int i = 0; i < kScriptCount; ++i) {
    Result<ReplyPtr> r = expect_ok({"SCRIPT", "LOAD", kScripts[i]}, "loading a script");
    if (!r.ok()) return r.status();
    if ((*r)->type != REDIS_REPLY_STRING) {
      return Status::IoError(fmt::format("{}: SCRIPT LOAD did not return a hash", shown));
    }
    conn->shas_[i] = std::string(text_of(r->get()));
  }
  return conn;
}

Result<ReplyPtr> RedisConn::command(const std::vector<std::string>& args) {
  if (broken()) return io_error();
  SigpipeGuard guard;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* reply =
      redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lens.data());
  if (reply == nullptr) return io_error();
  return ReplyPtr(static_cast<redisReply*>(reply));
}

Result<ReplyPtr> RedisConn::eval(Script script, const std::vector<std::string>& keys,
                                 const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"EVALSHA", shas_[script], std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  Result<ReplyPtr> r = command(cmd);
  if (!r.ok()) return r;
  // SCRIPT FLUSH, or a restarted server: send the text, which loads it again.
  if ((*r)->type == REDIS_REPLY_ERROR && text_of(r->get()).starts_with("NOSCRIPT")) {
    cmd[0] = "EVAL";
    cmd[1] = kScripts[script];
    return command(cmd);
  }
  return r;
}

Result<std::vector<ReplyPtr>> RedisConn::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (broken()) return io_error();
  SigpipeGuard guard;
  for (const auto& args : commands) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(),
                               lens.data()) != REDIS_OK) {
      return io_error();
    }
  }
  std::vector<ReplyPtr> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(ctx_.get(), &reply) != REDIS_OK || reply == nullptr) return io_error();
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  return replies;
}

class RedisStore final : public SegmentStore {
 public:
  explicit RedisStore(Target target)
      : target_(std::move(target)),
        shown_(target_.shown()),
        pool_(kMaxConnections, [this] { return RedisConn::connect(target_, shown_); }) {}

  Status open();

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return shown_; }

 private:
  // Runs `fn` on a pooled connection. A connection that had been idle may have been
  // closed by a server restart since; its quick failure earns one retry on a new
  // connection (retrying an allocation whose answer was lost skips a range at worst).
  template <typename Fn>
  auto with_connection(Fn&& fn) -> decltype(fn(std::declval<RedisConn&>()));
  // The Status for an error reply.
  Status reply_error(const redisReply* r, std::string_view doing) const;
  Result<TagInfo> read_hash(std::string_view name, const redisReply* r) const;

  const Target target_;
  const std::string shown_;
  ConnectionPool<RedisConn> pool_;
};

template <typename Fn>
auto RedisStore::with_connection(Fn&& fn) -> decltype(fn(std::declval<RedisConn&>())) {
  for (int attempt = 0;; ++attempt) {
    Result<ConnectionPool<RedisConn>::Lease> lease = pool_.acquire();
    if (!lease.ok()) return lease.status();
    const auto started = std::chrono::steady_clock::now();
    auto result = fn(**lease);
    if (!result.ok() && (*lease)->broken() && lease->reused() && attempt == 0 &&
        std::chrono::steady_clock::now() - started < kStaleFailure) {
      continue;
    }
    return result;
  }
}

Status RedisStore::reply_error(const redisReply* r, std::string_view doing) const {
  return error_reply_status(shown_, r, doing);
}

Status RedisStore::open() {
  // Connect once now, so a wrong address or password is reported at startup.
  return with_connection([&](RedisConn& c) -> Status {
    Result<ReplyPtr> r = c.command({"PING"});
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) return reply_error(r->get(), "PING");
    return Status::Ok();
  });
}

Result<Segment> RedisStore::allocate(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  const std::vector<std::string> keys = {tag_key(tag)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConn& c) -> Result<Segment> {
    Result<ReplyPtr> got = c.eval(kAllocate, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_NIL) return not_found(tag);
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string_view text = text_of(r);
      if (text.find("overflow") != std::string_view::npos) {
        return Status::OutOfRange(fmt::format(
            "tag '{}' has run out of IDs in {}: max_id plus step passes 2^63-1", tag, shown_));
      }
      if (text.starts_with("IDFORGE_BADROW")) {
        return Status::IoError(fmt::format(
            "{}: tag '{}' has a max_id or step that is not a positive integer (edited by hand?)",
            shown_, tag));
      }
      return reply_error(r, fmt::format("allocating for tag '{}'", tag));
    }
    int64_t max_id = 0;
    int64_t used = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        !parse_int(text_of(r->element[0]), &max_id) || !parse_int(text_of(r->element[1]), &used) ||
        used < 1 || max_id < used) {
      return Status::Internal(fmt::format(
          "{}: tag '{}': the allocation script returned an unexpected reply", shown_, tag));
    }
    const auto count = static_cast<uint64_t>(used);
    return Segment{static_cast<uint64_t>(max_id) - count + 1, count, 1};
  });
}

Status RedisStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(spec.name));
  if (spec.start < 1 || spec.start > kMaxId) {
    return Status::InvalidArgument(
        fmt::format("start must be from 1 to {}, got {}", kMaxId, spec.start));
  }
  IDFORGE_RETURN_IF_ERROR(check_step(spec.step));
  const std::vector<std::string> keys = {tag_key(spec.name), std::string(kTagSetKey)};
  const std::vector<std::string> args = {
      spec.name,        std::to_string(spec.start - 1), std::to_string(spec.step),
      spec.description, spec.serial_template,           std::to_string(now_unix_ms())};
  return with_connection([&](RedisConn& c) -> Status {
    Result<ReplyPtr> got = c.eval(kCreate, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("creating tag '{}'", spec.name));
    }
    if (r->type != REDIS_REPLY_INTEGER) {
      return Status::Internal(
          fmt::format("{}: creating tag '{}': unexpected reply", shown_, spec.name));
    }
    if (r->integer == 0) {
      return Status::AlreadyExists(fmt::format("tag '{}' already exists in {}", spec.name, shown_));
    }
    return Status::Ok();
  });
}

Result<TagInfo> RedisStore::read_hash(std::string_view name, const redisReply* r) const {
  // HMGET max_id step description serial_template updated_at
  if (r->type == REDIS_REPLY_ERROR) return reply_error(r, fmt::format("reading tag '{}'", name));
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) {
    return Status::Internal(fmt::format("{}: reading tag '{}': unexpected reply", shown_, name));
  }
  auto field = [r](size_t i) -> std::string_view {
    const redisReply* e = r->element[i];
    return e->type == REDIS_REPLY_STRING ? text_of(e) : std::string_view();
  };
  bool all_nil = true;
  for (size_t i = 0; i < r->elements; ++i)
    all_nil = all_nil && r->element[i]->type == REDIS_REPLY_NIL;
  if (all_nil) return not_found(name);
  TagInfo info;
  info.name = std::string(name);
  int64_t max_id = -1;
  int64_t step = 0;
  int64_t updated = 0;
  if (!parse_int(field(0), &max_id) || !parse_int(field(1), &step) || max_id < 0 || step < 1) {
    // Other tools can write these keys; a hand-edited hash must not become a wrong ID.
    return Status::IoError(
        fmt::format("{}: tag '{}' has max_id '{}' and step '{}'; both must be positive "
                    "integers (edited by hand?)",
                    shown_, name, field(0), field(1)));
  }
  if (!field(4).empty() && !parse_int(field(4), &updated)) updated = 0;
  info.max_id = static_cast<uint64_t>(max_id);
  info.step = static_cast<uint64_t>(step);
  info.description = std::string(field(2));
  info.serial_template = std::string(field(3));
  info.updated_at_ms = updated;
  return info;
}

std::vector<std::string> hmget_of(std::string_view name) {
  return {"HMGET", tag_key(name), "max_id", "step", "description", "serial_template", "updated_at"};
}

Result<std::vector<TagInfo>> RedisStore::list_tags() {
  return with_connection([&](RedisConn& c) -> Result<std::vector<TagInfo>> {
    Result<ReplyPtr> got = c.command({"SMEMBERS", std::string(kTagSetKey)});
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "listing tags");
    if (r->type != REDIS_REPLY_ARRAY) {
      return Status::Internal(fmt::format("{}: listing tags: unexpected reply", shown_));
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < r->elements; ++i) {
      if (r->element[i]->type == REDIS_REPLY_STRING) names.emplace_back(text_of(r->element[i]));
    }
    std::sort(names.begin(), names.end());
    std::vector<std::vector<std::string>> reads;
    reads.reserve(names.size());
    for (const std::string& n : names) reads.push_back(hmget_of(n));
    Result<std::vector<ReplyPtr>> replies = c.pipeline(reads);
    if (!replies.ok()) return replies.status();
    std::vector<TagInfo> tags;
    tags.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      Result<TagInfo> info = read_hash(names[i], (*replies)[i].get());
      // A name whose hash someone deleted is not a tag any more.
      if (!info.ok() && info.status().code() == StatusCode::kNotFound) continue;
      if (!info.ok()) return info.status();
      tags.push_back(std::move(info).value());
    }
    return tags;
  });
}

Result<TagInfo> RedisStore::get_tag(std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  return with_connection([&](RedisConn& c) -> Result<TagInfo> {
    Result<ReplyPtr> got = c.command(hmget_of(name));
    if (!got.ok()) return got.status();
    return read_hash(name, got->get());
  });
}

Status RedisStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(check_step(step));
  const std::vector<std::string> keys = {tag_key(name)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConn& c) -> Status {
    Result<ReplyPtr> got = c.eval(kSetStep, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("setting the step of tag '{}'", name));
    }
    if (r->type != REDIS_REPLY_INTEGER) {
      return Status::Internal(
          fmt::format("{}: setting the step of tag '{}': unexpected reply", shown_, name));
    }
    if (r->integer == 0) return not_found(name);
    return Status::Ok();
  });
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_redis_store(std::string_view url) {
  Result<Target> target = parse_url(url);
  if (!target.ok()) return target.status();
  auto store = std::make_unique<RedisStore>(std::move(target).value());
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
