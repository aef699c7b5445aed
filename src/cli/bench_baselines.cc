#include "cli/bench_baselines.h"

#include <time.h>

#include <string>

namespace idforge::cli {
namespace {

constexpr int64_t kTwitterEpochMs = 1288834974657;
constexpr int kSequenceBits = 12;
constexpr int kWorkerBits = 5;
constexpr uint64_t kSequenceMask = (uint64_t{1} << kSequenceBits) - 1;

// Deliberately the plain system call per ID (through the vDSO), as the classic code
// calls System.currentTimeMillis(): the baseline is the design being improved on.
int64_t realtime_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace

MutexSnowflake::MutexSnowflake(uint64_t datacenter, uint64_t worker)
    : node_bits_((datacenter << (kSequenceBits + kWorkerBits)) | (worker << kSequenceBits)) {}

Result<uint64_t> MutexSnowflake::next() {
  MutexLock lock(mu_);
  int64_t now = realtime_ms();
  if (now < last_ms_) {
    return Status::ClockBackwards("clock moved back by " + std::to_string(last_ms_ - now) + " ms");
  }
  if (now == last_ms_) {
    sequence_ = (sequence_ + 1) & kSequenceMask;
    if (sequence_ == 0) {
      // This millisecond is used up; the classic code busy-waits for the next one.
      while (now <= last_ms_) now = realtime_ms();
    }
  } else {
    sequence_ = 0;
  }
  last_ms_ = now;
  return (static_cast<uint64_t>(now - kTwitterEpochMs) << (kSequenceBits + 2 * kWorkerBits)) |
         node_bits_ | sequence_;
}

}  // namespace idforge::cli
