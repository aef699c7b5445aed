#include "cli/worker_lease.h"

#include <fmt/format.h>

#include "coord/registry_factory.h"
#include "server/service/id_service.h"

namespace idforge::cli {

void add_registry_flags(CLI::App& cmd, RegistryFlags& flags, bool required, bool with_identity) {
  CLI::Option* registry =
      cmd.add_option("--registry", flags.url,
                     fmt::format("Worker-id registry: {} (docs/operations.md, \"Worker ids\")",
                                 coord::registry_url_forms()))
          ->type_name("URL");
  if (required) registry->required();
  if (with_identity) {
    cmd.add_option_function<std::string>(
           "--identity", [&flags](const std::string& v) { flags.identity = v; },
           "Who holds the lease; the same identity gets its old slot back when free "
           "(default: HOSTNAME:cli)")
        ->type_name("ID");
  }
}

std::string identity_of(const RegistryFlags& flags) {
  if (flags.identity) return *flags.identity;
  return server::host_name() + ":cli";
}

}  // namespace idforge::cli
