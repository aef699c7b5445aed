#include "coord/registry_floor.h"

#include <fmt/format.h>

#include "coord/registry_factory.h"

namespace idforge::coord {

std::string default_registry_url(const std::string& data_dir) {
  return local_registry_url(data_dir + "/workers");
}

Result<RegistryFloor> open_registry_floor(const std::string& url, const std::string& data_dir) {
  // The slot space does not matter to the records; the widest one accepts any static:
  // id a layout can have.
  RegistryOptions options;
  options.space = SlotSpace{16, 16};
  options.data_dir = data_dir;
  const std::string used = url.empty() ? default_registry_url(data_dir) : url;
  Result<std::unique_ptr<WorkerRegistry>> registry = open_registry(used, options);
  if (!registry.ok()) {
    return Status(registry.status().code(), fmt::format("the fleet floor's worker registry: {}",
                                                        registry.status().message()));
  }
  RegistryFloor out;
  out.registry = std::move(registry).value();
  if (FleetRecords* records = out.registry->fleet_records()) {
    out.floor = std::make_unique<FleetFloor>(*records);
    const RegistryKind* kind = find_registry_kind(used);
    out.on_this_host = kind != nullptr && kind->on_this_host;
  }
  return out;
}

}  // namespace idforge::coord
