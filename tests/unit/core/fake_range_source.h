// An in-memory RangeSource for tests: counts allocations, records the steps asked for,
// and can be made slow, failing, or blocked until released.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_store.h"

namespace idforge::testing {

class FakeRangeSource : public RangeSource {
 public:
  Result<Segment> allocate(std::string_view tag, uint64_t step) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !blocked_; });
    if (latency_ms_ > 0) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(latency_ms_));
      lock.lock();
    }
    ++calls_;
    if (!fail_.ok()) return fail_;
    auto it = max_.find(std::string(tag));
    if (it == max_.end()) return Status::NotFound("unknown tag '" + std::string(tag) + "'");
    steps_.push_back(step);
    const uint64_t first = it->second + 1;
    it->second += step;
    return Segment{first, step, 1, {}};
  }

  void add_tag(const std::string& tag, uint64_t start = 1) {
    std::lock_guard lock(mu_);
    max_[tag] = start - 1;
  }
  void set_latency_ms(int ms) {
    std::lock_guard lock(mu_);
    latency_ms_ = ms;
  }
  void set_failure(Status st) {
    std::lock_guard lock(mu_);
    fail_ = std::move(st);
  }
  void block() {
    std::lock_guard lock(mu_);
    blocked_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      blocked_ = false;
    }
    cv_.notify_all();
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::vector<uint64_t> steps() const {
    std::lock_guard lock(mu_);
    return steps_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, uint64_t> max_;
  std::vector<uint64_t> steps_;
  Status fail_;
  int latency_ms_ = 0;
  int calls_ = 0;
  bool blocked_ = false;
};

// Polls `pred` for up to `ms` milliseconds.
template <typename Pred>
bool eventually(Pred pred, int ms = 2000) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

}  // namespace idforge::testing
