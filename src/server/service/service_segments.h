// SegmentPart: IdService's segment IDs. It owns the segment stores, one SegmentBuffer
// per tag over them, and one prober thread per store, so a store that hangs holds up
// only the requests that need that store's answer: not Snowflake (another part), not
// the other stores' probes, not tags already buffered, not the loading of other tags.
//
// Tag lookups go through a TagIndex: requests read it without a lock; writers take
// tags_mu_. Every entry lives until the part ends, so a reader's pointer never dangles. The stores
// are thread-safe (segment_store.h) and the list of them never changes after start, so no lock
// guards them.
//
// Locks, in the order they may be taken (never the other way round):
//   1. admin_mu_      serializes the admin calls (create_tag, set_step, list_tags)
//                     with each other, across their store round trips; requests never
//                     take it.
//   2. TagLoad::mu    one per tag being loaded, held across that tag's store round
//                     trips only: a second request for the same tag waits for the first
//                     load instead of repeating it; other tags do not wait.
//   3. tags_mu_       the index's writers, the entries and the loads under way; held
//                     only to copy or insert, never across a store call.
//   3. StoreHealth::mu one store's last probe result; a leaf.
//   3. run_mu_        stopping_ and the "probe now" counter the prober threads wait on;
//                     a leaf.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/segment_buffer.h"
#include "idforge/segment_store.h"
#include "idforge/serial.h"
#include "idforge/status.h"
#include "idforge/time_zone.h"
#include "log/repeats.h"
#include "server/service/service_config.h"
#include "server/service/service_status.h"
#include "server/service/tag_index.h"
#include "store/store_set.h"

namespace idforge::server {

struct SegmentPartOptions {
  int64_t wait_ms = 1000;         // longest a request waits for a segment
  uint64_t max_step = 1'000'000;  // upper bound of a tag's dynamic step
  // How often each store is probed (one indexed lookup of a tag no one can have).
  std::chrono::milliseconds probe_every{2000};
  // A probe still waiting after this long counts as no answer: the store is down until
  // it answers, rather than up until the client's timeout (5 s on Redis) runs out.
  std::chrono::milliseconds probe_stuck_after{1000};
  // A probe or a range fetch that takes longer is logged as slow (ServiceConfig).
  int64_t slow_ms = 500;
  Clock* clock = nullptr;  // the segment buffers' clock (ServiceConfig::clock)
};

class SegmentPart {
 public:
  // Takes the opened stores (store::open_stores), probes each once, and starts one
  // prober thread per store.
  // `marks` is what the stores' guards record served ranges in (open_stores' safety).
  static std::unique_ptr<SegmentPart> start(std::vector<store::OpenedStore> stores,
                                            std::unique_ptr<store::ServedMarks> marks,
                                            SegmentPartOptions options);
  ~SegmentPart();  // stop()
  SegmentPart(const SegmentPart&) = delete;
  SegmentPart& operator=(const SegmentPart&) = delete;

  // Stops the probers; waits for a probe in progress (at most the store's timeout).
  void stop() IDFORGE_EXCLUDES(run_mu_);

  // IDs from the tag's buffer without waiting: how many of `out` it filled (0 when the
  // tag is not loaded yet). Errors only for a bad tag name. Never blocks.
  Result<size_t> try_next(std::string_view tag, std::span<uint64_t> out) const;
  // IDs of `tag`, loading it first if needed. May block.
  Status next(std::string_view tag, std::span<uint64_t> out);
  // A whole new range of `tag` from its source, beside its buffer. May block.
  Result<Segment> range(std::string_view tag);
  // The next serial of `tag` (InvalidArgument when it has no template). May block.
  Result<std::string> serial(std::string_view tag, int64_t unix_ms, const TimeZone& zone);

  // Admin; may block. They wait for each other, never for or instead of requests.
  Result<TagInfo> create_tag(const TagSpec& spec) IDFORGE_EXCLUDES(admin_mu_, tags_mu_);
  // How many stores a tag is striped over (1 for one store).
  uint32_t store_count() const { return static_cast<uint32_t>(stores_.size()); }
  Result<std::vector<TagInfo>> list_tags() IDFORGE_EXCLUDES(admin_mu_);
  Result<TagInfo> set_step(std::string_view tag, uint64_t step)
      IDFORGE_EXCLUDES(admin_mu_, tags_mu_);

  // Never block.
  std::vector<StoreStatus> stores() const;
  std::vector<TagStatus> tags() const;
  std::vector<ServedMark> served() const;
  // Ready while at least one store answered its last probe: a tag striped over several
  // stores goes on from the ones that answer. The reason names the stores.
  PartReadiness readiness() const;

  // Probes every store now instead of at its next turn (a request saw a store fail).
  void probe_soon() IDFORGE_EXCLUDES(run_mu_);

 private:
  // One tag the part has served: its source over the stores and its double buffer.
  struct TagEntry {
    store::TagSource source;
    std::unique_ptr<RangeSource> timed;  // source.source, timed and logged: the buffer's source
    std::unique_ptr<SegmentBuffer> buffer;
    std::optional<SerialTemplate> serial;  // when the tag has a template
  };
  // One load of one tag under way; see the lock order above.
  struct TagLoad {
    Mutex mu;
  };
  // One store's last probe.
  struct StoreHealth {
    std::atomic<bool> up{false};
    std::atomic<int64_t> probing_since_ms{0};  // steady ms; 0 when no probe is under way
    mutable Mutex mu;
    std::string error IDFORGE_GUARDED_BY(mu);
    int64_t probed_at_ms IDFORGE_GUARDED_BY(mu) = -1;  // steady ms; -1 before the first
    log::RepeatLimiter down;                           // store.down ... store.up
    log::RepeatLimiter slow;                           // store.slow ... store.fast
  };

  SegmentPart(std::vector<store::OpenedStore> stores, std::unique_ptr<store::ServedMarks> marks,
              SegmentPartOptions options);

  TagEntry* find(std::string_view tag) const;
  // The tag's entry, loading it (store round trips under its TagLoad only) if needed.
  Result<TagEntry*> entry_for(std::string_view tag) IDFORGE_EXCLUDES(tags_mu_);
  // Builds a tag's source, buffer and template from the stores. The one place that
  // calls store::tag_source. No lock of this part is held.
  Result<std::unique_ptr<TagEntry>> load_tag(const std::string& name) IDFORGE_EXCLUDES(tags_mu_);

  // The one per-store probe: asks store `index` a question and records the answer.
  void probe_store(size_t index);
  void prober(size_t index) IDFORGE_EXCLUDES(run_mu_);
  // Records what a call that reached store `index` says about it.
  void note_store(size_t index, const Status& status);
  // Requests and loads do not know which store failed: the probers find out.
  void note_request(const Status& status);
  // Whether store `index` counts as up now, and if not, why (appended to `why`).
  bool store_up(size_t index, int64_t now_ms, std::string* why) const;
  std::string store_name(size_t index) const;  // its description, or its URL if never opened
  // The same for the log: a URL that was never opened is redacted (no password).
  std::string store_log_name(size_t index) const;

  std::unique_ptr<store::ServedMarks> marks_;  // declared first: the guards point into it
  std::vector<store::OpenedStore> stores_;     // fixed after start; the stores are thread-safe
  std::vector<std::unique_ptr<StoreHealth>> health_;  // one per store, same order
  const SegmentPartOptions options_;

  std::atomic<uint64_t> steps_changed_{0};  // set_step calls so far
  mutable Mutex tags_mu_;
  TagIndex<TagEntry> index_;  // read without a lock; set() under tags_mu_
  std::vector<std::unique_ptr<TagEntry>> entries_ IDFORGE_GUARDED_BY(tags_mu_);
  std::map<std::string, std::shared_ptr<TagLoad>, std::less<>> loads_ IDFORGE_GUARDED_BY(tags_mu_);

  Mutex admin_mu_ IDFORGE_ACQUIRED_BEFORE(tags_mu_);

  Mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ IDFORGE_GUARDED_BY(run_mu_) = false;
  uint64_t probe_round_ IDFORGE_GUARDED_BY(run_mu_) = 0;  // bumped by probe_soon()
  std::vector<std::thread> probers_;
};

}  // namespace idforge::server
