// The duplicate check of the torture run. IDs are kept as ranges of consecutive values
// (an answer of 1,000 IDs is one or two ranges: a segment, or the sequence numbers of a
// tick), which represent exactly the IDs received, at a few bytes per answer instead
// of eight per ID. A duplicate is then an overlap of two ranges, found by sorting them.
// check_ranges() is verified against a plain sort of the IDs by self_test(), which the
// run calls before it trusts it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace idforge::torture {

enum class Protocol : uint8_t { kHttp, kResp };

// Consecutive IDs [first, last] from one answer, and where the answer came from.
struct Range {
  uint64_t first = 0;
  uint64_t last = 0;
  uint32_t at_ms = 0;  // when it arrived, since the run started
  uint16_t server = 0;
  uint16_t incarnation = 0;  // which start of that server the connection reached
  Protocol protocol = Protocol::kHttp;
};

// Appends `ids`, in the order received, as maximal runs of consecutive values, each
// carrying `meta`'s origin.
void append_ranges(std::span<const uint64_t> ids, const Range& meta, std::vector<Range>* out);

// IDs received twice or more: [first, last] of `b` were already in `a`.
struct Overlap {
  Range a;
  Range b;
  uint64_t first = 0;
  uint64_t last = 0;
};

struct CheckResult {
  uint64_t ids = 0;               // received, counting repeats
  uint64_t distinct = 0;          // different values
  std::vector<Overlap> examples;  // the first few overlaps, in ID order
  uint64_t duplicates() const { return ids - distinct; }
};

// Sorts `ranges` and counts the IDs covered more than once.
CheckResult check_ranges(std::vector<Range>& ranges, size_t max_examples = 5);

// check_ranges() against sorting the plain IDs, on random data with and without
// repeats; false (and why) if they disagree.
bool self_test(std::string* why);

}  // namespace idforge::torture
