// SegmentStore: where segment-mode tags live (DESIGN.md section 4), and RangeSource,
// the one call the double buffer needs from it.
//
// A tag is a named sequence: one row (or hash) holding max_id and step. allocate() moves
// max_id up by `step` in one atomic statement and hands the caller the numbers
// (max_id - step, max_id]; it returns only once the new max_id is committed, so no ID
// of a range is ever visible before it is durable. Implementations: src/store/ (sqlite,
// postgres, redis). They block; callers keep them off I/O threads. Implementations
// must be thread-safe.
#pragma once

#include <cstdint>
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

class SegmentStore : public RangeSource {
 public:
  // AlreadyExists if the tag exists; InvalidArgument for a bad name, start or step.
  virtual Status create_tag(const TagSpec& spec) = 0;
  virtual Result<std::vector<TagInfo>> list_tags() = 0;
  virtual Result<TagInfo> get_tag(std::string_view name) = 0;  // NotFound if unknown
  virtual Status set_step(std::string_view name, uint64_t step) = 0;
  // "sqlite:/path/ids.db", "postgres://host:5432/db" (no password), "redis://host:port".
  virtual std::string describe() const = 0;
};

}  // namespace idforge
