#include "log/repeats.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "core/now_ms.h"

namespace idforge::log {

RepeatLimiter::RepeatLimiter(int64_t window_ms, NowMs now)
    : window_ms_(window_ms > 0 ? window_ms : kDefaultWindowMs),
      now_(now ? std::move(now) : NowMs(steady_now_ms)) {}

void RepeatLimiter::write_count_locked(int64_t now) {
  if (pending_ == 0) return;
  std::vector<Field> fields = last_.view();
  // Whole seconds, rounded up: "N failures in the last S seconds" stays true.
  const int64_t window_s = std::max<int64_t>(1, (now - window_start_ + 999) / 1000);
  fields.push_back(Field{"repeats", pending_});
  fields.push_back(Field{"window_s", window_s});
  write(level_, event_, fields);
  pending_ = 0;
  window_start_ = now;
}

bool RepeatLimiter::fail(Level level, std::string_view event, std::span<const Field> fields) {
  const int64_t now = now_();
  MutexLock lock(mu_);
  level_ = level;
  event_ = std::string(event);
  if (!failing_) {
    failing_ = true;
    run_start_ = window_start_ = now;
    total_ = 1;
    pending_ = 0;
    write(level, event, fields);
    return true;
  }
  ++total_;
  ++pending_;
  last_.assign(fields);
  if (now - window_start_ < window_ms_) return false;
  write_count_locked(now);
  return true;
}

bool RepeatLimiter::recover(Level level, std::string_view event, std::span<const Field> fields) {
  MutexLock lock(mu_);
  // Called after every success (an accept, a fetch, a probe): no clock read unless a
  // run is under way.
  if (!failing_) return false;
  const int64_t now = now_();
  write_count_locked(now);
  std::vector<Field> all(fields.begin(), fields.end());
  all.push_back(Field{"failures", total_});
  all.push_back(Field{"down_ms", now - run_start_});
  write(level, event, all);
  failing_ = false;
  total_ = 0;
  return true;
}

void RepeatLimiter::flush() {
  MutexLock lock(mu_);
  if (!failing_) return;
  const int64_t now = now_();
  write_count_locked(now);
  failing_ = false;
  total_ = 0;
}

bool RepeatLimiter::failing() const {
  MutexLock lock(mu_);
  return failing_;
}

uint64_t RepeatLimiter::failures() const {
  MutexLock lock(mu_);
  return total_;
}

}  // namespace idforge::log
