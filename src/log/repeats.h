// RepeatLimiter: a failure that repeats (a store probed every 2 s, a renew retried every
// ttl/10) logged without a flood (docs/operations.md, "Logs"):
//
//   - the first failure of a run is logged at once, with its fields;
//   - later ones are counted; the first failure that comes `window` or more after the
//     last line logs the count as the same event with the latest failure's fields and
//     `repeats=N window_s=S` (N failures in the last S seconds), and starts a new window;
//   - recover() ends the run: the count not logged yet (if any) is logged as above, then
//     the recovery event once, with `failures` (the run's total) and `down_ms` (since
//     its first failure);
//   - flush() ends the run without a recovery (the thing failing was replaced or is
//     going away): only the count not logged yet.
//
//   log::RepeatLimiter down;                                  // one per store
//   down.fail(log::Level::kWarn, "store.down", {{"store", name}, {"error", why}});
//   down.recover(log::Level::kInfo, "store.up", {{"store", name}});
//
// The clock is injectable for tests (it may be read under the limiter's lock, so it must
// take none). Thread-safe; lines are written under the limiter's lock (a leaf: the log's own
// lock is the only one taken under it).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "core/thread_annotations.h"
#include "log/log.h"

namespace idforge::log {

class RepeatLimiter {
 public:
  // Milliseconds on a clock that never goes back (the steady clock by default).
  using NowMs = std::function<int64_t()>;
  static constexpr int64_t kDefaultWindowMs = 60'000;

  explicit RepeatLimiter(int64_t window_ms = kDefaultWindowMs, NowMs now = nullptr);

  // One failure. True when a line was written for it (the run's first, or a count).
  bool fail(Level level, std::string_view event, Fields fields) {
    return fail(level, event, std::span<const Field>(fields.begin(), fields.size()));
  }
  bool fail(Level level, std::string_view event, std::span<const Field> fields)
      IDFORGE_EXCLUDES(mu_);

  // The run is over. False, writing nothing, when no run was under way.
  bool recover(Level level, std::string_view event, Fields fields = {}) {
    return recover(level, event, std::span<const Field>(fields.begin(), fields.size()));
  }
  bool recover(Level level, std::string_view event, std::span<const Field> fields)
      IDFORGE_EXCLUDES(mu_);

  // Ends a run without a recovery line: writes the count not logged yet, if any.
  void flush() IDFORGE_EXCLUDES(mu_);

  bool failing() const IDFORGE_EXCLUDES(mu_);
  // Failures of the run under way (0 when none).
  uint64_t failures() const IDFORGE_EXCLUDES(mu_);

 private:
  void write_count_locked(int64_t now) IDFORGE_REQUIRES(mu_);

  const int64_t window_ms_;
  const NowMs now_;
  mutable Mutex mu_;
  bool failing_ IDFORGE_GUARDED_BY(mu_) = false;
  int64_t run_start_ IDFORGE_GUARDED_BY(mu_) = 0;     // the run's first failure
  int64_t window_start_ IDFORGE_GUARDED_BY(mu_) = 0;  // the run's last line
  uint64_t total_ IDFORGE_GUARDED_BY(mu_) = 0;        // failures of the run
  uint64_t pending_ IDFORGE_GUARDED_BY(mu_) = 0;      // failures since the last line
  // The last failure's level, event and fields, for the count line.
  Level level_ IDFORGE_GUARDED_BY(mu_) = Level::kWarn;
  std::string event_ IDFORGE_GUARDED_BY(mu_);
  OwnedFields last_ IDFORGE_GUARDED_BY(mu_);
};

}  // namespace idforge::log
