// StripedSource: one tag spread over K stores with no single point of failure. A user
// with several RangeSources gives a SegmentBuffer one StripedSource over them:
//
//   idforge::StripedSource striped({&store_a, &store_b});
//   auto buffer = idforge::SegmentBuffer::create(&striped, {.tag = "orders"}).value();
//
// Store i hands out only IDs congruent to i mod K: its range (a, b] becomes the IDs
// (a+1)*K + i, (a+2)*K + i, ..., b*K + i. allocate() takes the stores in turn and skips
// one that fails, so while a store is down the others keep issuing, and IDs stay
// unique because no two stores share a residue. A range a store returns already
// striped (stride > 1: Tinyid's tables, where each database of a tag has its own
// `remainder` of `delta`) is passed on as it is, so all the stores of such a tag must
// stripe themselves. IDs trend upward but, unlike a single
// store, do not strictly increase across segments. Thread-safe; the stores must
// outlive it and must not be shared with another StripedSource of a different K (a
// SegmentStore records its place once claim_place(i, K) is called: call it first).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/segment_store.h"

namespace idforge {

class StripedSource final : public RangeSource {
 public:
  // Whether store `index` is known to be down now (a health check's verdict). Such a
  // store is asked only after every other one failed: one that hangs rather than
  // refuses would cost each refill its whole timeout.
  using KnownDown = std::function<bool(size_t index)>;

  explicit StripedSource(std::vector<RangeSource*> stores, KnownDown known_down = {})
      : stores_(std::move(stores)), known_down_(std::move(known_down)) {}

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  size_t size() const { return stores_.size(); }

 private:
  std::vector<RangeSource*> stores_;
  const KnownDown known_down_;
  std::atomic<size_t> next_{0};
};

}  // namespace idforge
