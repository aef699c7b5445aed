#include "idforge/worker_registry.h"

namespace idforge {

Status all_slots_taken(const SlotSpace& space, const std::string& layout_name) {
  return Status::ResourceExhausted(
      "all " + std::to_string(space.slots()) + " worker slots (2^" +
      std::to_string(space.datacenter_bits + space.worker_bits) + ": datacenter " +
      std::to_string(space.datacenter_bits) + " bits + worker " +
      std::to_string(space.worker_bits) + " bits of layout " + layout_name +
      ") are taken; free one with `idforge worker release` or use a layout with more node bits");
}

}  // namespace idforge
