// The kinds of worker registry and opening one from its URL: the one table of kinds
// (registry_factory.cc) that the factory, `idforge serve`'s settings check and the CLI's
// --registry help all read. Each kind's code is its own folder (coord/<kind>/); adding
// one is a folder and a row (docs/contributing.md, "Adding a worker registry").
//
// Any kind takes ?ttl_ms=N&cluster=NAME, overriding `options`; a kind may read more
// parameters of its own (Redis: min_replicas, replica_wait_ms).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/worker_registry.h"

namespace idforge::coord {

struct RegistryKind {
  std::string_view name;    // "etcd": the kind as docs and messages name it
  std::string_view scheme;  // "etcd://": a URL of this kind starts with it
  // What may follow the scheme, for help: "HOST:PORT,..."; a second form or "".
  std::string_view forms[2];
  std::string_view what;  // "etcd v3 through its JSON gateway"
  // Query parameters the kind reads itself, besides ttl_ms and cluster.
  std::string_view own_parameters[2];
  bool on_this_host;  // its records are files on this host (local:)
  // `url` is the target with only the kind's own parameters left in its query; the
  // common ones are in `options`.
  Result<std::unique_ptr<WorkerRegistry>> (*open)(std::string_view url,
                                                  const RegistryOptions& options);
};

// Every kind, in the order help lists them.
std::span<const RegistryKind> registry_kinds();
// The kind `url` names: its scheme, or the bare word of a kind that needs no address
// ("local", "static"); null for none.
const RegistryKind* find_registry_kind(std::string_view url);
// The URL forms for help and errors: "local:DIR, static:DC/WORKER, ... or
// zookeeper://HOST:PORT,.../PATH, each optionally with ?ttl_ms=N&cluster=NAME".
std::string registry_url_forms();
// One line per kind, "  FORM  WHAT", joined by newlines, for a command's help.
std::string describe_registry_kinds();
// Ok when some kind takes `url` (or it is empty: the default); else InvalidArgument
// "unknown registry URL '...' (expected FORMS)". Only the kind is checked here.
Status check_registry_url(std::string_view url);
// The URL of the `local:` registry kept in `dir`.
std::string local_registry_url(std::string_view dir);

// Opens the registry `url` names, by its kind.
Result<std::unique_ptr<WorkerRegistry>> open_registry(std::string_view url,
                                                      RegistryOptions options);

}  // namespace idforge::coord
