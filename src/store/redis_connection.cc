#include "store/redis_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <charconv>

namespace idforge::store {
namespace {

timeval to_timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

bool parse_int(std::string_view text, int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

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

}  // namespace

std::string RedisTarget::shown() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string s = fmt::format("redis://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
  if (db != 0) s += fmt::format("/{}", db);
  return s;
}

Result<RedisTarget> parse_redis_url(std::string_view url, std::string_view what) {
  auto bad = [url, what](std::string_view why) {
    // The URL may carry a password; show only what is after the '@', if any.
    const size_t at = url.rfind('@');
    const std::string safe = at == std::string_view::npos
                                 ? std::string(url)
                                 : "redis://***@" + std::string(url.substr(at + 1));
    return Status::InvalidArgument(
        fmt::format("bad redis {} URL '{}': {} (expected redis://[USER:PASSWORD@]HOST[:PORT][/DB])",
                    what, safe, why));
  };
  constexpr std::string_view kScheme = "redis://";
  if (!url.starts_with(kScheme)) return bad("it must start with redis://");
  std::string_view rest = url.substr(kScheme.size());
  RedisTarget t;
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

Status redis_error_status(const std::string& shown, const redisReply* r, std::string_view doing) {
  const std::string_view text = reply_text(r);
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

Result<std::unique_ptr<RedisConnection>> RedisConnection::connect(
    const RedisTarget& target, const std::string& shown, std::span<const char* const> scripts,
    const RedisTimeouts& timeouts) {
  redisContext* raw =
      redisConnectWithTimeout(target.host.c_str(), target.port, to_timeval(timeouts.connect_ms));
  std::unique_ptr<RedisConnection> conn(new RedisConnection(raw, shown, scripts));
  if (raw == nullptr) return Status::Unavailable(shown + ": cannot allocate a connection");
  if (raw->err != 0) {
    return Status::Unavailable(fmt::format("{}: cannot connect: {}", shown, raw->errstr));
  }
  // SO_RCVTIMEO/SO_SNDTIMEO: a server that stops answering fails the call, not hangs it.
  if (redisSetTimeout(raw, to_timeval(timeouts.command_ms)) != REDIS_OK ||
      redisEnableKeepAlive(raw) != REDIS_OK) {
    return Status::Unavailable(
        fmt::format("{}: cannot set socket options: {}", shown, raw->errstr));
  }

  auto expect_ok = [&](const std::vector<std::string>& args,
                       std::string_view doing) -> Result<RedisReplyPtr> {
    Result<RedisReplyPtr> r = conn->command(args);
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) return redis_error_status(shown, r->get(), doing);
    return r;
  };
  if (!target.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!target.user.empty()) auth.push_back(target.user);
    auth.push_back(target.password);
    Result<RedisReplyPtr> r = expect_ok(auth, "AUTH");
    if (!r.ok()) return r.status();
  }
  if (target.db != 0) {
    Result<RedisReplyPtr> r = expect_ok({"SELECT", std::to_string(target.db)}, "SELECT");
    if (!r.ok()) return r.status();
  }
  for (const char* script : scripts) {
    Result<RedisReplyPtr> r = expect_ok({"SCRIPT", "LOAD", script}, "loading a script");
    if (!r.ok()) return r.status();
    if ((*r)->type != REDIS_REPLY_STRING) {
      return Status::IoError(fmt::format("{}: SCRIPT LOAD did not return a hash", shown));
    }
    conn->shas_.emplace_back(reply_text(r->get()));
  }
  return conn;
}

bool RedisConnection::looks_alive() const {
  if (broken()) return false;
  pollfd p{ctx_->fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

Status RedisConnection::io_error() const {
  return Status::Unavailable(fmt::format("{}: {}", shown_, ctx_ ? ctx_->errstr : "no context"));
}

Result<RedisReplyPtr> RedisConnection::command(const std::vector<std::string>& args) {
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
  return RedisReplyPtr(static_cast<redisReply*>(reply));
}

Result<RedisReplyPtr> RedisConnection::eval(size_t script, const std::vector<std::string>& keys,
                                            const std::vector<std::string>& args) {
  if (script >= shas_.size()) {
    return Status::Internal(fmt::format("{}: no script number {}", shown_, script));
  }
  std::vector<std::string> cmd = {"EVALSHA", shas_[script], std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  Result<RedisReplyPtr> r = command(cmd);
  if (!r.ok()) return r;
  // SCRIPT FLUSH, or a restarted server: send the text, which loads it again.
  if ((*r)->type == REDIS_REPLY_ERROR && reply_text(r->get()).starts_with("NOSCRIPT")) {
    cmd[0] = "EVAL";
    cmd[1] = scripts_[script];
    return command(cmd);
  }
  return r;
}

Result<std::vector<RedisReplyPtr>> RedisConnection::pipeline(
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
  std::vector<RedisReplyPtr> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(ctx_.get(), &reply) != REDIS_OK || reply == nullptr) return io_error();
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  return replies;
}

RedisClient::RedisClient(RedisTarget target, std::span<const char* const> scripts,
                         RedisTimeouts timeouts, size_t max_connections)
    : target_(std::move(target)),
      shown_(target_.shown()),
      scripts_(scripts),
      timeouts_(timeouts),
      pool_(max_connections,
            [this] { return RedisConnection::connect(target_, shown_, scripts_, timeouts_); }) {}

Status RedisClient::ping() {
  return with_connection([&](RedisConnection& c) -> Status {
    Result<RedisReplyPtr> r = c.command({"PING"});
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) return redis_error_status(shown_, r->get(), "PING");
    return Status::Ok();
  });
}

}  // namespace idforge::store
