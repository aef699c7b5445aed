#include "coord/lease_keeper.h"

#include <fmt/format.h>

#include <algorithm>

namespace idforge::coord {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kMinRetry{10};

int64_t ms_between(std::chrono::steady_clock::time_point from,
                   std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

int64_t positive_or(int64_t value, int64_t fallback) { return value > 0 ? value : fallback; }

// A lease without a TTL (a backend's bug) would make every interval 0 and the renew
// loop spin; treat it as the registries' default. A short TTL is kept as it is: a
// longer one would fence too late.
constexpr int64_t kDefaultTtlMs = 10'000;

Lease sane(Lease lease) {
  if (lease.ttl_ms <= 0) lease.ttl_ms = kDefaultTtlMs;
  return lease;
}

}  // namespace

Result<LeaseNodeFields> lease_node_fields(const Layout& layout) {
  std::vector<const Field*> nodes;
  for (const Field& f : layout.fields()) {
    if (f.role == FieldRole::kNode) nodes.push_back(&f);
  }
  if (nodes.empty()) {
    return Status::InvalidArgument(fmt::format(
        "layout {} has no node field, so there is no worker id to lease", layout.name()));
  }
  if (nodes.size() > 2) {
    return Status::InvalidArgument(fmt::format(
        "layout {} has {} node fields; a worker lease fills at most two (worker and datacenter)",
        layout.name(), nodes.size()));
  }
  const Field* worker = nodes[0];
  const Field* datacenter = nodes.size() == 2 ? nodes[1] : nullptr;
  // Names win over positions: twitter's datacenter field comes first.
  if (datacenter != nullptr && (datacenter->name == "worker" || worker->name == "datacenter")) {
    std::swap(worker, datacenter);
  }
  LeaseNodeFields out;
  out.worker_field = worker->name;
  out.space.worker_bits = worker->bits;
  out.datacenter_field = datacenter != nullptr ? datacenter->name : "";
  out.space.datacenter_bits = datacenter != nullptr ? datacenter->bits : 0;
  return out;
}

std::vector<std::pair<std::string, uint64_t>> lease_node_values(const LeaseNodeFields& fields,
                                                                const Lease& lease) {
  std::vector<std::pair<std::string, uint64_t>> values = {{fields.worker_field, lease.worker}};
  if (!fields.datacenter_field.empty())
    values.emplace_back(fields.datacenter_field, lease.datacenter);
  return values;
}

int64_t fence_margin_ms(int64_t ttl_ms) { return std::max<int64_t>(ttl_ms / 20, 50); }

int64_t default_fence_after_ms(int64_t ttl_ms) {
  return std::max<int64_t>(ttl_ms - fence_margin_ms(ttl_ms), 1);
}

bool is_lease_lost(const Status& status) {
  return status.code() == StatusCode::kLeaseLost || status.code() == StatusCode::kNotFound;
}

LeaseKeeper::LeaseKeeper(WorkerRegistry& registry, Lease lease, KeeperOptions options)
    : registry_(registry),
      lease_(sane(std::move(lease))),
      renew_every_(positive_or(options.renew_every_ms, std::max<int64_t>(lease_.ttl_ms / 3, 1))),
      // A fence deadline at or past the TTL would let the coordinator hand the slot on
      // while we still issue; fall back to the safe default.
      fence_after_(options.fence_after_ms > 0 && options.fence_after_ms < lease_.ttl_ms
                       ? options.fence_after_ms
                       : default_fence_after_ms(lease_.ttl_ms)),
      retry_every_(std::max(kMinRetry, std::min(renew_every_, milliseconds(lease_.ttl_ms / 10)))),
      start_ready_at_(
          (options.acquired_at == TimePoint{} ? SteadyClock::now() : options.acquired_at) +
          milliseconds(std::max<int64_t>(lease_.start_delay_ms, 0))),
      on_lost_(std::move(options.on_lost)),
      last_ok_(options.acquired_at == TimePoint{} ? SteadyClock::now() : options.acquired_at),
      confirmed_mark_(lease_.high_water_ms),
      mark_layout_(lease_.high_water_layout),
      confirmed_layout_(lease_.high_water_layout) {
  renew_thread_ = std::thread([this] { renew_loop(); });
  watch_thread_ = std::thread([this] { watch_loop(); });
}

LeaseKeeper::~LeaseKeeper() { stop().ignore_error(); }

int64_t LeaseKeeper::mark_to_send_locked() const {
  int64_t mark = std::max(confirmed_mark_, requested_mark_);
  if (generator_ != nullptr) mark = std::max(mark, generator_->reserved_until_ms());
  return mark;
}

LeaseState LeaseKeeper::state_locked(TimePoint now) const {
  if (stopping_) return LeaseState::kStopped;
  if (lost_) return LeaseState::kLost;
  if (now < start_ready_at_) return LeaseState::kWaiting;
  if (now - last_ok_ >= fence_after_) return LeaseState::kOverdue;
  return LeaseState::kHeld;
}

LeaseKeeper::Fence LeaseKeeper::decide_locked(TimePoint now) const {
  Fence f;
  f.why = state_locked(now);
  f.fenced = f.why != LeaseState::kHeld;
  switch (f.why) {
    case LeaseState::kStopped:
      f.reason = fmt::format("the worker lease for slot {} was released", lease_.slot);
      break;
    case LeaseState::kLost:
      f.reason = fmt::format(
          "the worker lease for slot {} is lost ({}); this node issues no IDs until it holds a "
          "lease again",
          lease_.slot, last_error_);
      break;
    case LeaseState::kWaiting:
      f.reason = fmt::format(
          "waiting {} ms after acquiring the worker lease for slot {} before issuing IDs (a "
          "previous holder may not have fenced itself yet)",
          lease_.start_delay_ms, lease_.slot);
      break;
    case LeaseState::kOverdue:
      f.reason = fmt::format("worker lease for slot {} not renewed for {} ms: {}", lease_.slot,
                             ms_between(last_ok_, now),
                             last_error_.empty() ? "the renew has not answered" : last_error_);
      break;
    case LeaseState::kHeld:
      break;
  }
  return f;
}

void LeaseKeeper::apply_fence() {
  MutexLock serial(fence_mu_);
  Fence want;
  SnowflakeGenerator* generator;
  {
    MutexLock lock(mu_);
    want = decide_locked(SteadyClock::now());
    generator = generator_;
  }
  if (generator == nullptr) return;
  if (want.fenced == applied_.fenced && want.why == applied_.why) return;
  if (want.fenced) {
    generator->fence(want.reason);
  } else {
    generator->unfence();
  }
  applied_ = std::move(want);
  {
    MutexLock lock(mu_);
    applied_why_ = applied_.why;
    if (applied_.why == LeaseState::kOverdue) {
      ++overdue_fences_;
      overdue_reason_ = applied_.reason;
    }
  }
  renew_cv_.notify_all();  // the renew thread writes the change to the log
}

void LeaseKeeper::attach(SnowflakeGenerator* generator) {
  {
    MutexLock lock(mu_);
    generator_ = generator;
  }
  {
    // The generator starts unfenced; make `applied_` say so before deciding.
    MutexLock serial(fence_mu_);
    applied_ = Fence{};
    MutexLock lock(mu_);
    applied_why_ = LeaseState::kHeld;
  }
  apply_fence();
  watch_cv_.notify_all();
}

Status LeaseKeeper::reserve_issue_ahead(int64_t ahead_ms) {
  const int64_t fence =
      lease_.ttl_ms - fence_margin_ms(lease_.ttl_ms) - std::max<int64_t>(ahead_ms, 0);
  if (fence < lease_.ttl_ms / 2) {
    return Status::InvalidArgument(fmt::format(
        "the worker lease's ttl_ms {} is too short for max_drift_ms {} (IDs that run that far "
        "ahead of the clock): "
        "with this registry the next holder of a slot is kept apart by timing (it waits out "
        "the TTL), so a holder must fence that much before the TTL ends, leaving it {} ms of "
        "a {} ms lease; use ttl_ms of at least {} or a max_drift_ms of at most {}",
        lease_.ttl_ms, ahead_ms, std::max<int64_t>(fence, 0), lease_.ttl_ms,
        std::max<int64_t>(2 * (ahead_ms + 50), (ahead_ms * 20 + 8) / 9),
        lease_.ttl_ms / 2 - fence_margin_ms(lease_.ttl_ms)));
  }
  {
    MutexLock lock(mu_);
    fence_after_ = std::min(fence_after_, milliseconds(fence));
  }
  watch_cv_.notify_all();
  apply_fence();
  return Status::Ok();
}

int64_t LeaseKeeper::fence_after_ms() const {
  MutexLock lock(mu_);
  return fence_after_.count();
}

Status LeaseKeeper::store_mark(int64_t unix_ms, const std::string& layout) {
  MutexLock lock(mu_);
  // A new layout must reach the registry before the generator issues under it, even
  // when the time does not rise: the stored mark is read in its layout's terms.
  const bool layout_done = layout.empty() || layout == confirmed_layout_;
  if (lost_) return Status::Unavailable(decide_locked(SteadyClock::now()).reason);
  if (stopping_) {
    return Status::Unavailable(
        fmt::format("the worker lease for slot {} is being released", lease_.slot));
  }
  if (unix_ms <= confirmed_mark_ && layout_done) return Status::Ok();
  if (!layout.empty()) mark_layout_ = layout;
  requested_mark_ = std::max(requested_mark_, unix_ms);
  const uint64_t mine = ++requests_;
  renew_cv_.notify_one();
  // Never wait past the fence deadline: the generator holds its own lock while it
  // stores, and the watchdog needs that lock to fence it.
  while (served_ < mine && !lost_ && !stopping_) {
    const TimePoint deadline = last_ok_ + fence_after_;
    if (SteadyClock::now() >= deadline) {
      return Status::Unavailable(
          fmt::format("worker lease for slot {} not renewed for {} ms: {}", lease_.slot,
                      ms_between(last_ok_, SteadyClock::now()),
                      last_error_.empty() ? "the renew has not answered" : last_error_));
    }
    lock.wait_until(done_cv_, deadline);
  }
  if (confirmed_mark_ >= unix_ms && (layout.empty() || layout == confirmed_layout_)) {
    return Status::Ok();
  }
  if (!last_result_.ok()) return last_result_;
  return Status::Unavailable(
      fmt::format("the worker lease for slot {} could not store the high-water mark", lease_.slot));
}

void LeaseKeeper::log_renew(const Status& st, bool lost, int64_t since_ok_ms) {
  const std::string registry = registry_.describe();
  if (st.ok()) {
    renew_failures_.recover(log::Level::kInfo, "lease.renewed",
                            {{"slot", lease_.slot}, {"registry", registry}});
  } else if (lost) {
    renew_failures_.flush();
    log::error("lease.lost", {{"slot", lease_.slot},
                              {"registry", registry},
                              {"error", st.message().empty() ? st.to_string() : st.message()}});
  } else {
    renew_failures_.fail(log::Level::kWarn, "lease.renew_failed",
                         {{"slot", lease_.slot},
                          {"registry", registry},
                          {"error", st.message().empty() ? st.to_string() : st.message()},
                          {"since_renew_ms", since_ok_ms},
                          {"fence_after_ms", fence_after_ms()}});
  }
}

void LeaseKeeper::renew_loop() {
  MutexLock lock(mu_);
  TimePoint next = last_ok_ + renew_every_;
  uint64_t logged_fences = 0;  // overdue_fences_ as last written to the log
  bool logged_fenced = false;  // whether the log last said fenced
  while (!stopping_) {
    // The waits below end at least every kRoundEvery, so last_round() stays fresh while
    // this thread is healthy, however long the TTL (see last_round()).
    const TimePoint round = SteadyClock::now();
    last_round_.store(round.time_since_epoch().count(), std::memory_order_relaxed);
    // Fences the watchdog applied since the last round, written here (without mu_).
    if (overdue_fences_ != logged_fences ||
        (logged_fenced && applied_why_ != LeaseState::kOverdue)) {
      const uint64_t fences = overdue_fences_;
      const LeaseState why = applied_why_;
      const std::string reason = overdue_reason_;
      lock.unlock();
      if (fences != logged_fences) {
        log::error("lease.fenced",
                   {{"slot", lease_.slot}, {"registry", registry_.describe()}, {"reason", reason}});
      }
      if (why == LeaseState::kHeld) {
        log::info("lease.unfenced", {{"slot", lease_.slot}, {"registry", registry_.describe()}});
      }
      lock.lock();
      logged_fences = fences;
      logged_fenced = why == LeaseState::kOverdue;
      continue;
    }
    if (lost_) {
      lock.wait_until(renew_cv_, round + kRoundEvery);
      continue;
    }
    if (served_ >= requests_ && round < next) {
      lock.wait_until(renew_cv_, std::min(next, round + kRoundEvery));
      continue;
    }
    const uint64_t covering = requests_;
    const int64_t mark = mark_to_send_locked();
    Lease sending = lease_;
    sending.high_water_layout = mark_layout_;
    lock.unlock();
    const TimePoint sent = SteadyClock::now();
    Status st = registry_.renew(sending, mark);
    lock.lock();

    served_ = std::max(served_, covering);
    last_result_ = st;
    bool became_lost = false;
    if (st.ok()) {
      last_ok_ = std::max(last_ok_, sent);
      confirmed_mark_ = std::max(confirmed_mark_, mark);
      confirmed_layout_ = sending.high_water_layout;
      ++renewals_;
      next = sent + renew_every_;
    } else {
      ++failures_;
      last_error_ = st.message().empty() ? st.to_string() : st.message();
      if (is_lease_lost(st)) {
        lost_ = true;
        became_lost = true;
      }
      next = SteadyClock::now() + retry_every_;
    }
    done_cv_.notify_all();
    watch_cv_.notify_all();
    // Logged without mu_: status() and store() never wait on stderr.
    const int64_t since_ok_ms = ms_between(last_ok_, SteadyClock::now());
    lock.unlock();
    log_renew(st, became_lost, since_ok_ms);
    if (became_lost && on_lost_) on_lost_(st);
    lock.lock();
  }
}

void LeaseKeeper::watch_loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    apply_fence();
    lock.lock();
    if (stopping_) break;
    const TimePoint now = SteadyClock::now();
    // Something changed while we were applying: apply again rather than sleep on it.
    if (generator_ != nullptr && state_locked(now) != applied_why_) continue;
    TimePoint wake = TimePoint::max();
    if (now < start_ready_at_) wake = start_ready_at_;
    const TimePoint overdue_at = last_ok_ + fence_after_;
    if (!lost_ && now < overdue_at) wake = std::min(wake, overdue_at);
    if (wake == TimePoint::max()) {
      lock.wait(watch_cv_);
    } else {
      lock.wait_until(watch_cv_, wake);
    }
  }
}

Status LeaseKeeper::stop() {
  MutexLock serial(stop_mu_);
  if (stopped_) return stop_result_;
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  renew_cv_.notify_all();
  watch_cv_.notify_all();
  done_cv_.notify_all();
  if (renew_thread_.joinable()) renew_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  apply_fence();  // no ID after the release below

  int64_t mark;
  bool lost;
  int64_t confirmed;
  // The real mark: the fenced generator's last ID (the caller has no next() in flight:
  // the server drains its requests first), and never below what the slot had when it
  // was acquired. The reservation kept ahead of it was never used, and leaving it would
  // make the next start wait for it (up to the whole fence window on a coordinator).
  int64_t final_mark = -1;
  Lease sending = lease_;
  {
    MutexLock lock(mu_);
    mark = mark_to_send_locked();
    lost = lost_;
    confirmed = confirmed_mark_;
    sending.high_water_layout = mark_layout_;
    if (generator_ != nullptr) {
      const int64_t last = generator_->last_unix_ms();
      final_mark = std::max(last, lease_.high_water_ms);
      // Nothing issued at or above the mark found at acquire: it is released as it was,
      // in the layout it was written in. Labelled with this run's layout, an earlier
      // layout's mark would be read in the wrong terms by the next start, which could then
      // issue IDs the earlier run issued (model/snowflake.pml, NO_STOP_LAYOUT).
      if (last < lease_.high_water_ms) sending.high_water_layout = lease_.high_water_layout;
    }
  }
  Status result;
  renew_failures_.flush();
  // A lost lease may be someone else's by now: leave it alone.
  if (!lost && final_mark >= 0) {
    result = registry_.release_at_mark(sending, final_mark);
  } else if (!lost) {
    if (mark > confirmed) result = registry_.renew(sending, mark);
    Status released = registry_.release(lease_);
    if (result.ok()) result = released;
  }
  if (!lost) {
    if (result.ok()) {
      log::info("lease.released", {{"slot", lease_.slot}, {"registry", registry_.describe()}});
    } else {
      log::warn(
          "lease.release_failed",
          {{"slot", lease_.slot}, {"registry", registry_.describe()}, {"error", result.message()}});
    }
  }
  stopped_ = true;
  stop_result_ = result;
  return result;
}

std::chrono::steady_clock::time_point LeaseKeeper::last_round() const {
  return TimePoint(SteadyClock::duration(last_round_.load(std::memory_order_relaxed)));
}

KeeperStatus LeaseKeeper::status() const {
  MutexLock lock(mu_);
  const TimePoint now = SteadyClock::now();
  KeeperStatus s;
  s.state = state_locked(now);
  s.since_renew_ms = ms_between(last_ok_, now);
  s.fence_after_ms = fence_after_.count();
  s.start_delay_left_ms = std::max<int64_t>(0, ms_between(now, start_ready_at_));
  s.renewals = renewals_;
  s.failures = failures_;
  s.last_error = last_error_;
  return s;
}

}  // namespace idforge::coord
