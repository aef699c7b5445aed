// IDs from a list of idforge servers through the C++ client: a Snowflake ID (decoded
// without a server), a segment ID of the tag given, a UUIDv7 and a ULID. Build:
// examples/client/CMakeLists.txt.
//
//   client_ids [--tag TAG] URL...      e.g. client_ids http://127.0.0.1:8080 redis://10.0.0.2:6380
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "idforge/client.h"
#include "idforge/status.h"

int main(int argc, char** argv) {
  idforge::ClientOptions options;
  std::string tag;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--tag" && i + 1 < argc) {
      tag = argv[++i];
    } else {
      options.servers.emplace_back(argv[i]);
    }
  }
  idforge::Result<std::unique_ptr<idforge::Client>> ids = idforge::Client::open(options);
  if (!ids.ok()) {
    std::fprintf(stderr, "client_ids: %s\n", ids.status().to_string().c_str());
    return 2;
  }
  idforge::Result<uint64_t> event = (*ids)->snowflake();
  if (!event.ok()) {  // Unavailable: every server and why it could not answer
    std::fprintf(stderr, "client_ids: %s\n", event.status().to_string().c_str());
    return 1;
  }
  idforge::Result<idforge::ParsedId> fields = idforge::Client::parse(*event);
  std::printf("snowflake %llu %s\n", static_cast<unsigned long long>(*event),
              fields.ok() ? fields->to_json().c_str() : fields.status().to_string().c_str());
  if (!tag.empty()) {
    idforge::Result<uint64_t> order = (*ids)->segment(tag);  // NotFound for an unknown tag
    if (!order.ok()) {
      std::fprintf(stderr, "client_ids: %s\n", order.status().to_string().c_str());
      return 1;
    }
    std::printf("segment %s %llu\n", tag.c_str(), static_cast<unsigned long long>(*order));
  }
  idforge::Result<std::string> uuid = (*ids)->uuid7();
  idforge::Result<std::string> ulid = (*ids)->ulid();
  if (!uuid.ok() || !ulid.ok()) {
    std::fprintf(stderr, "client_ids: %s\n",
                 (uuid.ok() ? ulid.status() : uuid.status()).to_string().c_str());
    return 1;
  }
  std::printf("uuid7 %s\nulid %s\n", uuid->c_str(), ulid->c_str());
  return 0;
}
