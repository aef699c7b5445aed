#include "redis/redis_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/text.h"

namespace idforge::redis {
namespace {

timeval to_timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

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
    const RedisTimeouts& timeouts, const std::atomic<uint64_t>* epoch) {
  redisContext* raw =
      redisConnectWithTimeout(target.host.c_str(), target.port, to_timeval(timeouts.connect_ms));
  std::unique_ptr<RedisConnection> conn(new RedisConnection(raw, shown, scripts, epoch));
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
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr r, conn->command(args));
    if (r->type == REDIS_REPLY_ERROR) return redis_error_status(shown, r.get(), doing);
    return r;
  };
  if (!target.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!target.user.empty()) auth.push_back(target.user);
    auth.push_back(target.password);
    IDFORGE_RETURN_IF_ERROR(expect_ok(auth, "AUTH"));
  }
  if (target.db != 0) {
    IDFORGE_RETURN_IF_ERROR(expect_ok({"SELECT", std::to_string(target.db)}, "SELECT"));
  }
  for (const char* script : scripts) {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr r,
                             expect_ok({"SCRIPT", "LOAD", script}, "loading a script"));
    if (r->type != REDIS_REPLY_STRING) {
      return Status::IoError(fmt::format("{}: SCRIPT LOAD did not return a hash", shown));
    }
    conn->shas_.emplace_back(reply_text(r.get()));
  }
  return conn;
}

bool RedisConnection::looks_alive() const {
  if (broken()) return false;
  if (epoch_ != nullptr && epoch_->load() != born_) return false;
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
  RedisReplyPtr r(static_cast<redisReply*>(reply));
  note_reply(r.get());
  return r;
}

void RedisConnection::note_reply(const redisReply* r) {
  // A write to a replica, also from inside a script ("READONLY You can't write against
  // a read only replica. script: ..."): the primary we connected to was demoted.
  if (r->type == REDIS_REPLY_ERROR && reply_text(r).starts_with("READONLY")) demoted_ = true;
}

Result<RedisReplyPtr> RedisConnection::eval(size_t script, const std::vector<std::string>& keys,
                                            const std::vector<std::string>& args) {
  if (script >= shas_.size()) {
    return Status::Internal(fmt::format("{}: no script number {}", shown_, script));
  }
  std::vector<std::string> cmd = {"EVALSHA", shas_[script], std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr r, command(cmd));
  // SCRIPT FLUSH, or a restarted server: send the text, which loads it again.
  if (r->type == REDIS_REPLY_ERROR && reply_text(r.get()).starts_with("NOSCRIPT")) {
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
    note_reply(replies.back().get());
  }
  return replies;
}

RedisClient::RedisClient(RedisTarget target, std::span<const char* const> scripts,
                         RedisTimeouts timeouts, size_t max_connections)
    : target_(std::move(target)),
      shown_(target_.shown()),
      scripts_(scripts),
      timeouts_(timeouts),
      pool_(max_connections, [this] { return connect(); }) {}

Result<std::unique_ptr<RedisConnection>> RedisClient::connect() {
  if (target_.via_sentinels()) return connect_via_sentinels();
  return RedisConnection::connect(target_, shown_, scripts_, timeouts_);
}

void RedisClient::note_failure(const RedisConnection& conn) {
  // The primary may have changed: no connection made before now is used again, so the
  // next calls ask the Sentinels afresh. (A direct redis:// target has only one server.)
  if (target_.via_sentinels() && conn.broken()) epoch_.fetch_add(1);
}

namespace {

using Steady = std::chrono::steady_clock;

int ms_left(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::max<int64_t>(left, 0));
}

// Asks one Sentinel where `name`'s primary is. The error says why not, without naming
// the Sentinel (the caller does).
Result<RedisAddress> ask_sentinel(const RedisAddress& sentinel, const std::string& name,
                                  int connect_ms, int command_ms) {
  struct ContextFree {
    void operator()(redisContext* c) const { redisFree(c); }
  };
  std::unique_ptr<redisContext, ContextFree> ctx(
      redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, to_timeval(connect_ms)));
  if (ctx == nullptr) return Status::Unavailable("cannot allocate a connection");
  if (ctx->err != 0) return Status::Unavailable(fmt::format("cannot connect: {}", ctx->errstr));
  if (redisSetTimeout(ctx.get(), to_timeval(command_ms)) != REDIS_OK) {
    return Status::Unavailable(fmt::format("cannot set a timeout: {}", ctx->errstr));
  }
  SigpipeGuard guard;
  const char* argv[] = {"SENTINEL", "get-master-addr-by-name", name.c_str()};
  const size_t lens[] = {8, 23, name.size()};
  RedisReplyPtr reply(static_cast<redisReply*>(redisCommandArgv(ctx.get(), 3, argv, lens)));
  if (reply == nullptr) return Status::Unavailable(fmt::format("no answer: {}", ctx->errstr));
  const redisReply* r = reply.get();
  if (r->type == REDIS_REPLY_NIL) {
    return Status::NotFound(fmt::format("knows no master named '{}'", name));
  }
  if (r->type == REDIS_REPLY_ERROR) {
    const std::string_view text = reply_text(r);
    return Status::IoError(
        fmt::format("answered '{}'{}", text,
                    text.starts_with("NOAUTH") ? " (idforge sends no password to Sentinels)"
                    : text.find("unknown command") != std::string_view::npos ? " (not a Sentinel?)"
                                                                             : ""));
  }
  RedisAddress primary;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
      !text::parse_int(reply_text(r->element[1]), &primary.port)) {
    return Status::IoError("gave an answer that is not a host and port (not a Sentinel?)");
  }
  primary.host = std::string(reply_text(r->element[0]));
  return primary;
}

// ROLE's first element: "master", "slave" or "sentinel"; empty when it is none of those.
std::string role_of(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
      r->element[0]->type != REDIS_REPLY_STRING) {
    return "";
  }
  return std::string(reply_text(r->element[0]));
}

}  // namespace

Result<std::unique_ptr<RedisConnection>> RedisClient::connect_via_sentinels() {
  // One connection's worth of time in all, however many Sentinels there are, so a
  // caller that bounded its wait by the timeouts is not held longer.
  const auto started = Steady::now();
  const auto deadline =
      started + std::chrono::milliseconds(timeouts_.connect_ms + timeouts_.command_ms);
  const std::vector<RedisAddress>& sentinels = target_.sentinels;
  const size_t first = good_sentinel_.load() % sentinels.size();
  std::vector<std::string> tried;
  std::vector<std::string> primaries;
  for (size_t k = 0; k < sentinels.size(); ++k) {
    const size_t i = (first + k) % sentinels.size();
    const std::string sentinel = "Sentinel " + sentinels[i].shown();
    int left = ms_left(deadline);
    if (left <= 0) {
      tried.push_back(fmt::format("no time left to ask {}", sentinel));
      continue;
    }
    Result<RedisAddress> named =
        ask_sentinel(sentinels[i], target_.master_name, std::min(left, timeouts_.connect_ms),
                     std::min(left, timeouts_.command_ms));
    if (!named.ok()) {
      tried.push_back(fmt::format("{} {}", sentinel, named.status().message()));
      continue;
    }
    const std::string primary = named->shown();
    if (std::find(primaries.begin(), primaries.end(), primary) != primaries.end()) {
      tried.push_back(fmt::format("{} names {} too", sentinel, primary));
      continue;
    }
    primaries.push_back(primary);
    left = ms_left(deadline);
    RedisTarget direct = target_;
    direct.sentinels.clear();
    direct.host = named->host;
    direct.port = named->port;
    RedisTimeouts timeouts = timeouts_;
    timeouts.connect_ms = std::max(1, std::min(left, timeouts_.connect_ms));
    const std::string shown = fmt::format("{} (primary {})", shown_, primary);
    Result<std::unique_ptr<RedisConnection>> conn =
        RedisConnection::connect(direct, shown, scripts_, timeouts, &epoch_);
    std::string why;
    if (conn.ok()) {
      Result<RedisReplyPtr> role = (*conn)->command({"ROLE"});
      if (!role.ok()) {
        why = role.status().message();
      } else {
        const std::string name = role_of(role->get());
        if (name == "master") {
          good_sentinel_.store(i);
          return conn;
        }
        why = name == "slave" ? "it is a replica (a failover under way?)"
                              : fmt::format("ROLE answers '{}', not master",
                                            name.empty() ? "something else" : name);
      }
    } else {
      why = conn.status().message();
    }
    // The connection's own errors start with its name; the list names it once.
    if (why.starts_with(shown + ": ")) why = why.substr(shown.size() + 2);
    tried.push_back(fmt::format("{} names {}: {}", sentinel, primary, why));
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : "; ") + t;
  return Status::Unavailable(fmt::format(
      "{}: no primary for '{}' within {} ms: {}", shown_, target_.master_name,
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - started).count(),
      list));
}

Status RedisClient::ping() {
  return with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr r, c.command({"PING"}));
    if (r->type == REDIS_REPLY_ERROR) return redis_error_status(shown_, r.get(), "PING");
    return Status::Ok();
  });
}

}  // namespace idforge::redis
