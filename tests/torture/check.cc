#include "check.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace idforge::torture {

void append_ranges(std::span<const uint64_t> ids, const Range& meta, std::vector<Range>* out) {
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i + 1;
    while (j < ids.size() && ids[j - 1] != UINT64_MAX && ids[j] == ids[j - 1] + 1) ++j;
    Range r = meta;
    r.first = ids[i];
    r.last = ids[j - 1];
    out->push_back(r);
    i = j;
  }
}

CheckResult check_ranges(std::vector<Range>& ranges, size_t max_examples) {
  CheckResult result;
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.first != b.first ? a.first < b.first : a.last < b.last;
  });
  // Sweep in order of first value; `reach` is the highest value covered so far and
  // `owner` the range that covers it (it starts no later than the current one, so it
  // also covers the current one's first value whenever they overlap).
  bool any = false;
  uint64_t reach = 0;
  const Range* owner = nullptr;
  for (const Range& r : ranges) {
    result.ids += r.last - r.first + 1;
    if (!any || r.first > reach) {
      result.distinct += r.last - r.first + 1;
      reach = r.last;
      owner = &r;
      any = true;
      continue;
    }
    if (result.examples.size() < max_examples) {
      result.examples.push_back({*owner, r, r.first, std::min(r.last, reach)});
    }
    if (r.last > reach) {
      result.distinct += r.last - reach;
      reach = r.last;
      owner = &r;
    }
  }
  return result;
}

bool self_test(std::string* why) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 200; ++round) {
    // Answers of consecutive IDs from a small value space, so that some overlap (or,
    // in every other round, disjoint answers), with an occasional gap or repeat inside.
    const bool disjoint = round % 2 == 0;
    std::vector<uint64_t> all;
    std::vector<Range> ranges;
    uint64_t next_free = 1;
    const int answers = 1 + static_cast<int>(rng() % 40);
    for (int a = 0; a < answers; ++a) {
      std::vector<uint64_t> ids;
      uint64_t v = disjoint ? next_free + rng() % 3 : rng() % 500;
      const int n = 1 + static_cast<int>(rng() % 30);
      for (int k = 0; k < n; ++k) {
        ids.push_back(v);
        const uint64_t roll = rng() % 20;
        v += roll == 0 ? 2 : (roll == 1 && !disjoint ? 0 : 1);
      }
      next_free = v + 1;
      if (round == 7 && a == 0) ids.push_back(UINT64_MAX);  // the top value ends a run
      all.insert(all.end(), ids.begin(), ids.end());
      append_ranges(ids, Range{}, &ranges);
    }
    std::sort(all.begin(), all.end());
    const uint64_t distinct =
        static_cast<uint64_t>(std::unique(all.begin(), all.end()) - all.begin());
    const uint64_t total = [&] {
      uint64_t t = 0;
      for (const Range& r : ranges) t += r.last - r.first + 1;
      return t;
    }();
    const CheckResult result = check_ranges(ranges);
    const uint64_t expected_ids = static_cast<uint64_t>(all.size());
    if (result.ids != expected_ids || total != expected_ids || result.distinct != distinct ||
        (result.duplicates() == 0) != result.examples.empty() ||
        (disjoint && result.duplicates() != 0)) {
      *why = fmt::format(
          "round {}: {} IDs ({} in ranges), {} distinct; the range check says "
          "{} IDs, {} distinct, {} examples",
          round, expected_ids, total, distinct, result.ids, result.distinct,
          result.examples.size());
      return false;
    }
    for (const Overlap& o : result.examples) {
      if (o.first < o.a.first || o.last > o.a.last || o.first < o.b.first || o.last > o.b.last) {
        *why = fmt::format("round {}: an example overlap [{}, {}] is not in both ranges", round,
                           o.first, o.last);
        return false;
      }
    }
  }
  return true;
}

}  // namespace idforge::torture
