// Readiness: what /readyz and /v1/status say about each part of IdService. It has no
// thread and no lock of its own: each part keeps its state up to date on its own thread
// (the Snowflake part's renewals, the segment part's probers), and reading it takes
// atomics and short locks only, so readiness never waits on a backend.
#pragma once

#include "server/service/service_segments.h"
#include "server/service/service_snowflake.h"

namespace idforge::server {

class ServiceHealth {
 public:
  // Both parts must outlive this.
  ServiceHealth(const SnowflakePart& snowflake, const SegmentPart& segments)
      : snowflake_(snowflake), segments_(segments) {}

  // kAll: ready when every part is; the reason lists each part that is not, Snowflake
  // first.
  PartReadiness readiness(ServicePart part) const;

 private:
  const SnowflakePart& snowflake_;
  const SegmentPart& segments_;
};

}  // namespace idforge::server
