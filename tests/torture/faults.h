// The faults of the torture run and their schedules. Each fault runs on the main
// thread while the clients keep pulling IDs, and leaves the cluster running again, with
// every kind of ID flowing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "run.h"

namespace idforge::torture {

enum class FaultKind {
  kKillRestart,    // SIGKILL a server, start it again at once
  kClockBack10ms,  // step a running server's wall clock back
  kClockBack1s,
  kClockBack30s,
  kRestartClockBack,     // SIGKILL, wait out the lease, start it with its clock set back
  kCoordinatorRestart,   // stop Redis/etcd past the lease TTL, start it again
  kPostgresRestart,      // stop PostgreSQL for a while, start it again
  kPausePastTtl,         // SIGSTOP past the TTL; a replacement takes over; SIGCONT
  kPostgresFailover,     // the replica falls behind, the primary is SIGKILLed, the replica
                         // is promoted, and the old primary becomes its replica
  kStoreDumpRestored,    // pg_dump of the PostgreSQL store, more load, the dump loaded back
  kRedisWipedRecreated,  // the Redis store SIGKILLed, its files removed, restarted empty,
                         // and its tag recreated at 1 (`idforge tag create --start 1`)
};

inline constexpr FaultKind kAllFaults[] = {
    FaultKind::kKillRestart,       FaultKind::kClockBack10ms,      FaultKind::kClockBack1s,
    FaultKind::kClockBack30s,      FaultKind::kRestartClockBack,   FaultKind::kCoordinatorRestart,
    FaultKind::kPostgresRestart,   FaultKind::kPausePastTtl,       FaultKind::kPostgresFailover,
    FaultKind::kStoreDumpRestored, FaultKind::kRedisWipedRecreated};

std::string fault_name(FaultKind kind);

struct Step {
  FaultKind kind;
  size_t target = 0;          // index of the node (server faults); store faults: which of the
                              // store's nodes, modulo their number, the traffic comes back to
  int64_t clock_back_ms = 0;  // kRestartClockBack: how far back
  std::chrono::milliseconds gap{5000};  // load before this fault
};

// Every kind once (the restart with clock back twice: 1 s on a default node, 30 s on
// the node allowed to run ahead), on the nodes whose settings make it interesting.
std::vector<Step> short_schedule();
// One round of every kind in a random order, on random nodes, with random gaps.
std::vector<Step> random_round(Run& run);

void inject(Run& run, const Step& step);

// The checks a fault ends with (faults.cc): every running server answers /readyz with
// 200 again, and every kind of ID the cluster serves arrives again, soon after `what`
// (a failure of the run otherwise).
void expect_ready(Run& run, const std::string& what);
void expect_flow(Run& run, const std::string& what);
// false, and a failure of the run naming `what`, when `st` is an error.
bool step_ok(Run& run, const Status& st, const std::string& what);

// The faults of a store that goes back with its identity (store_faults.cc); `target`
// picks the node, among that store's, that the segment traffic comes back to first.
void store_dump_restored(Run& run, size_t target);
void redis_wiped_recreated(Run& run, size_t target);

}  // namespace idforge::torture
