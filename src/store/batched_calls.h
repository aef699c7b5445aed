// Calls made at the same time, run together by one of their callers (group commit):
// the first caller to find no batch running runs every call queued at that moment as
// one batch (the SQLite store: one transaction; the local: fleet records: one fsync of
// their log) while the others wait
// for their results; calls that arrive meanwhile make up the next batch. With one caller
// at a time each batch is that one call, so nothing waits that would not have.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <span>
#include <vector>

#include "core/thread_annotations.h"

namespace idforge::store {

template <typename Call>
class BatchedCalls {
 public:
  explicit BatchedCalls(size_t max_batch) : max_batch_(std::max<size_t>(1, max_batch)) {}

  // Returns once `run_batch` has been called, by this thread or another, with a batch
  // that holds `call`. run_batch(std::span<Call* const>) fills in each call's result.
  template <typename RunBatch>
  void run(Call& call, RunBatch&& run_batch) IDFORGE_EXCLUDES(mu_) {
    Entry me{&call};
    MutexLock lock(mu_);
    queue_.push_back(&me);
    for (;;) {
      if (me.done) return;
      if (leading_) {
        lock.wait(batch_done_);
        continue;
      }
      leading_ = true;
      const size_t n = std::min(queue_.size(), max_batch_);
      std::vector<Entry*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      lock.unlock();
      std::vector<Call*> calls;
      calls.reserve(n);
      for (Entry* e : batch) calls.push_back(e->call);
      run_batch(std::span<Call* const>(calls));
      lock.lock();
      for (Entry* e : batch) e->done = true;
      leading_ = false;
      batch_done_.notify_all();
    }
  }

 private:
  struct Entry {
    Call* call;
    bool done = false;
  };

  const size_t max_batch_;
  Mutex mu_;
  std::condition_variable batch_done_;
  // Waiting for a batch, oldest first. An Entry's `done` is under mu_ as well.
  std::deque<Entry*> queue_ IDFORGE_GUARDED_BY(mu_);
  bool leading_ IDFORGE_GUARDED_BY(mu_) = false;  // a batch is running
};

}  // namespace idforge::store
