// `idforge serve` processes that pull IDs from themselves over HTTP for as long as a
// failover test runs, and the checks those tests make on what came back: no ID twice,
// and no worker id (lease slot) issuing on two nodes at the same time.
//
// PullingNode's methods are for the test's thread; its puller thread only fills the
// record, which the accessors copy under a lock.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/status.h"
#include "integration/serve_node.h"

namespace idforge::integration::redis_ha {

using Steady = std::chrono::steady_clock;

// One successful /v1/snowflake answer: its IDs were issued between sent and received.
struct Batch {
  Steady::time_point sent;
  Steady::time_point received;
  std::vector<uint64_t> ids;
};

// The lease as /v1/status showed it.
struct LeaseSample {
  Steady::time_point at;
  std::string state;  // "held", "waiting", "lost", ...
  int64_t slot = -1;
};

class PullingNode {
 public:
  // Spawns `idforge serve` on free loopback ports with `args` after --data-dir DIR/data;
  // await() waits until it listens. A node whose lease waits a start delay listens only
  // after it.
  static Result<std::unique_ptr<PullingNode>> launch(const std::string& name,
                                                     const std::string& dir,
                                                     const std::vector<std::string>& args);
  Status await(std::chrono::milliseconds limit);
  ~PullingNode();  // stops pulling; SIGKILL if still running
  PullingNode(const PullingNode&) = delete;
  PullingNode& operator=(const PullingNode&) = delete;

  // Pulls Snowflake IDs (and segment IDs of `tag`, when not empty) without pause, and
  // the lease from /v1/status about every 100 ms.
  void start_pulling(const std::string& tag = "");
  void stop_pulling();
  // SIGTERM; Ok when it exits 0.
  Status stop();

  const std::string& name() const { return name_; }
  std::vector<Batch> batches() const;
  std::vector<uint64_t> segment_ids() const;
  std::vector<LeaseSample> leases() const;
  // The bodies of refused /v1/snowflake calls, the first of each kind (its numbers aside),
  // in the order first seen.
  std::vector<std::string> refusals() const;
  uint64_t refused() const;
  // When the last Snowflake batch came back (epoch when none did).
  Steady::time_point last_issued() const;
  std::string stderr_text() const;
  // One GET on a connection of its own (the puller's is its thread's): the body of a
  // 200 answer.
  Result<std::string> get(const std::string& target) const;

 private:
  PullingNode() = default;
  void pull(const std::string& tag);

  std::string name_;
  std::unique_ptr<ServeNode> serve_;
  int port_ = 0;  // once await() succeeded
  std::thread puller_;
  std::atomic<bool> stopping_{false};

  mutable Mutex mu_;
  std::vector<Batch> batches_ IDFORGE_GUARDED_BY(mu_);
  std::vector<uint64_t> segment_ids_ IDFORGE_GUARDED_BY(mu_);
  std::vector<LeaseSample> leases_ IDFORGE_GUARDED_BY(mu_);
  std::vector<std::string> refusals_ IDFORGE_GUARDED_BY(mu_);
  std::set<std::string> refusal_kinds_ IDFORGE_GUARDED_BY(mu_);
  uint64_t refused_ IDFORGE_GUARDED_BY(mu_) = 0;
};

// The first number or string value of "key" in a JSON text (/v1/status has the keys
// the tests read once: the first store's guard); -1 or "" when absent.
int64_t json_number(const std::string& json, const std::string& key);
std::string json_string(const std::string& json, const std::string& key);

// The lease slot a twitter-layout ID was issued under (datacenter << 5 | worker).
uint64_t slot_of(uint64_t id);

// What the IDs of several nodes say, checked and summed up.
struct IssueReport {
  size_t ids = 0;
  size_t repeated = 0;  // IDs issued more than once
  // Times a slot passed from one node to another, and the shortest time between the
  // old holder's last answer and the new holder's first request (negative: overlap).
  int handovers = 0;
  int64_t min_handover_gap_ms = INT64_MAX;
  // Slot handovers where the two nodes' batches overlap in time, described.
  std::vector<std::string> overlaps;
  // Batches whose IDs' slot /v1/status did not show as that node's around then.
  size_t slot_mismatches = 0;
  std::string summary() const;
};
IssueReport check_issued(const std::vector<PullingNode*>& nodes);

// Waits until every node has issued after `since`; false after `limit`.
bool all_issue_after(const std::vector<PullingNode*>& nodes, Steady::time_point since,
                     std::chrono::milliseconds limit);

}  // namespace idforge::integration::redis_ha
