// idforge as a library: Snowflake IDs for worker 7 of datacenter 1, each decoded back
// into its fields; a UUIDv7 and a ULID. Build: examples/CMakeLists.txt.
//
// Without a HighWaterStore the generator keeps no mark across restarts: IDs are unique
// for this process only. A service keeps the mark (and the worker id) in a coordinator;
// that is what `idforge serve` does (docs/operations.md).
#include <cstdio>
#include <memory>

#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"

int main() {
  idforge::SnowflakeOptions options;
  options.layout = idforge::Layout::twitter();
  options.nodes = {{"datacenter", 1}, {"worker", 7}};
  idforge::Result<std::unique_ptr<idforge::SnowflakeGenerator>> generator =
      idforge::SnowflakeGenerator::create(options);
  if (!generator.ok()) {
    std::fprintf(stderr, "ids: %s\n", generator.status().to_string().c_str());
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    idforge::Result<uint64_t> id = (*generator)->next();
    if (!id.ok()) {
      std::fprintf(stderr, "ids: %s\n", id.status().to_string().c_str());
      return 1;
    }
    idforge::Result<idforge::DecodedId> fields = options.layout.decode(*id);
    if (!fields.ok()) {
      std::fprintf(stderr, "ids: %s\n", fields.status().to_string().c_str());
      return 1;
    }
    std::printf("snowflake %llu unix_ms=%lld datacenter=%llu worker=%llu sequence=%llu\n",
                static_cast<unsigned long long>(*id), static_cast<long long>(fields->unix_ms),
                static_cast<unsigned long long>(fields->get("datacenter")),
                static_cast<unsigned long long>(fields->get("worker")),
                static_cast<unsigned long long>(fields->get("sequence")));
  }
  std::printf("uuid7 %s\n", idforge::Uuid7Generator::shared().next().to_string().c_str());
  std::printf("ulid %s\n", idforge::UlidGenerator::shared().next().to_string().c_str());
  return 0;
}
