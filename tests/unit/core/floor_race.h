// Nodes racing to record disjoint ranges of one tag in a fleet floor, as nodes refilling
// from one healthy store do: what fleet_floor_test.cc (records in memory) and
// fleet_records_test.cc (each registry's real server) check the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/fleet_floor.h"

namespace idforge::testing {

struct FloorRace {
  std::vector<std::pair<uint64_t, uint64_t>> used;  // ranges taken, sorted
  int refused = 0;                                  // ranges the floor refused
  std::string error;                                // the first error, "" when none

  // No number in two taken ranges.
  bool disjoint() const {
    for (size_t i = 1; i < used.size(); ++i) {
      if (used[i].first <= used[i - 1].second) return false;
    }
    return true;
  }
};

// One thread per entry of `nodes`, each with a FleetFloor of its own over those records,
// recording `takes` ranges of `step` numbers that a healthy store hands out (disjoint,
// in the order the threads get them) for tag "raced" at place 0/1.
inline FloorRace race_floor(const std::vector<FleetRecords*>& nodes, int takes, uint64_t step) {
  std::atomic<uint64_t> store_max{0};
  std::mutex mu;
  FloorRace out;
  std::vector<std::thread> threads;
  for (FleetRecords* records : nodes) {
    threads.emplace_back([&, records] {
      FleetFloor floor(*records);
      for (int i = 0; i < takes; ++i) {
        const uint64_t last = store_max.fetch_add(step) + step;
        Result<FloorTake> took = floor.take("0/1", "raced", last - step + 1, last);
        std::lock_guard lock(mu);
        if (!took.ok()) {
          if (out.error.empty()) out.error = took.status().to_string();
          return;
        }
        if (took->taken) {
          out.used.emplace_back(last - step + 1, last);
        } else {
          ++out.refused;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::sort(out.used.begin(), out.used.end());
  return out;
}

}  // namespace idforge::testing
