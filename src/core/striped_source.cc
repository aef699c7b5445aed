#include "idforge/striped_source.h"

#include <limits>

namespace idforge {

Result<Segment> StripedSource::allocate(std::string_view tag, uint64_t step) {
  const uint64_t k = stores_.size();
  if (k == 0) return Status::InvalidArgument("a striped source needs at least one store");
  const size_t start = next_.fetch_add(1, std::memory_order_relaxed);
  // In turn, but the stores known to be down last.
  std::vector<size_t> order;
  order.reserve(k);
  std::vector<size_t> down;
  for (size_t tried = 0; tried < k; ++tried) {
    const size_t i = (start + tried) % k;
    (known_down_ && known_down_(i) ? down : order).push_back(i);
  }
  order.insert(order.end(), down.begin(), down.end());
  std::string errors;
  for (const size_t i : order) {
    Result<Segment> got = stores_[i]->allocate(tag, step);
    if (!got.ok()) {
      // An unknown tag is unknown everywhere it matters; say so rather than hide it.
      if (got.status().code() == StatusCode::kNotFound) return got.status();
      errors += errors.empty() ? "" : "; ";
      errors += "store " + std::to_string(i) + ": " + got.status().message();
      continue;
    }
    const Segment& raw = *got;
    if (raw.count == 0) {
      return Status::Internal("store " + std::to_string(i) + " returned an empty range");
    }
    // A store that stripes by itself (Tinyid's delta and remainder: every database of
    // the tag has its own remainder) hands out its own residue class already.
    if (raw.stride != 1) return got;
    // raw.first is the first number of the store's own range; it becomes ID
    // raw.first * K + i, and consecutive numbers are K apart.
    const uint64_t max_number = raw.first + raw.count - 1;
    if (max_number > (std::numeric_limits<uint64_t>::max() - i) / k) {
      return Status::OutOfRange("tag " + std::string(tag) + " on store " + std::to_string(i) +
                                " has run past the 64-bit range when striped " + std::to_string(k) +
                                " ways");
    }
    return Segment{raw.first * k + i, raw.count, k, {}};
  }
  return Status::Unavailable("no store could allocate for tag " + std::string(tag) + ": " + errors);
}

}  // namespace idforge
