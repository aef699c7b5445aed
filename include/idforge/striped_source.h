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
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/segment_store.h"

namespace idforge {

class StripedSource final : public RangeSource {
 public:
  explicit StripedSource(std::vector<RangeSource*> stores) : stores_(std::move(stores)) {}

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  size_t size() const { return stores_.size(); }

 private:
  std::vector<RangeSource*> stores_;
  std::atomic<size_t> next_{0};
};

}  // namespace idforge
