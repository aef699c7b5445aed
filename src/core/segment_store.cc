#include "idforge/segment_store.h"

#include "text.h"

namespace idforge {

Status validate_tag_name(std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return Status::InvalidArgument("a tag name has 1 to 64 characters, got " +
                                   std::to_string(name.size()));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = text::is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':';
    if (!ok) {
      return Status::InvalidArgument(
          "tag name has a character outside [A-Za-z0-9_.:-] at position " + std::to_string(i + 1));
    }
  }
  return Status::Ok();
}

Status validate_step(uint64_t step) {
  if (step < 1 || step > kMaxSegmentStep) {
    return Status::InvalidArgument("step must be from 1 to " + std::to_string(kMaxSegmentStep) +
                                   ", got " + std::to_string(step));
  }
  return Status::Ok();
}

Status unknown_tag(std::string_view tag) {
  const std::string name(tag);
  return Status::NotFound("unknown tag '" + name + "' (create it with: idforge tag create " + name +
                          ")");
}

}  // namespace idforge
