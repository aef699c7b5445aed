// The segment stores one process uses, and one tag's RangeSource over them: what
// `idforge next --tag`, `idforge tag ...` and the server share.
//
//   auto stores = store::open_stores(urls, data_dir);     // none given: SQLite in data_dir
//   auto source = store::tag_source(*stores, "order");    // striped when several stores
//   auto buffer = SegmentBuffer::create(source->source, {.tag = "order", ...});
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "idforge/striped_source.h"
#include "store/served_marks.h"
#include "store/store_guard.h"

namespace idforge::store {

// Creates `data_dir` (mode 0700) when missing. InvalidArgument when it is empty or a file.
Status ensure_data_dir(const std::string& data_dir);

// One store named by URL, or why it could not be opened.
struct OpenedStore {
  std::string url;
  std::unique_ptr<SegmentStore> store;  // null when `error` is set
  Status error;
  // The store as ranges are taken from it, when the caller asked for the guard.
  std::unique_ptr<StoreGuard> guard;
};

// What a process that issues segment IDs asks of its stores (store_guard.h).
struct StoreSafety {
  ServedMarks* marks = nullptr;  // null: no guard (admin commands, store tests)
  // What the fleet took of each tag, in the worker-id registry (core/fleet_floor.h);
  // null where the registry has no shared place (static:).
  FleetFloor* fleet = nullptr;
  uint64_t margin = 0;  // the failover margin; 0: default_failover_margin(max_step)
  uint64_t max_step = 1'000'000;
  bool allow_unsafe = false;  // accept a store whose settings can lose committed ranges
  std::function<void(const std::string&)> log;
};

// The served-marks file of a data directory.
std::string served_marks_path(const std::string& data_dir);

// Opens every store in `urls`, in order. With no URL this is the SQLite file
// segments.db in `data_dir`, which is created when missing. A malformed or repeated URL
// fails the whole call; a store that cannot be reached comes back with its error, so
// the caller decides whether the others are enough. With safety.marks every store gets
// a StoreGuard, checked at once: a store listed at another place than it has, or one
// that can lose committed ranges (unless allowed), fails the call (InvalidArgument).
Result<std::vector<OpenedStore>> open_stores(const std::vector<std::string>& urls,
                                             const std::string& data_dir,
                                             const StoreSafety& safety = {});

// Records "new:<identity>" in a store that has no identity and no tags yet, so the
// failover guard's first check does not take a new store for one that lost its data
// and move its tags forward by the margin (a node that knew the store under another
// history still does). Called before a tag is created; a store that cannot tell its
// identity is left alone.
Status record_new_store_identity(SegmentStore& store);

// With several stores an error says which one it comes from.
Status from_store(const Status& status, const OpenedStore& opened, size_t stores);

// A tag's RangeSource over the opened stores.
struct TagSource {
  RangeSource* source = nullptr;  // the store (its guard when it has one), or `striped`
  uint64_t step = 0;              // the largest configured step among the stores
  std::string serial_template;    // the first answering store's ("" when none)
  std::string down;               // stores skipped because they did not answer ("" if none)
  std::vector<std::unique_ptr<RangeSource>> placeholders;
  std::unique_ptr<StripedSource> striped;
};

// With one store any failure is returned. With several, the source works as long as one
// store answers: a store that is down keeps its position as a placeholder that fails, so
// the residues of the others never shift (two stores handing out the same ID). A tag
// missing from any store that answers is NotFound, since its share would be missing too.
// `stores` must outlive the result.
// `known_down` (optional): the stores a health check knows to be down, asked last.
Result<TagSource> tag_source(std::vector<OpenedStore>& stores, const std::string& tag,
                             StripedSource::KnownDown known_down = {});

}  // namespace idforge::store
