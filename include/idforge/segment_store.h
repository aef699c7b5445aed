// SegmentStore: where segment-mode tags live (docs/stores.md), and RangeSource,
// the one call the double buffer needs from it.
//
// A tag is a named sequence: one row (or hash) holding max_id and step. allocate() moves
// max_id up by `step` in one atomic statement and hands the caller the numbers
// (max_id - step, max_id]; it returns only once the new max_id is committed, so no ID
// of a range is ever visible before it is durable. Implementations: one folder each in
// src/store/ (sqlite, postgres, mysql for MySQL and MariaDB, redis), listed in the table
// of kinds in src/store/store_factory.cc. They block; callers keep them off I/O threads.
// Implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge {

// IDs first, first + stride, ..., count of them. stride is 1 except when a tag is
// spread over several stores (StripedSource).
struct Segment {
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t stride = 1;
  // The store history that committed the range (StoreIdentity::current), read in the
  // same transaction or on the same connection; "" when the source cannot tell.
  std::string identity;

  uint64_t last() const { return first + (count - 1) * stride; }
};

class RangeSource {
 public:
  virtual ~RangeSource() = default;
  // The next `step` numbers of `tag`, committed before this returns. NotFound for an
  // unknown tag; Unavailable or IoError when the store cannot be reached.
  virtual Result<Segment> allocate(std::string_view tag, uint64_t step) = 0;
};

struct TagSpec {
  std::string name;      // [A-Za-z0-9_.:-]{1,64}
  uint64_t start = 1;    // the first ID the tag hands out
  uint64_t step = 1000;  // numbers per allocation (the minimum when the step grows)
  std::string description;
  std::string serial_template;  // optional; see serial.h
};

struct TagInfo {
  std::string name;
  uint64_t max_id = 0;  // the highest number handed out so far (start - 1 when none)
  uint64_t step = 0;
  std::string description;
  std::string serial_template;
  int64_t updated_at_ms = 0;
};

// Validates a tag name; the error says which character or length is wrong.
Status validate_tag_name(std::string_view name);

// The largest step a tag may have.
inline constexpr uint64_t kMaxSegmentStep = 1'000'000'000;
// InvalidArgument unless 1 <= step <= kMaxSegmentStep.
Status validate_step(uint64_t step);
// The NotFound every store returns for an unknown tag, with the command that makes it.
Status unknown_tag(std::string_view tag);

// Who a store is, for the failover guard (docs/stores.md, "When a store goes back").
struct StoreIdentity {
  // Who the server is now. It changes whenever the store's history may have lost
  // committed writes: PostgreSQL's system identifier and timeline (a promoted replica
  // starts a new timeline), Redis's replication id (new at every start of a master and
  // at every promotion), an SQLite file's device and inode (a restored copy is a new
  // file). Empty when the store cannot tell.
  std::string current;
  // The identity recorded inside the store's own data ("" when none was ever recorded,
  // e.g. a new or wiped store).
  std::string recorded;
};

// One atomic step that moves every tag of a store past whatever it may have forgotten,
// and records the identity under which that was done.
struct IdentityChange {
  // Applied only if this is still the recorded identity ("" = none recorded), so when
  // several nodes notice the same change at once exactly one of them applies it.
  std::string expected;
  std::string adopt;    // the identity to record
  uint64_t margin = 0;  // added to every tag's max_id, after the floor
  // Per tag: max_id is first raised to at least this (the caller's own highest served
  // number on this store); tags not named start from their stored max_id.
  std::map<std::string, uint64_t, std::less<>> floors;
};

// How durable a committed allocation is on this store.
struct Durability {
  bool safe = true;  // survives a crash of the store's server
  std::string
      summary;  // e.g. "appendonly=yes appendfsync=everysec" or "fsync=on synchronous_commit=on"
  std::string risk;  // when !safe: what can be lost, and the setting that fixes it
};

class SegmentStore : public RangeSource {
 public:
  // AlreadyExists if the tag exists; InvalidArgument for a bad name, start or step.
  virtual Status create_tag(const TagSpec& spec) = 0;
  virtual Result<std::vector<TagInfo>> list_tags() = 0;
  virtual Result<TagInfo> get_tag(std::string_view name) = 0;  // NotFound if unknown
  virtual Status set_step(std::string_view name, uint64_t step) = 0;
  // "sqlite:/path/ids.db", "postgres://host:5432/db" (no password), "redis://host:port".
  virtual std::string describe() const = 0;

  // The failover guard's view of the store: who the server is now and the identity
  // recorded in its data. Unavailable or IoError when the store cannot be asked (a
  // PostgreSQL standby cannot report its WAL position, for one).
  virtual Result<StoreIdentity> identity() = 0;
  // Applies `change` atomically (one transaction; one Lua script on Redis): if the
  // recorded identity is still change.expected, sets every tag's max_id to
  // max(max_id, floors[tag]) + margin and records change.adopt; returns true. If another
  // identity is recorded by now, changes nothing and returns false (someone else did it).
  // Tags in `floors` that the store does not have are left alone (not recreated). A
  // result past 2^63-1 for any tag is OutOfRange and changes nothing.
  virtual Result<bool> adopt_identity(const IdentityChange& change) = 0;
  // The server's durability settings as they affect committed ranges.
  virtual Result<Durability> durability() = 0;
  // This store's place when a tag is striped over `count` stores: recorded on first use;
  // InvalidArgument naming both places when another (index, count) is recorded, since
  // two stores with one residue would hand out the same IDs. A single store is 0 of 1.
  // InvalidArgument also when index >= count.
  virtual Status claim_place(uint32_t index, uint32_t count) = 0;
};

}  // namespace idforge
