// The checks every WorkerRegistry backend must pass, run through the `idforge worker`
// commands exactly as an operator would, so each backend's integration test is a few
// lines:
//
//   RegistryHarness h({.registry = url + "?ttl_ms=1500&cluster=" + unique_tag("t"),
//                      .dir = Services::get().make_dir("redis-workers")});
//   EXPECT_TRUE(h.check_distinct_slots(10));
//   EXPECT_TRUE(h.check_kill_frees_slot(/*max_ms=*/1500 + 1000));
//   EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/false));
//   EXPECT_TRUE(h.check_exhaustion());
//
// Each holder is an `idforge worker acquire --hold-ms N` process that prints its lease
// and then keeps it renewed until SIGTERM (it then releases) or N ms. Every process the
// harness starts is killed and reaped by its destructor, and each also ends by itself
// after hold_ms, so a crashed test leaves nothing behind for long.
//
// Give every harness its own `cluster=` (unique_tag) on a shared coordinator, and its
// own dir: the checks assume nobody else takes slots in that namespace meanwhile.
// Not thread-safe: one harness per test, used from the test's thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "idforge/status.h"
#include "support/process.h"

namespace idforge::integration {

struct HarnessConfig {
  // What `--registry` takes, with ?ttl_ms= (and cluster= where it applies).
  std::string registry;
  // A scratch directory of the test's own: outputs, and --data-dir of every command.
  std::string dir;
  std::string layout = "twitter";
  // The TTL in the URL; bounds the waits below. Keep it short (1500) in tests.
  int64_t ttl_ms = 1500;
  // How long a holder keeps its lease if nobody stops it.
  int64_t hold_ms = 60'000;
};

// A running `idforge worker acquire` and the lease it printed.
struct Holder {
  test_support::Child child;
  std::string identity;
  uint64_t slot = 0;
  uint64_t datacenter = 0;
  uint64_t worker = 0;
  int64_t high_water_ms = 0;
  int64_t start_delay_ms = 0;
};

// A finished `idforge ...` run.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  std::string summary() const;  // for assertion messages
};

class RegistryHarness {
 public:
  explicit RegistryHarness(HarnessConfig config);
  ~RegistryHarness();  // SIGKILLs and reaps every holder still running
  RegistryHarness(const RegistryHarness&) = delete;
  RegistryHarness& operator=(const RegistryHarness&) = delete;

  const HarnessConfig& config() const { return config_; }

  // --- building blocks ---

  // Runs `idforge worker SUB ARGS --registry URL --layout L --data-dir DIR` to the end.
  // `layout` empty = the config's.
  CommandResult worker(const std::string& sub, const std::vector<std::string>& args,
                       const std::string& layout = "");
  // Starts one holder and waits until it printed its lease. An error carries the
  // process's exit status and stderr (e.g. the exhaustion message).
  Result<Holder> acquire(const std::string& identity, const std::string& layout = "");
  // Starts one holder per identity all at once (they race in the coordinator), then
  // collects their leases in order. The first failure is returned; the others keep
  // running until stop/kill or the destructor.
  Result<std::vector<Holder>> acquire_all(const std::vector<std::string>& identities,
                                          const std::string& layout = "");
  // SIGTERM, then waits: the holder releases its lease and exits 0 (else an error with
  // its stderr).
  Status stop(const Holder& holder);
  // SIGKILL, then reaps: no release, as in a crash.
  void kill(const Holder& holder);
  // The slots `worker status` lists as taken.
  Result<std::set<uint64_t>> taken_slots(const std::string& layout = "");
  // Polls `worker status` until `slot` is no longer listed; the ms that took, or
  // DeadlineExceeded after max_ms.
  Result<int64_t> wait_until_free(uint64_t slot, int64_t max_ms, const std::string& layout = "");

  // --- the checks (gtest-friendly: EXPECT_TRUE(h.check_...())) ---

  // (a) n holders at once get n distinct slots (and distinct datacenter/worker pairs),
  // all listed by `worker status`; stopped, they release them all.
  ::testing::AssertionResult check_distinct_slots(int n = 10);
  // (b) A holder SIGKILLed mid-lease: its slot is listed as free within max_ms (local:
  // at once; coordinators: about the TTL). Reports the measured time in the message
  // and through *freed_after_ms when given.
  ::testing::AssertionResult check_kill_frees_slot(int64_t max_ms,
                                                   int64_t* freed_after_ms = nullptr);
  // (c) Three identities take slots; the one with the highest slot leaves (SIGTERM, or
  // SIGKILL and waiting for its slot to be free when after_kill) and so does the one
  // with the lowest, so a lower slot is free too; started again, the identity must get
  // its old slot back rather than the first free one.
  ::testing::AssertionResult check_restart_gets_old_slot(bool after_kill);
  // (d) With `layout` (default 4 slots: time:41,worker:2,sequence:12) every slot is
  // taken, then one more acquire fails: exit 1, one "idforge: " line naming the limit
  // ("all 4 worker slots") and the layout.
  ::testing::AssertionResult check_exhaustion(
      const std::string& layout = "time:41,worker:2,sequence:12", int slots = 4);

 private:
  std::vector<std::string> common_flags(const std::string& layout) const;
  std::string next_path(const std::string& stem);
  // Waits until the holder printed its whole lease or exited.
  Status await_lease(Holder* holder);
  void forget(pid_t pid);

  HarnessConfig config_;
  std::string data_dir_;
  std::set<pid_t> running_;
  int next_file_ = 0;
};

}  // namespace idforge::integration
