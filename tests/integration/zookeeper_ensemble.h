// A real ZooKeeper ensemble and real `idforge serve` processes on it, for the tests in
// zookeeper_ensemble_test.cc.
//
// The ensemble comes from `scripts/test-services start zookeeper-ensemble` in a
// directory of the Services root, so Services::stop_all (and the script's watchdog)
// stop it. Each member is a Server of its own (DIR/member-K), so Services::kill, pause,
// resume, restart and stop work on one member. Which member leads, and which member a
// client's session is connected to, come from the four-letter words srvr and cons.
//
// Everything lives in namespace zk: other tests of this binary have helpers of the
// same job under their own names.
//
// Not thread-safe, except that each Loader runs on a thread of its own.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/status.h"
#include "integration/serve_node.h"
#include "integration/services.h"

namespace idforge::integration::zk {

using Steady = std::chrono::steady_clock;

struct Ensemble {
  std::string dir;
  std::string url;              // zookeeper://127.0.0.1:P1,127.0.0.1:P2,...
  std::vector<Server> members;  // kind kZookeeper, url zookeeper://127.0.0.1:PK
  std::vector<int> ports;       // client port of each member
};

// `members` ZooKeeper servers on 127.0.0.1 serving as one ensemble, or why not.
Result<Ensemble> start_ensemble(const std::string& name, int members = 3);
// Stops every member (Services::stop_all would, at the end of the binary).
Status stop_ensemble(const Ensemble& ensemble);

// The answer to a four-letter word; empty when the member is down or did not answer
// within `timeout`.
std::string four_letter_word(int port, std::string_view word,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
// "leader", "follower", or "" (down, or not part of a serving quorum).
std::string member_mode(int port);
// Index of the member that leads now, or -1.
int leader_of(const Ensemble& ensemble);
// Index of the member that `session` is connected to now (its sid in `cons`), or -1.
int member_holding(const Ensemble& ensemble, int64_t session);
// Waits until member `index` serves (leader or follower); false after `timeout`.
bool wait_serving(const Ensemble& ensemble, size_t index, std::chrono::milliseconds timeout);

// The ZooKeeper session that owns the ephemeral node `path` (0: no such node), read
// through a session of our own to the ensemble.
Result<int64_t> node_owner(const Ensemble& ensemble, const std::string& path);

// The lease part of GET /v1/status.
struct LeaseView {
  bool held = false;
  std::string state;  // held, overdue, lost, ...
  uint64_t slot = 0;
  uint64_t datacenter = 0;
  uint64_t worker = 0;
  uint64_t leases_taken = 0;
  uint64_t renewals = 0;  // renews that succeeded
  uint64_t failures = 0;  // renews that failed
  bool fenced = true;
};
Result<LeaseView> lease_view(HttpClient& client);

// Pulls Snowflake IDs (100 a request, a few ms apart) from one server on a thread of
// its own until stopped, and keeps what the tests check: every ID, the failed
// requests, and the runs of consecutive failures (from the start of the first to the
// end of the last).
class Loader {
 public:
  struct Figures {
    size_t requests = 0;
    size_t failures = 0;
    size_t failure_runs = 0;
    std::chrono::milliseconds longest_run{0};
    std::chrono::milliseconds longest_request{0};
    std::string first_error;  // of the first failure, for the report
  };

  explicit Loader(int port);
  ~Loader();  // stop()
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  void stop();
  Figures figures() const;
  // The IDs pulled so far (call after stop()).
  const std::vector<uint64_t>& ids() const { return ids_; }

 private:
  void run();
  void note_failure(Steady::time_point start, Steady::time_point end, const std::string& why)
      IDFORGE_EXCLUDES(mu_);
  void close_run() IDFORGE_REQUIRES(mu_);

  const int port_;
  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  Figures figures_ IDFORGE_GUARDED_BY(mu_);
  bool in_run_ IDFORGE_GUARDED_BY(mu_) = false;
  Steady::time_point run_start_ IDFORGE_GUARDED_BY(mu_);
  Steady::time_point run_end_ IDFORGE_GUARDED_BY(mu_);
  std::vector<uint64_t> ids_;  // the loader thread's until stop()
  std::thread thread_;
};

}  // namespace idforge::integration::zk
