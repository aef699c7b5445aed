#include "worker_registry.h"

namespace idforge {

Status all_slots_taken(const SlotSpace& space, const std::string& layout_name) {
  return Status::ResourceExhausted(
      "all " + std::to_string(space.slots()) + " worker slots (2^" +
      std::to_string(space.datacenter_bits + space.worker_bits) + ": datacenter " +
      std::to_string(space.datacenter_bits) + " bits + worker " +
      std::to_string(space.worker_bits) + " bits of layout " + layout_name +
      ") are taken; free one with `idforge worker release` or use a layout with more node bits");
}

Status check_slot(const SlotSpace& space, uint64_t slot, const std::string& layout_name) {
  if (slot < space.slots()) return Status::Ok();
  return Status::InvalidArgument("slot " + std::to_string(slot) + " is out of range: layout " +
                                 layout_name + " has slots 0 to " +
                                 std::to_string(space.slots() - 1));
}

Status WorkerRegistry::release_at_mark(const Lease& lease, int64_t mark_ms) {
  Status stored = renew(lease, mark_ms);
  Status released = release(lease);
  return stored.ok() ? released : stored;
}

}  // namespace idforge
