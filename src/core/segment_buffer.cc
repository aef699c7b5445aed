#include "idforge/segment_buffer.h"

#include <algorithm>
#include <chrono>

#include "fetch_workers.h"
#include "segment_buffer_impl.h"

namespace idforge {
namespace {

using Steady = std::chrono::steady_clock;

// A batch claims at most this many offsets at once, so the 40-bit offset can never
// carry into the generation however many callers overshoot a used-up segment.
constexpr uint64_t kMaxClaim = uint64_t{1} << 20;

}  // namespace

SegmentBuffer::~SegmentBuffer() = default;

Result<std::unique_ptr<SegmentBuffer>> SegmentBuffer::create(RangeSource* source,
                                                             SegmentBufferOptions options) {
  Result<std::unique_ptr<SegmentBufferImpl>> made =
      SegmentBufferImpl::create(source, std::move(options));
  if (!made.ok()) return made.status();
  return std::unique_ptr<SegmentBuffer>(std::move(made).value());
}

Result<std::unique_ptr<SegmentBufferImpl>> SegmentBufferImpl::create(RangeSource* source,
                                                                     SegmentBufferOptions options) {
  if (source == nullptr) return Status::InvalidArgument("segment buffer needs a range source");
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(options.tag));
  if (options.min_step < 1) return Status::InvalidArgument("step must be at least 1");
  if (options.max_step < options.min_step) {
    return Status::InvalidArgument("max_step " + std::to_string(options.max_step) +
                                   " is below the step " + std::to_string(options.min_step));
  }
  if (options.max_step > (uint64_t{1} << 36)) {
    return Status::InvalidArgument("max_step must be at most 2^36");
  }
  if (!(options.prefetch_at > 0.0 && options.prefetch_at <= 1.0)) {
    return Status::InvalidArgument("prefetch_at must be in (0, 1]");
  }
  if (options.wait_ms < 0) return Status::InvalidArgument("wait_ms must be >= 0");
  return std::unique_ptr<SegmentBufferImpl>(new SegmentBufferImpl(source, std::move(options)));
}

SegmentBufferImpl::SegmentBufferImpl(RangeSource* source, SegmentBufferOptions options)
    : source_(source),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &default_clock()),
      step_(options_.min_step) {}

SegmentBufferImpl::~SegmentBufferImpl() {
  MutexLock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  // A fetch under way still uses this buffer: wait for its last step (under mu_).
  while (fetching_) lock.wait(cv_);
}

bool SegmentBufferImpl::try_take(uint64_t want, Take* out) {
  const uint64_t w = cursor_.fetch_add(want, std::memory_order_acq_rel);
  const uint64_t gen = w >> kOffsetBits;
  const uint64_t off = w & kOffsetMask;
  out->gen = gen;
  if (gen == 0) return false;
  // Seqlock read: the slot may be rewritten for generation gen + 2 while a slow reader
  // still holds gen; the version check turns that into a retry, never a wrong ID.
  const Slot& s = slots_[gen & 1];
  const uint64_t v1 = s.version.load(std::memory_order_acquire);
  if (v1 != 2 * gen + 2) return false;
  const uint64_t first = s.first.load(std::memory_order_relaxed);
  const uint64_t count = s.count.load(std::memory_order_relaxed);
  const uint64_t stride = s.stride.load(std::memory_order_relaxed);
  const uint64_t prefetch = s.prefetch.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.version.load(std::memory_order_relaxed) != v1) return false;
  if (off >= count) return false;
  out->first = first + off * stride;
  out->stride = stride;
  out->count = std::min(want, count - off);
  // Offsets are handed out once each, so exactly one caller crosses the prefetch point.
  if (off <= prefetch && prefetch < off + out->count) {
    MutexLock lock(mu_);
    start_fetch_locked();
  }
  return true;
}

Result<uint64_t> SegmentBufferImpl::next() {
  for (;;) {
    Take t;
    if (try_take(1, &t)) return t.first;
    IDFORGE_RETURN_IF_ERROR(slow_path(t.gen));
  }
}

Status SegmentBufferImpl::next_batch(std::span<uint64_t> out) {
  return fill(out, /*may_wait=*/true).status();
}

Result<size_t> SegmentBufferImpl::try_next_batch(std::span<uint64_t> out) {
  return fill(out, /*may_wait=*/false);
}

Result<size_t> SegmentBufferImpl::fill(std::span<uint64_t> out, bool may_wait) {
  size_t filled = 0;
  while (filled < out.size()) {
    Take t;
    if (try_take(std::min<uint64_t>(out.size() - filled, kMaxClaim), &t)) {
      for (uint64_t i = 0; i < t.count; ++i) out[filled++] = t.first + i * t.stride;
      continue;
    }
    bool would_wait = false;
    IDFORGE_RETURN_IF_ERROR(slow_path(t.gen, may_wait, &would_wait));
    if (would_wait) break;
  }
  return filled;
}

// Called when the current segment looked used up (or absent) to a caller that saw
// generation `seen_gen`.
Status SegmentBufferImpl::slow_path(uint64_t seen_gen, bool may_wait, bool* would_wait) {
  MutexLock lock(mu_);
  const auto deadline = Steady::now() + std::chrono::milliseconds(options_.wait_ms);
  bool counted = false;
  for (;;) {
    if (stopping_) return Status::Unavailable("tag " + options_.tag + ": shutting down");
    if (current_gen_ != seen_gen) return Status::Ok();  // someone switched already
    const uint64_t count =
        current_gen_ == 0 ? 0 : slots_[current_gen_ & 1].count.load(std::memory_order_relaxed);
    const uint64_t w = cursor_.load(std::memory_order_acquire);
    if ((w & kOffsetMask) < count) return Status::Ok();  // lost a seqlock race; not empty
    if (next_ready_) {
      // The switch: later fetch_adds land in the new generation; the ones before it
      // were all past the end of the old one.
      ++current_gen_;
      next_ready_ = false;
      current_started_ms_ = clock_->now_ms();
      cursor_.store(current_gen_ << kOffsetBits, std::memory_order_release);
      switches_.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
    // A store that says the tag does not exist, or has run out of numbers, will most
    // likely say so again: answer at once rather than after the deadline, but ask again
    // once the back-off has passed (a tag an operator has recreated is served again).
    if (!fetching_ && (last_error_.code() == StatusCode::kNotFound ||
                       last_error_.code() == StatusCode::kInvalidArgument ||
                       last_error_.code() == StatusCode::kOutOfRange)) {
      if (Steady::now() < retry_at_) return last_error_;
      start_fetch_locked();
      if (!may_wait) return last_error_;  // the answer comes to a later call
    }
    // Both buffers are empty. Pin the offset at the end so callers piling up here
    // cannot push it toward the generation bits.
    cursor_.store((current_gen_ << kOffsetBits) | count, std::memory_order_release);
    start_fetch_locked();
    if (!may_wait) {
      if (would_wait != nullptr) *would_wait = true;
      return Status::Ok();
    }
    if (!counted) {
      waits_.fetch_add(1, std::memory_order_relaxed);
      counted = true;
    }
    auto wake = deadline;
    if (!fetching_ && retry_at_ > Steady::now()) wake = std::min(deadline, retry_at_);
    if (!lock.wait_until(cv_, wake) && Steady::now() >= deadline && !next_ready_ &&
        current_gen_ == seen_gen) {
      std::string why = "tag " + options_.tag + ": both segment buffers are empty and the store " +
                        "did not deliver within " + std::to_string(options_.wait_ms) + " ms";
      if (!last_error_.ok()) why += ": " + last_error_.message();
      return Status::Unavailable(std::move(why));
    }
  }
}

void SegmentBufferImpl::start_fetch_locked() {
  if (fetching_ || next_ready_ || stopping_) return;
  if (Steady::now() < retry_at_) return;  // back off after a failed allocation
  fetching_ = true;
  const uint64_t step = next_step_locked(clock_->now_ms());
  // On a shared worker (core/fetch_workers.h), not a thread of this buffer's own: a
  // joinable thread would keep its stack until the next fetch, for every tag ever served.
  // The destructor waits for fetching_ instead of a join.
  Status started = run_on_fetch_worker([this, step] { fetch_once(step); });
  if (!started.ok()) {  // out of threads: a failed fetch, retried later
    fetching_ = false;
    fetch_failures_.fetch_add(1, std::memory_order_relaxed);
    last_error_ = std::move(started);
    retry_at_ = Steady::now() + std::chrono::milliseconds(100);
    cv_.notify_all();
  }
}

// Leaf's rule: a segment that lasted under grow_below_ms doubles the step, one over
// shrink_above_ms halves it, always within [min_step, max_step]. A segment's lifetime
// is the time between two fetches, which start at the same point of each segment.
uint64_t SegmentBufferImpl::next_step_locked(int64_t now_ms) {
  if (last_fetch_done_ms_ == 0) return step_;
  const int64_t lasted = now_ms - last_fetch_done_ms_;
  if (lasted < options_.grow_below_ms) {
    return std::min(step_ * 2, options_.max_step);
  }
  if (lasted > options_.shrink_above_ms) {
    return std::max(step_ / 2, options_.min_step);
  }
  return step_;
}

void SegmentBufferImpl::fetch_once(uint64_t step) {
  const auto started = Steady::now();
  Result<Segment> got = source_->allocate(options_.tag, step);
  const auto took = Steady::now() - started;

  MutexLock lock(mu_);
  fetching_ = false;
  last_fetch_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(),
                       std::memory_order_relaxed);
  Status st = got.status();
  if (st.ok() && (got->count == 0 || got->stride == 0 || got->count > (uint64_t{1} << 36))) {
    st = Status::Internal("the store returned an unusable range for tag " + options_.tag);
  }
  if (!st.ok()) {
    fetch_failures_.fetch_add(1, std::memory_order_relaxed);
    last_error_ = std::move(st);
    ++consecutive_failures_;
    const int64_t backoff_ms = std::min<int64_t>(1000, 10LL << std::min(consecutive_failures_, 7));
    retry_at_ = Steady::now() + std::chrono::milliseconds(backoff_ms);
    cv_.notify_all();
    return;
  }
  const Segment& seg = *got;
  const uint64_t gen = current_gen_ + 1;
  Slot& s = slots_[gen & 1];
  s.version.store(2 * gen + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.first.store(seg.first, std::memory_order_relaxed);
  s.count.store(seg.count, std::memory_order_relaxed);
  s.stride.store(seg.stride, std::memory_order_relaxed);
  const auto at = static_cast<uint64_t>(static_cast<double>(seg.count) * options_.prefetch_at);
  s.prefetch.store(std::min(at, seg.count - 1), std::memory_order_relaxed);
  s.version.store(2 * gen + 2, std::memory_order_release);

  next_ready_ = true;
  step_ = step;
  last_error_ = Status::Ok();
  consecutive_failures_ = 0;
  last_fetch_done_ms_ = clock_->now_ms();
  fetches_.fetch_add(1, std::memory_order_relaxed);
  cv_.notify_all();
}

SegmentBufferStats SegmentBufferImpl::stats() const {
  MutexLock lock(mu_);
  SegmentBufferStats st;
  st.fetches = fetches_.load(std::memory_order_relaxed);
  st.fetch_failures = fetch_failures_.load(std::memory_order_relaxed);
  st.waits = waits_.load(std::memory_order_relaxed);
  st.switches = switches_.load(std::memory_order_relaxed);
  st.step = step_;
  st.next_ready = next_ready_;
  st.fetching = fetching_;
  st.last_fetch_ms = last_fetch_ms_.load(std::memory_order_relaxed);
  if (current_gen_ != 0) {
    const Slot& s = slots_[current_gen_ & 1];
    st.current_first = s.first.load(std::memory_order_relaxed);
    st.current_count = s.count.load(std::memory_order_relaxed);
    const uint64_t off = cursor_.load(std::memory_order_acquire) & kOffsetMask;
    st.current_used = std::min(off, st.current_count);
  }
  if (!last_error_.ok()) st.last_error = last_error_.message();
  return st;
}

}  // namespace idforge
