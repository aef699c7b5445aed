// SnowflakeGeneratorImpl (snowflake_impl.h): creation, the start above the stored mark,
// the reservation, fencing and the read-outs. Issuing past the inline fast path is in
// snowflake_claim.cc; the trusted time and marks of other layouts in snowflake_mark.cc.
#include "idforge/snowflake.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "idforge/time_format.h"
#include "snowflake_impl.h"
#include "snowflake_mark.h"

namespace idforge {
namespace {

constexpr uint64_t kNoReserveLimit = std::numeric_limits<uint64_t>::max();

// A clock that never steps; CLOCK_BOOTTIME also runs while the machine is suspended,
// so a resumed machine's clock is not mistaken for a jump.
int64_t boot_ms() {
  timespec ts{};
#ifdef CLOCK_BOOTTIME
  clock_gettime(CLOCK_BOOTTIME, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace

std::string_view policy_name(RollbackPolicy policy) {
  switch (policy) {
    case RollbackPolicy::kLogical:
      return "logical";
    case RollbackPolicy::kWait:
      return "wait";
    case RollbackPolicy::kReject:
      return "reject";
    case RollbackPolicy::kRing:
      return "ring";
  }
  return "unknown";
}

Result<RollbackPolicy> parse_policy(std::string_view name) {
  for (auto p : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                 RollbackPolicy::kRing}) {
    if (name == policy_name(p)) return p;
  }
  return Status::InvalidArgument("unknown rollback policy '" + std::string(name) +
                                 "' (policies: logical, wait, reject, ring)");
}

SnowflakeGenerator::~SnowflakeGenerator() = default;

Result<std::unique_ptr<SnowflakeGenerator>> SnowflakeGenerator::create(SnowflakeOptions options) {
  return create_snowflake_generator(std::move(options), SnowflakeInternals{});
}

Result<std::unique_ptr<SnowflakeGenerator>> create_snowflake_generator(
    SnowflakeOptions options, SnowflakeInternals internals) {
  Result<std::unique_ptr<SnowflakeGeneratorImpl>> made =
      SnowflakeGeneratorImpl::create(std::move(options), std::move(internals));
  if (!made.ok()) return made.status();
  return std::unique_ptr<SnowflakeGenerator>(std::move(made).value());
}

Result<std::unique_ptr<SnowflakeGeneratorImpl>> SnowflakeGeneratorImpl::create(
    SnowflakeOptions options, SnowflakeInternals internals) {
  if (options.max_drift_ms < 0) return Status::InvalidArgument("max_drift_ms must be >= 0");
  if (options.max_wait_ms < 0) return Status::InvalidArgument("max_wait_ms must be >= 0");
  if (options.ring_ticks < 1 || options.ring_ticks > 65536) {
    return Status::InvalidArgument("ring_ticks must be in 1..65536, got " +
                                   std::to_string(options.ring_ticks));
  }
  if (options.reserve_ms < 1) return Status::InvalidArgument("reserve_ms must be >= 1");
  if (internals.renew_below_ms < 0 || internals.renew_below_ms >= options.reserve_ms) {
    return Status::InvalidArgument("renew_below_ms must be from 0 to reserve_ms - 1, got " +
                                   std::to_string(internals.renew_below_ms));
  }
  if (options.max_startup_wait_ms < 0) {
    return Status::InvalidArgument("max_startup_wait_ms must be >= 0");
  }
  if (options.max_clock_step_ms < 0) {
    return Status::InvalidArgument("max_clock_step_ms must be >= 0");
  }
  std::unique_ptr<SnowflakeGeneratorImpl> gen(
      new SnowflakeGeneratorImpl(std::move(options), std::move(internals)));
  IDFORGE_RETURN_IF_ERROR(gen->init());
  return gen;
}

SnowflakeGeneratorImpl::SnowflakeGeneratorImpl(SnowflakeOptions options,
                                               SnowflakeInternals internals)
    : layout_(std::move(options.layout)),
      policy_(options.policy),
      max_drift_ms_(options.max_drift_ms),
      max_wait_ms_(options.max_wait_ms),
      ring_ticks_(static_cast<uint64_t>(options.ring_ticks)),
      reserve_ms_(options.reserve_ms),
      renew_below_ms_(internals.renew_below_ms > 0 ? internals.renew_below_ms
                                                   : options.reserve_ms / 2),
      startup_wait_ms_(options.max_startup_wait_ms),
      max_step_ms_(options.max_clock_step_ms),
      clock_(options.clock ? options.clock : &default_clock()),
      monotonic_(internals.monotonic_ms        ? std::move(internals.monotonic_ms)
                 : clock_->reads_system_time() ? std::function<int64_t()>(boot_ms)
                                               : nullptr),
      high_water_(options.high_water),
      store_on_next_(internals.store_on_next),
      reservation_wanted_(std::move(internals.reservation_wanted)),
      nodes_(std::move(options.nodes)) {}

SnowflakeGeneratorImpl::~SnowflakeGeneratorImpl() = default;

Status SnowflakeGeneratorImpl::init() {
  epoch_ms_ = layout_.epoch_ms();
  tick_ms_ = static_cast<uint64_t>(layout_.tick_ms());
  time_shift_ = layout_.time_shift();
  seq_shift_ = layout_.sequence_shift();
  seq_bits_ = layout_.sequence_bits();
  seq_mask_ = layout_.max_sequence();
  max_tick_ = layout_.max_tick();
  // The state word packs (tick, sequence); it must fit in 64 bits.
  if (layout_.time_bits() + seq_bits_ > 64) {
    return Status::Internal("layout time + sequence bits exceed 64");
  }

  for (const auto& [name, value] : nodes_) {
    int index = layout_.field_index(name);
    if (index < 0 || layout_.fields()[static_cast<size_t>(index)].role != FieldRole::kNode) {
      std::string names;
      for (const auto& f : layout_.fields()) {
        if (f.role != FieldRole::kNode) continue;
        names += names.empty() ? "" : ", ";
        names += f.name;
      }
      return Status::InvalidArgument("layout " + layout_.name() + " has no node field '" + name +
                                     "' (its node fields: " + names + ")");
    }
    if (value > layout_.max_value(index)) {
      return Status::OutOfRange(name + " " + std::to_string(value) + " does not fit layout " +
                                layout_.name() + " (max " +
                                std::to_string(layout_.max_value(index)) + ")");
    }
    node_bits_ |= value << layout_.shift(index);
  }

  int64_t now = clock_->now_ms();
  if (now < layout_.epoch_ms()) {
    return Status::InvalidArgument("the clock (" + format_iso8601_utc(now) + ") is before layout " +
                                   layout_.name() + "'s epoch (" +
                                   format_iso8601_utc(layout_.epoch_ms()) + ")");
  }
  if (tick_of_ms(now) > max_tick_) return time_exhausted();

  // The previous run may have issued any tick up to its mark: start strictly above it.
  HighWaterMark mark;
  if (high_water_ != nullptr) {
    MutexLock lock(slow_mu_);  // uncontended (nobody has the generator yet), as the rule says
    Result<HighWaterMark> loaded = high_water_->load_mark();
    if (!loaded.ok()) return loaded.status();
    mark = std::move(loaded).value();
  }
  mark_layout_ = mark_layout_key(layout_);
  std::string old_layout;  // described, when the mark was written under another layout
  if (mark.unix_ms > 0 && !mark.layout.empty() && mark.layout != mark_layout_) {
    Result<Layout> old = internal::parse_mark_layout_key(mark.layout);
    if (!old.ok()) {
      return Status::InvalidArgument(
          "the high-water mark " + format_iso8601_utc(mark.unix_ms) +
          " was written under a layout this version cannot read ('" + mark.layout +
          "'), so it cannot tell which IDs it covers; run the version that wrote it");
    }
    old_layout = internal::describe_layout(*old);
    Result<uint64_t> above = internal::first_tick_above(*old, mark.unix_ms, layout_);
    if (!above.ok()) {
      return Status::InvalidArgument("the layout changed from " + old_layout + " to " +
                                     internal::describe_layout(layout_) + ": " +
                                     above.status().message());
    }
    floor_tick_ = *above == 0 ? 0 : *above - 1;
  } else {
    // The same layout, or an unknown one (a mark of an older version, or a store that
    // keeps no layout): the mark is read in this layout's terms, as it always was.
    floor_tick_ = mark.unix_ms < layout_.epoch_ms() ? 0 : tick_of_ms(mark.unix_ms);
  }
  if (floor_tick_ >= max_tick_) return time_exhausted();
  // "Tick floor_tick_ is used up", so the first ID lands on a later tick.
  const uint64_t start = (floor_tick_ << seq_bits_) | seq_mask_;
  state_.store(start, std::memory_order_relaxed);
  ring_high_.store(floor_tick_, std::memory_order_relaxed);
  if (policy_ == RollbackPolicy::kRing) {
    ring_ = std::make_unique<std::atomic<uint64_t>[]>(ring_ticks_);
    for (uint64_t i = 0; i < ring_ticks_; ++i) ring_[i].store(start, std::memory_order_relaxed);
  }
  max_clock_ms_.store(now, std::memory_order_relaxed);

  // A policy that cannot issue ahead of the clock waits here for the clock to pass the
  // mark; logical may borrow up to max_drift_ms instead.
  uint64_t first_tick = floor_tick_ + 1;
  uint64_t now_tick = tick_of_ms(now);
  int64_t gap_ms =
      now_tick >= first_tick ? 0 : static_cast<int64_t>(first_tick - now_tick) * layout_.tick_ms();
  int64_t allowed = policy_ == RollbackPolicy::kLogical ? max_drift_ms_ : 0;
  if (gap_ms > allowed) {
    int64_t need_ms = layout_.unix_ms_of(first_tick) - allowed;
    clock_->wait_until(need_ms, startup_wait_ms_);
    now = clock_->now_ms();
    if (now < need_ms) return start_refused(mark, old_layout, now, need_ms);
  }

  if (high_water_ == nullptr) {
    reserved_tick_.store(kNoReserveLimit, std::memory_order_release);
    renew_tick_.store(kNoReserveLimit, std::memory_order_release);
    return Status::Ok();
  }
  // The clock a generator starts with is trusted: nothing else says what time it is.
  guard_ = max_step_ms_ > 0 && monotonic_ != nullptr;
  now = clock_->now_ms();
  if (guard_) {
    trust_offset_.store(now - monotonic_(), std::memory_order_relaxed);
    trust_ceiling_ms_.store(now + max_step_ms_, std::memory_order_relaxed);
  }
  MutexLock lock(slow_mu_);
  int64_t base = std::max(now, layout_.unix_ms_of(first_tick));
  return store_mark_locked(base + reserve_ms_);
}

Status SnowflakeGeneratorImpl::time_exhausted() const {
  return Status::ResourceExhausted("the time field of layout " + layout_.name() + " ran out at " +
                                   format_iso8601_utc(layout_.capacity().last_unix_ms));
}

Status SnowflakeGeneratorImpl::fail(Status status) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

Status SnowflakeGeneratorImpl::ensure_reserved(uint64_t tick) {
  if (!store_on_next_) return await_reservation(tick);
  if (tick <= reserved_tick_.load(std::memory_order_acquire)) {
    // Covered; renew early only if nobody else is already doing it.
    if (!slow_mu_.try_lock()) return Status::Ok();
    if (tick >= renew_tick_.load(std::memory_order_acquire)) {
      int64_t base = std::max(trusted_ms(clock_->now_ms()), layout_.unix_ms_of(tick));
      // An early renewal that fails is not fatal: the reservation still covers `tick`.
      store_mark_locked(base + reserve_ms_).ignore_error();
    }
    slow_mu_.unlock();
    return Status::Ok();
  }
  MutexLock lock(slow_mu_);
  if (tick <= reserved_tick_.load(std::memory_order_acquire)) return Status::Ok();
  int64_t base = std::max(trusted_ms(clock_->now_ms()), layout_.unix_ms_of(tick));
  return store_mark_locked(base + reserve_ms_);
}

Status SnowflakeGeneratorImpl::await_reservation(uint64_t tick) {
  if (!reservation_asked_.exchange(true, std::memory_order_acq_rel) && reservation_wanted_) {
    reservation_wanted_();
  }
  if (tick <= reserved_tick_.load(std::memory_order_acquire)) return Status::Ok();
  // Past the stored mark: an ID here could repeat after a restart. The tick is already
  // claimed, so giving up only leaves a gap.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_wait_ms_);
  while (tick > reserved_tick_.load(std::memory_order_acquire)) {
    if (fenced_.load(std::memory_order_acquire)) {
      MutexLock lock(fence_mu_);
      return Status::Unavailable(fence_reason_);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("the time high-water mark is stored only up to " +
                                 format_iso8601_utc(reserved_ms_.load(std::memory_order_acquire)) +
                                 " and was not renewed within max_wait_ms " +
                                 ms_text(max_wait_ms_) + " (the store or coordinator is slow)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return Status::Ok();
}

Status SnowflakeGeneratorImpl::store_mark_locked(int64_t mark_ms) {
  if (guard_) {
    // Every tick comes from a trusted reading (at most max_clock_step_ms past the
    // trusted time) plus what logical borrows; a mark beyond that is a bug, and writing
    // it would make a later start wait for it.
    const int64_t limit = trusted_now_ms() + max_step_ms_ + max_drift_ms_ + reserve_ms_;
    if (mark_ms > limit) {
      return Status::Internal("refusing to write the high-water mark " +
                              format_iso8601_utc(mark_ms) + ", " + ms_text(mark_ms - limit) +
                              " past the limit of the trusted time");
    }
  }
  Status st = high_water_->store_mark({mark_ms, mark_layout_});
  if (!st.ok()) {
    return Status(st.code(), "cannot store the time high-water mark: " + st.message());
  }
  high_water_stores_.fetch_add(1, std::memory_order_relaxed);
  reservation_asked_.store(false, std::memory_order_release);
  reserved_ms_.store(mark_ms, std::memory_order_release);
  const uint64_t reserved = tick_of_ms(mark_ms);
  const uint64_t below = static_cast<uint64_t>(renew_below_ms_ / layout_.tick_ms());
  reserved_tick_.store(reserved, std::memory_order_release);
  renew_tick_.store(reserved > below ? reserved - below : 0, std::memory_order_release);
  return Status::Ok();
}

Status SnowflakeGeneratorImpl::renew_reservation() {
  if (high_water_ == nullptr) return Status::Ok();
  MutexLock lock(slow_mu_);
  // A generator running ahead of the clock (logical) uses up its reservation faster
  // than the clock moves: measure what is left from whichever is later.
  const int64_t last = layout_.unix_ms_of(state_.load(std::memory_order_acquire) >> seq_bits_);
  const int64_t from = std::max(trusted_ms(clock_->now_ms()), last);
  if (reserved_ms_.load(std::memory_order_acquire) - from > renew_below_ms_) return Status::Ok();
  return store_mark_locked(from + reserve_ms_);
}

void SnowflakeGeneratorImpl::fence(std::string reason) {
  MutexLock lock(fence_mu_);
  fence_reason_ = reason.empty() ? "this node is fenced and does not issue IDs" : std::move(reason);
  fenced_.store(true, std::memory_order_release);
}

void SnowflakeGeneratorImpl::unfence() {
  MutexLock lock(fence_mu_);
  fenced_.store(false, std::memory_order_release);
}

int64_t SnowflakeGeneratorImpl::last_unix_ms() const {
  uint64_t tick = policy_ == RollbackPolicy::kRing
                      ? ring_high_.load(std::memory_order_acquire)
                      : state_.load(std::memory_order_acquire) >> seq_bits_;
  return tick <= floor_tick_ ? 0 : layout_.unix_ms_of(tick);
}

int64_t SnowflakeGeneratorImpl::drift_ms() const {
  int64_t last = last_unix_ms();
  int64_t now = clock_->now_ms();
  return last > now ? last - now : 0;
}

int64_t SnowflakeGeneratorImpl::reserved_until_ms() const {
  return reserved_ms_.load(std::memory_order_acquire);
}

SnowflakeCounters SnowflakeGeneratorImpl::counters() const {
  SnowflakeCounters c;
  c.rollbacks = rollbacks_.load(std::memory_order_relaxed);
  c.waited_ms = waited_us_.load(std::memory_order_relaxed) / 1000;
  c.borrowed_ms = borrowed_ms_.load(std::memory_order_relaxed);
  c.failures = failures_.load(std::memory_order_relaxed);
  c.ring_revisits = ring_revisits_.load(std::memory_order_relaxed);
  c.high_water_stores = high_water_stores_.load(std::memory_order_relaxed);
  c.clock_jumps = clock_jumps_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace idforge
