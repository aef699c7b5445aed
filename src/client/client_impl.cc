#include "client/client_impl.h"

#include <unistd.h>

#include <algorithm>

namespace idforge::client {
namespace {

using std::chrono::milliseconds;

Status closed_error() { return Status::Unavailable("the client is closed"); }

int64_t ms_until(Clock::time_point at, Clock::time_point now) {
  return std::chrono::ceil<milliseconds>(at - now).count();
}

template <typename T>
std::vector<T> take_ids(FetchedIds& ids) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return std::move(ids.numbers);
  } else {
    return std::move(ids.texts);
  }
}

}  // namespace

ClientImpl::ClientImpl(const ClientOptions& options, std::vector<ServerAddress> servers,
                       uint64_t refill_below, const int wake_pipe[2])
    : options_(options),
      refill_below_(refill_below),
      buffered_(options.buffer && options.batch > 1),
      wake_read_(wake_pipe[0]),
      wake_write_(wake_pipe[1]),
      snowflake_(Kind::kSnowflake, "", options.max_age_ms),
      uuid7_(Kind::kUuid7, "", options.max_age_ms),
      ulid_(Kind::kUlid, "", options.max_age_ms) {
  for (ServerAddress& address : servers) {
    endpoints_.push_back(std::make_unique<Endpoint>(std::move(address), wake_read_, &closed_));
  }
  MutexLock lock(mu_);
  states_.resize(endpoints_.size());
}

ClientImpl::~ClientImpl() {
  closed_ = true;
  // Every request under way (on the refill thread) ends at once: its poll() wakes.
  const char byte = 1;
  while (::write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
  }
  std::thread thread;
  {
    MutexLock lock(queue_mu_);
    queue_cv_.notify_all();
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
  endpoints_.clear();
  ::close(wake_read_);
  ::close(wake_write_);
}

// ---- the IDs --------------------------------------------------------------------------

Result<uint64_t> ClientImpl::snowflake() {
  if (!buffered_) return request_one<uint64_t>(Kind::kSnowflake, "");
  return next(snowflake_);
}

Result<uint64_t> ClientImpl::segment(std::string_view tag) {
  if (tag.empty()) return Status::InvalidArgument("a segment tag is a non-empty name");
  if (!buffered_) return request_one<uint64_t>(Kind::kSegment, tag);
  return next(segment_buffer(tag));
}

Result<std::string> ClientImpl::uuid7() {
  if (!buffered_) return request_one<std::string>(Kind::kUuid7, "");
  return next(uuid7_);
}

Result<std::string> ClientImpl::ulid() {
  if (!buffered_) return request_one<std::string>(Kind::kUlid, "");
  return next(ulid_);
}

NumberBuffer& ClientImpl::segment_buffer(std::string_view tag) {
  MutexLock lock(segments_mu_);
  auto it = segments_.find(tag);
  if (it == segments_.end()) {
    it = segments_
             .emplace(std::string(tag),
                      std::make_unique<NumberBuffer>(Kind::kSegment, std::string(tag),
                                                     options_.segment_max_age_ms))
             .first;
  }
  return *it->second;
}

template <typename T>
Result<T> ClientImpl::request_one(Kind kind, std::string_view tag) {
  if (closed_) return closed_error();
  Fetch fetch = request(kind, tag, 1, /*must_try=*/true, std::nullopt);
  if (fetch.outcome != Fetch::Outcome::kIds) return fetch.error;
  std::vector<T> ids = take_ids<T>(fetch.ids);
  return std::move(ids.front());
}

template <typename T>
Result<T> ClientImpl::next(Buffer<T>& buf) {
  if (closed_) return closed_error();
  {
    MutexLock lock(buf.mu);
    if (std::optional<T> value = take_buffered(buf)) return std::move(*value);
  }
  return next_slow(buf);
}

template <typename T>
std::optional<T> ClientImpl::take_buffered(Buffer<T>& buf) {
  if (buf.max_age.count() > 0 && buf.size > 0) buf.expire(Clock::now());
  if (buf.size == 0) return std::nullopt;
  T value = buf.take();
  if (buf.size < refill_below_ && buf.state == RefillState::kIdle) queue_refill(buf);
  return value;
}

// The buffer is empty: wait for the refill in progress, or run one in this thread, for at
// most timeout_ms times the number of servers (a refill tries each server once).
template <typename T>
Result<T> ClientImpl::next_slow(Buffer<T>& buf) {
  const int64_t wait_ms = options_.timeout_ms * static_cast<int64_t>(endpoints_.size());
  const Clock::time_point deadline = Clock::now() + milliseconds(wait_ms);
  const std::string within = std::to_string(wait_ms) + " ms (timeout_ms x " +
                             std::to_string(endpoints_.size()) + " servers)";
  for (;;) {
    {
      MutexLock lock(buf.mu);
      if (closed_) return closed_error();
      if (std::optional<T> value = take_buffered(buf)) return std::move(*value);
      if (buf.state == RefillState::kRunning) {
        const uint64_t gen = buf.gen;
        typename Buffer<T>::Waiter waiter;
        buf.waiters.push_back(&waiter);
        bool out_of_time = false;
        while (!waiter.value && buf.gen == gen && !closed_) {
          if (Clock::now() >= deadline) {
            out_of_time = true;
            break;
          }
          lock.wait_until(buf.cv, deadline);
        }
        if (waiter.value) return std::move(*waiter.value);  // the refill took it off the list
        std::erase(buf.waiters, &waiter);
        if (out_of_time) {
          return Status::Unavailable(
              "no " + buf.what + " within " + within +
              ": the refill in progress has not finished; servers: " + describe_servers({}));
        }
        if (buf.size == 0 && buf.error) return *buf.error;
        continue;
      }
      // Idle, or queued for the refill thread: this thread runs it now (the refill
      // thread skips a buffer no longer queued), in the time left.
      if (deadline - Clock::now() <= milliseconds(1)) {
        return Status::Unavailable(
            "no " + buf.what + " within " + within +
            ": other callers took the IDs of the refills; servers: " + describe_servers({}));
      }
      buf.state = RefillState::kRunning;
    }
    Result<std::optional<T>> got = refill(buf, /*must_try=*/true, /*take_one=*/true, deadline);
    if (!got.ok()) return got.status();
    if (*got) return std::move(**got);
  }
}

template <typename T>
Result<std::optional<T>> ClientImpl::refill(Buffer<T>& buf, bool must_try, bool take_one,
                                            std::optional<Clock::time_point> deadline) {
  Fetch fetch = request(buf.kind, buf.tag, options_.batch, must_try, deadline);
  std::optional<T> value;
  MutexLock lock(buf.mu);
  buf.state = RefillState::kIdle;
  ++buf.gen;
  if (fetch.outcome == Fetch::Outcome::kIds) {
    ++buf.refills;
    buf.error.reset();
    buf.retry_at = {};
    if (!closed_) {
      std::vector<T> ids = take_ids<T>(fetch.ids);
      size_t i = 0;
      if (take_one) value = std::move(ids[i++]);
      while (i < ids.size() && !buf.waiters.empty()) {
        buf.waiters.front()->value = std::move(ids[i++]);
        buf.waiters.pop_front();
      }
      if (i < ids.size()) {
        buf.size += ids.size() - i;
        buf.chunks.push_back({fetch.sent_at, std::move(ids), i});
      }
    }
  } else if (fetch.outcome == Fetch::Outcome::kError) {
    buf.error = fetch.error;
    buf.retry_at = retry_time(&fetch.error);
  } else {
    // Nothing tried (the background, every server backing off): a caller that finds the
    // buffer empty tries, rather than failing.
    buf.error.reset();
    buf.retry_at = retry_time(nullptr);
  }
  buf.cv.notify_all();
  if (fetch.outcome == Fetch::Outcome::kError) return fetch.error;
  return value;
}

template <typename T>
void ClientImpl::queue_refill(Buffer<T>& buf) {
  if (closed_ || Clock::now() < buf.retry_at) return;
  buf.state = RefillState::kQueued;
  MutexLock lock(queue_mu_);
  if constexpr (std::is_same_v<T, uint64_t>) {
    queue_.emplace_back(&buf, nullptr);
  } else {
    queue_.emplace_back(nullptr, &buf);
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { refill_loop(); });
  queue_cv_.notify_one();
}

void ClientImpl::refill_loop() {
  const auto run = [this](auto& buf) {
    {
      MutexLock lock(buf.mu);
      if (buf.state != RefillState::kQueued) return;  // a caller runs it already
      buf.state = RefillState::kRunning;
    }
    // A failure is kept in buf.error: a caller meets it when the buffer is empty.
    refill(buf, /*must_try=*/false, /*take_one=*/false, std::nullopt).status().ignore_error();
  };
  for (;;) {
    std::pair<NumberBuffer*, TextBuffer*> next{nullptr, nullptr};
    {
      MutexLock lock(queue_mu_);
      while (queue_.empty() && !closed_) lock.wait_for(queue_cv_, std::chrono::seconds(10));
      if (closed_) return;
      next = queue_.front();
      queue_.pop_front();
    }
    if (next.first != nullptr) {
      run(*next.first);
    } else {
      run(*next.second);
    }
  }
}

// ---- failover -------------------------------------------------------------------------

ClientImpl::Fetch ClientImpl::request(Kind kind, std::string_view tag, uint64_t count,
                                      bool must_try, std::optional<Clock::time_point> deadline) {
  const size_t n = endpoints_.size();
  size_t start = 0;
  {
    MutexLock lock(mu_);
    start = current_;
  }
  std::vector<std::optional<std::string>> tried(n);
  bool any = false;
  Fetch fetch;
  // Returns true when the attempt ended the request (IDs, or a wrong request).
  const auto run = [&](size_t i) {
    Attempt got = attempt(i, kind, tag, count, deadline, &fetch.sent_at);
    any = true;
    if (got.outcome == Attempt::Outcome::kIds) {
      fetch.outcome = Fetch::Outcome::kIds;
      fetch.ids = std::move(got.ids);
      return true;
    }
    if (got.outcome == Attempt::Outcome::kWrongRequest) {
      fetch.outcome = Fetch::Outcome::kError;
      fetch.error = std::move(got.error);
      return true;
    }
    tried[i] = std::move(got.reason);
    return false;
  };
  const auto out_of_time = [&] { return deadline && *deadline - Clock::now() <= milliseconds(1); };

  // The servers not backing off, in list order from the one that answered last.
  for (size_t k = 0; k < n && !closed_; ++k) {
    const size_t i = (start + k) % n;
    bool backing_off = false;
    {
      MutexLock lock(mu_);
      backing_off = Clock::now() < states_[i].until;
    }
    if (backing_off) continue;
    if (out_of_time()) break;
    if (run(i)) return fetch;
  }
  if (must_try) {
    // Every server left is backing off: a caller waiting for an ID tries them too, the one
    // whose period ends first first, so that a server just back answers.
    while (!closed_ && !out_of_time()) {
      std::optional<size_t> pick;
      {
        MutexLock lock(mu_);
        for (size_t i = 0; i < n; ++i) {
          if (!tried[i] && (!pick || states_[i].until < states_[*pick].until)) pick = i;
        }
      }
      if (!pick) break;
      if (run(*pick)) return fetch;
    }
  } else if (!any) {
    fetch.outcome = Fetch::Outcome::kNothingTried;
    return fetch;
  }
  fetch.outcome = Fetch::Outcome::kError;
  if (closed_) {
    fetch.error = closed_error();
    return fetch;
  }
  fetch.error = Status::Unavailable("no idforge server could give " + describe_ids(kind, tag) +
                                    ": " + describe_servers(tried));
  return fetch;
}

Attempt ClientImpl::attempt(size_t index, Kind kind, std::string_view tag, uint64_t count,
                            std::optional<Clock::time_point> deadline, Clock::time_point* sent_at) {
  const Clock::time_point started = Clock::now();
  int64_t timeout_ms = options_.timeout_ms;
  if (deadline) timeout_ms = std::clamp<int64_t>(ms_until(*deadline, started), 1, timeout_ms);
  Attempt got = endpoints_[index]->fetch(kind, tag, count, timeout_ms);
  *sent_at = started;
  if (got.outcome == Attempt::Outcome::kFailed) {
    if (!closed_) failed(index, got.reason, started);
  } else {
    answered(index);  // a wrong request too: the server is well
  }
  return got;
}

void ClientImpl::answered(size_t index) {
  MutexLock lock(mu_);
  ServerState& s = states_[index];
  s.failures = 0;
  s.until = {};
  s.last_error.clear();
  current_ = index;
}

void ClientImpl::failed(size_t index, const std::string& reason, Clock::time_point started) {
  MutexLock lock(mu_);
  ServerState& s = states_[index];
  const Clock::time_point now = Clock::now();
  s.last_error = reason;
  // A request sent before a failure already counted (concurrent requests caught by one
  // outage) is part of that failure, not another one in a row.
  if (s.failures > 0 && s.last_failure >= started) return;
  ++s.failures;
  const int shift = static_cast<int>(std::min<uint64_t>(s.failures - 1, 40));
  const int64_t period = options_.backoff_ms > (options_.max_backoff_ms >> shift)
                             ? options_.max_backoff_ms
                             : options_.backoff_ms << shift;
  s.until = now + milliseconds(period);
  s.last_failure = now;
}

Clock::time_point ClientImpl::retry_time(const Status* error) {
  const Clock::time_point now = Clock::now();
  if (error != nullptr && error->code() != StatusCode::kUnavailable) {
    return now + milliseconds(options_.backoff_ms);  // a wrong request: not on every call
  }
  MutexLock lock(mu_);
  Clock::time_point first = states_.front().until;
  for (const ServerState& s : states_) first = std::min(first, s.until);
  return std::max(now, first);
}

std::string ClientImpl::describe_servers(
    const std::vector<std::optional<std::string>>& tried) const {
  const Clock::time_point now = Clock::now();
  std::string out;
  MutexLock lock(mu_);
  for (size_t i = 0; i < states_.size(); ++i) {
    const ServerState& s = states_[i];
    if (!out.empty()) out += "; ";
    out += endpoints_[i]->url();
    if (i < tried.size() && tried[i]) {
      out += " failed: " + *tried[i];
    } else if (s.until > now) {
      out += " skipped: backing off " + std::to_string(ms_until(s.until, now)) + " ms more after " +
             std::to_string(s.failures) + (s.failures == 1 ? " failure" : " failures") +
             " in a row (last: " + s.last_error + ")";
    } else if (!s.last_error.empty()) {
      out += " last failed: " + s.last_error;
    } else {
      out += " not tried";
    }
  }
  return out;
}

// ---- looking inside -------------------------------------------------------------------

namespace {

template <typename T>
ClientBufferState buffer_state(const Buffer<T>& buf) {
  ClientBufferState out;
  out.kind = std::string(kind_name(buf.kind));
  out.tag = buf.tag;
  MutexLock lock(buf.mu);
  out.size = buf.size;
  out.dropped = buf.dropped;
  out.refills = buf.refills;
  out.refilling = buf.state != RefillState::kIdle;
  if (buf.error) out.last_error = buf.error->message();
  return out;
}

}  // namespace

ClientStats ClientImpl::stats() const {
  ClientStats out;
  const Clock::time_point now = Clock::now();
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < states_.size(); ++i) {
      const ServerState& s = states_[i];
      out.servers.push_back({endpoints_[i]->url(), s.failures,
                             std::max<int64_t>(0, ms_until(s.until, now)), s.last_error,
                             i == current_});
    }
  }
  out.buffers.push_back(buffer_state(snowflake_));
  out.buffers.push_back(buffer_state(uuid7_));
  out.buffers.push_back(buffer_state(ulid_));
  std::vector<const NumberBuffer*> segments;
  {
    MutexLock lock(segments_mu_);
    for (const auto& [tag, buf] : segments_) segments.push_back(buf.get());
  }
  for (const NumberBuffer* buf : segments) out.buffers.push_back(buffer_state(*buf));
  return out;
}

}  // namespace idforge::client
