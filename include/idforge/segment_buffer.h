// SegmentBuffer: Leaf-style double buffer over a RangeSource for one tag. A user hands
// it a RangeSource (their own store, or a StripedSource) and takes IDs:
//
//   auto buffer = idforge::SegmentBuffer::create(&source, {.tag = "orders"}).value();
//   idforge::Result<uint64_t> id = buffer->next();
//
// next() hands out the current segment's IDs with one fetch_add, lock-free. When 10% of
// the current segment is used, the next one is fetched in the background; the switch
// is one atomic store. A caller waits only when both buffers are empty, and then at
// most wait_ms before it gets Unavailable with the store's last error. The step grows
// (segments that lasted under 15 minutes double it) and shrinks (over 30 minutes halve
// it) within [min_step, max_step].
//
// IDs of one buffer strictly increase as long as the source's ranges do (one store per
// tag); a striped source gives unique, upward-trending IDs. Thread-safety: all methods
// may be called from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "idforge/clock.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"

namespace idforge {

struct SegmentBufferOptions {
  std::string tag;
  uint64_t min_step = 1000;       // the tag's configured step
  uint64_t max_step = 1'000'000;  // upper bound of the dynamic step
  double prefetch_at = 0.1;       // fetch the next segment once this share is used
  int64_t wait_ms = 1000;         // longest a caller waits when both buffers are empty
  int64_t grow_below_ms = 15 * 60 * 1000;
  int64_t shrink_above_ms = 30 * 60 * 1000;
  Clock* clock = nullptr;  // for segment lifetimes; default_clock() when null
};

struct SegmentBufferStats {
  uint64_t fetches = 0;         // segments allocated
  uint64_t fetch_failures = 0;  // allocations that returned an error
  uint64_t waits = 0;           // calls that blocked because both buffers were empty
  uint64_t switches = 0;        // moves to the next segment
  uint64_t step = 0;            // step of the next fetch
  uint64_t current_first = 0;   // current segment (0/0 before the first)
  uint64_t current_count = 0;
  uint64_t current_used = 0;  // IDs taken from it (capped at count)
  bool next_ready = false;    // the second buffer holds a segment
  bool fetching = false;      // an allocation is in flight
  int64_t last_fetch_ms = 0;  // how long the last allocation took
  std::string last_error;     // of the last failed allocation, until one succeeds
};

// The buffer. An interface: create() returns the implementation, whose state is private
// to the library.
class SegmentBuffer {
 public:
  // `source` must outlive the buffer.
  static Result<std::unique_ptr<SegmentBuffer>> create(RangeSource* source,
                                                       SegmentBufferOptions options);
  virtual ~SegmentBuffer();
  SegmentBuffer(const SegmentBuffer&) = delete;
  SegmentBuffer& operator=(const SegmentBuffer&) = delete;

  virtual Result<uint64_t> next() = 0;
  // Fills `out` with increasing IDs (all or nothing: on error the taken ones are gaps).
  virtual Status next_batch(std::span<uint64_t> out) = 0;
  // Like next_batch but never waits for the store: fills `out` from the front while the
  // buffers hold IDs and returns how many it filled (fewer than out.size() when both
  // buffers ran empty; a fetch is then under way). For event loops that must not block:
  // they take what is there and ask next_batch() for the rest off the loop. Errors only
  // for what waiting would not fix (unknown tag, exhausted range, shutting down).
  virtual Result<size_t> try_next_batch(std::span<uint64_t> out) = 0;

  virtual const std::string& tag() const = 0;
  virtual SegmentBufferStats stats() const = 0;

 protected:
  SegmentBuffer() = default;
};

}  // namespace idforge
