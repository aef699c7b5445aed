#include "server/service/service_health.h"

#include <fmt/format.h>

namespace idforge::server {

Result<ServicePart> parse_service_part(std::string_view name) {
  if (name.empty() || name == "all") return ServicePart::kAll;
  if (name == "snowflake") return ServicePart::kSnowflake;
  if (name == "segments") return ServicePart::kSegments;
  return Status::InvalidArgument(
      fmt::format("part must be all, snowflake or segments, got '{}'", name.substr(0, 64)));
}

PartReadiness ServiceHealth::readiness(ServicePart part) const {
  switch (part) {
    case ServicePart::kSnowflake:
      return snowflake_.readiness();
    case ServicePart::kSegments:
      return segments_.readiness();
    case ServicePart::kAll:
      break;
  }
  PartReadiness all{true, ""};
  for (const PartReadiness& one : {snowflake_.readiness(), segments_.readiness()}) {
    if (one.ready) continue;
    all.ready = false;
    all.why += (all.why.empty() ? "" : "; ") + one.why;
  }
  return all;
}

}  // namespace idforge::server
