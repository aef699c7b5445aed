// FleetFloor: what the whole fleet has taken of each segment tag, kept in the worker-id
// registry (fleet_records.h), so that no store that goes back — wiped and its tag
// recreated at any start, restored from a dump or a backup with its identity, lowered by
// hand, failed over to a replica that missed writes — can make any node repeat an ID
// another node served (docs/stores.md, "The fleet floor").
//
// Each node records a range here before the range reaches its buffer (StoreGuard), and
// a range any number of which is at or below the floor, or was taken already, is never
// used. Healthy stores hand out disjoint ranges, but nodes record them in whatever order
// their round trips finish, so a record is a floor (every number up to it is taken) plus
// the few ranges taken above it; a range that fills the gap above the floor folds into
// it. Past kMaxRangesAbove ranges, the lowest ones fold into the floor too, gap and all:
// a gap below the floor is never handed out, which costs numbers, never uniqueness.
//
// Internal: included as "core/fleet_floor.h". Thread-safe; `records` must outlive it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet_records.h"
#include "idforge/status.h"
#include "thread_annotations.h"

namespace idforge {

// One tag's record, as stored: "fleet-floor 1 FLOOR FIRST-LAST ...".
struct FloorState {
  static constexpr size_t kMaxRangesAbove = 16;

  uint64_t floor = 0;  // every number up to this one is taken
  // Ranges taken above floor + 1: sorted, with a gap before each (touching ranges join).
  std::vector<std::pair<uint64_t, uint64_t>> above;

  // InvalidArgument for text that is not a record (never read as "nothing taken").
  static Result<FloorState> parse(std::string_view text);
  std::string format() const;
  // Takes [first, last]: false, changing nothing, when any of it is taken already.
  bool take(uint64_t first, uint64_t last);
  // The highest number taken (0: none).
  uint64_t highest() const;
};

// The result of FleetFloor::take.
struct FloorTake {
  bool taken = false;    // the range is this node's: nobody in the fleet had any of it
  uint64_t highest = 0;  // the fleet's highest number of the tag, after the call
};

class FleetFloor {
 public:
  explicit FleetFloor(FleetRecords& records) : records_(records) {}

  // Records [first, last] of `tag` from the store at `place` ("0/1") as taken, unless
  // any of it is at or below the floor or taken already (taken = false). Unavailable
  // when the registry does not answer: the range must then not be used.
  Result<FloorTake> take(std::string_view place, std::string_view tag, uint64_t first,
                         uint64_t last) IDFORGE_EXCLUDES(mu_);
  // The highest number of `tag` at `place` the fleet has taken (0: none).
  Result<uint64_t> highest(std::string_view place, std::string_view tag);
  // The highest over the places of `stores` striped stores ("0/1" for one store), in the
  // stores' own numbers: what a tag recreated on them must start above.
  Result<uint64_t> highest_of_tag(std::string_view tag, uint32_t stores);
  std::string describe() const { return records_.describe(); }

  // The record's name: "0-1-order" for tag order at place 0/1.
  static std::string record_name(std::string_view place, std::string_view tag);

 private:
  FleetRecords& records_;
  Mutex mu_;
  // What this node last read or wrote of each record: the next take tries its
  // compare-and-set on it first, which costs one round trip while this node is the
  // only one taking ranges of the tag.
  std::map<std::string, FleetRecord, std::less<>> known_ IDFORGE_GUARDED_BY(mu_);
};

}  // namespace idforge
