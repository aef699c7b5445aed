// What the lease keeper (lease_keeper.h) reports about its lease: a plain view with no
// dependency, so the server's front ends format it (/v1/status, INFO, /metrics) without
// seeing the keeper or any coordinator (docs/architecture.md, "Layers").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace idforge::coord {

enum class LeaseState {
  kWaiting,  // in the start delay: fenced
  kHeld,     // renewed in time: issuing
  kOverdue,  // no successful renew for fence_after_ms: fenced, still trying
  kLost,     // the coordinator says the lease is gone: fenced for good
  kStopped,  // stop() was called: fenced, released
};

// "waiting", "held", "overdue", "lost", "stopped": the words /v1/status and INFO show.
constexpr std::string_view lease_state_name(LeaseState state) {
  switch (state) {
    case LeaseState::kWaiting:
      return "waiting";
    case LeaseState::kHeld:
      return "held";
    case LeaseState::kOverdue:
      return "overdue";
    case LeaseState::kLost:
      return "lost";
    case LeaseState::kStopped:
      return "stopped";
  }
  return "unknown";
}

// The keeper as it last saw the lease.
struct KeeperStatus {
  LeaseState state = LeaseState::kHeld;
  int64_t since_renew_ms = 0;       // since the last successful renew was sent
  int64_t fence_after_ms = 0;       // fenced once since_renew_ms reaches this
  int64_t start_delay_left_ms = 0;  // while kWaiting: until the start delay is over
  uint64_t renewals = 0;            // successful renews (including the generator's mark stores)
  uint64_t failures = 0;
  std::string last_error;  // of the most recent failed renew; empty if none
};

}  // namespace idforge::coord
