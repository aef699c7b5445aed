// StoreGuard: one segment store as a RangeSource that can never make this node repeat
// an ID, even when the store goes back (docs/stores.md, "When a store goes back").
//
// Two rules, one per level:
// - This node: a range is used only if it lies above every number this node has served
//   of that tag from this store's place (ServedMarks, kept across restarts), and only
//   once that is durable. Anything else is refused with a clear error and counted, and
//   the tag is not served from this store until the store is ahead again.
// - The fleet floor (core/fleet_floor.h): every range is recorded in the worker-id
//   registry as taken before it is used, and one that any node of the fleet took
//   already, or that lies at or below what the fleet took, is refused and the tag moved
//   past it. This is what catches a store that went back with its identity (a dump
//   restored, a tag recreated, max_id lowered by hand) after another node served.
// - The store's history: every range must be committed by the store history this node verified
//   (the identity a store reports with each range: PostgreSQL's system identifier and
//   timeline, Redis's replication id, an SQLite file's inode). When the history changed
//   (a promoted replica, a restored backup, a Redis restarted without its data), the
//   first node to notice moves every tag of the store past both the store's value and
//   its own highest served number, by the failover margin, and records the new identity
//   in one atomic step (SegmentStore::adopt_identity); the others see it recorded and go
//   on. Ranges committed under another history than the verified one are skipped.
//
// check() also claims the store's place among striped stores and, unless allowed,
// refuses a store whose settings can lose committed ranges. Thread-safe; the store and
// the marks must outlive the guard.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/fleet_floor.h"
#include "core/thread_annotations.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "log/log.h"
#include "log/repeats.h"
#include "store/guard_status.h"
#include "store/served_marks.h"

namespace idforge::store {

// The failover margin when none is set: kMarginNodes nodes, each of which may have had
// kMarginFetches ranges of the largest step committed during the replication lag that a
// failover loses (its two buffers plus refills).
inline constexpr uint64_t kMarginNodes = 16;
inline constexpr uint64_t kMarginFetches = 4;
uint64_t default_failover_margin(uint64_t max_step);

// Recorded before the identity of a store whose first tag was just created
// (record_new_store_identity): no node has served from it under another history.
extern const std::string kNewStorePrefix;

struct GuardSettings {
  ServedMarks* marks = nullptr;  // required
  FleetFloor* fleet = nullptr;   // null: no shared place (static: worker ids, admin commands)
  uint64_t margin = 0;           // added to every tag when the store's identity changes
  bool allow_unsafe = false;     // use a store whose durability settings can lose ranges
  // One line per change of state (a refusal, an identity change). Empty: the events go
  // to the process log (log/log.h) with their fields instead (docs/operations.md, "Logs").
  std::function<void(const std::string&)> log;
};

class StoreGuard final : public RangeSource {
 public:
  StoreGuard(SegmentStore* store, uint32_t index, uint32_t count, GuardSettings settings);

  // Claims the place, checks durability, and verifies the store's history (applying the
  // fleet step when it changed). Cheap when nothing changed: one identity read. Returns
  // InvalidArgument for a wrong place or an unsafe store, Unavailable when the store
  // does not answer.
  Status check() IDFORGE_EXCLUDES(check_mu_, mu_);

  // The store's next range of `tag`, guarded as above. A refused range moves the tag
  // past what was served and the next one is taken at once; Unavailable when that
  // keeps failing, or when the fleet floor cannot record the range.
  Result<Segment> allocate(std::string_view tag, uint64_t step) override
      IDFORGE_EXCLUDES(tags_mu_, check_mu_, mu_);

  GuardStatus status() const IDFORGE_EXCLUDES(mu_);
  const std::string& place() const { return place_; }
  SegmentStore* store() const { return store_; }

 private:
  // Unavailable while a striped set without a fleet floor has a place not yet confirmed.
  Status check_every_place_confirmed(std::string_view tag) const;
  Status check_locked() IDFORGE_REQUIRES(check_mu_) IDFORGE_EXCLUDES(mu_);
  // One range, guarded; *raised when it was refused and the tag moved past it. Called
  // with the tag's mutex held.
  Result<Segment> allocate_once(std::string_view tag, uint64_t step, bool* raised)
      IDFORGE_EXCLUDES(check_mu_, mu_);
  // Moves `tag` to at least `floor` in the store (same history only).
  Status raise_tag(std::string_view tag, uint64_t floor) IDFORGE_EXCLUDES(check_mu_, mu_);
  Status verify_identity_locked() IDFORGE_REQUIRES(check_mu_) IDFORGE_EXCLUDES(mu_);
  // The mutex of `tag`, made on first use; taken before check_mu_ and mu_.
  Mutex& tag_mutex(std::string_view tag) IDFORGE_EXCLUDES(tags_mu_);
  // Reports a change of state: to GuardSettings::log when set, else to the process log
  // as `event` with `fields` and the sentence as `message`.
  void report(log::Level level, std::string_view event, log::Fields fields,
              const std::string& line) const;

  SegmentStore* const store_;
  const uint32_t index_;
  const uint32_t count_;
  const std::string place_;
  const GuardSettings settings_;

  // Lock order: a tag's mutex, then check_mu_, then mu_. The tags' mutexes have no name
  // the analysis can order (they are made per tag); tags_mu_ is only held while one is
  // looked up, never with another of these.
  Mutex check_mu_ IDFORGE_ACQUIRED_BEFORE(mu_);  // one check at a time
  mutable Mutex mu_;
  std::string verified_ IDFORGE_GUARDED_BY(mu_);
  std::string recorded_ IDFORGE_GUARDED_BY(mu_);       // the store's record when verified_ was set
  std::string check_problem_ IDFORGE_GUARDED_BY(mu_);  // why the last check() failed
  // The last refused range, until one is taken.
  std::string range_problem_ IDFORGE_GUARDED_BY(mu_);
  uint64_t refused_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t foreign_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t changes_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t changes_seen_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t fleet_refused_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t fleet_unrecorded_ IDFORGE_GUARDED_BY(mu_) = 0;
  log::RepeatLimiter fleet_down_;  // segment.fleet_floor_unavailable ... _recovered
  // One allocation per tag at a time, so check-then-record sees ranges in store order.
  Mutex tags_mu_;
  std::map<std::string, std::unique_ptr<Mutex>, std::less<>> tag_mu_ IDFORGE_GUARDED_BY(tags_mu_);
};

}  // namespace idforge::store
