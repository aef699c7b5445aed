#include "store/store_common.h"

#include <fmt/format.h>

namespace idforge::store {

Status check_new_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(spec.name));
  if (spec.start < 1 || spec.start > kMaxId) {
    return Status::InvalidArgument(
        fmt::format("start must be from 1 to {}, got {}", kMaxId, spec.start));
  }
  return validate_step(spec.step);
}

std::string place_text(uint32_t index, uint32_t count) {
  return fmt::format("{}/{}", index, count);
}

Status check_place(std::string_view store, std::string_view recorded, uint32_t index,
                   uint32_t count) {
  if (recorded == place_text(index, count)) return Status::Ok();
  const size_t slash = recorded.find('/');
  const std::string was =
      slash == std::string_view::npos
          ? fmt::format("'{}'", recorded)
          : fmt::format("{} of {}", recorded.substr(0, slash), recorded.substr(slash + 1));
  return Status::InvalidArgument(fmt::format(
      "store {} is store {} for striped tags; this process lists it as store {} of {} — list the "
      "stores in the same order and number on every node",
      store, was, index, count));
}

}  // namespace idforge::store
