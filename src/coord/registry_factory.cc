#include "coord/registry_factory.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>
#include <vector>

#include "coord/etcd/etcd_registry.h"
#include "coord/local/local_registry.h"
#include "coord/local/static_registry.h"
#include "coord/redis/redis_registry.h"
#include "coord/zookeeper/zookeeper_registry.h"
#include "core/text.h"

namespace idforge::coord {
namespace {

constexpr std::string_view kLocalScheme = "local:";

// Redis reads min_replicas and replica_wait_ms off its query itself (redis_registry.h).
Result<std::unique_ptr<WorkerRegistry>> open_redis_url(std::string_view url,
                                                       const RegistryOptions& options) {
  IDFORGE_ASSIGN_OR_RETURN(RedisRegistryUrl redis, take_redis_registry_options(url));
  return open_redis_registry(redis.rest, options, redis.writes);
}

// The table of kinds. Each scheme is spelled here once; the kinds' own URL parsers
// (local_registry.cc, etcd_url.cc, redis/redis_url.cc, ...) check the scheme of what
// they are given.
constexpr RegistryKind kKinds[] = {
    {"local",
     kLocalScheme,
     {"DIR"},
     "one flock'ed file per slot in DIR on this host (local: alone: DATA_DIR/workers)",
     {},
     true,
     open_local_registry},
    {"static",
     "static:",
     {"DC/WORKER", "ordinal"},
     "fixed ids; static: alone reads IDFORGE_DATACENTER_ID and IDFORGE_WORKER_ID, "
     "static:ordinal takes the number ending the host name's first label (idforge-7)",
     {},
     false,
     open_static_registry},
    {"redis",
     "redis://",
     {"HOST:PORT"},
     "Redis, atomic Lua scripts",
     {"min_replicas", "replica_wait_ms"},
     false,
     open_redis_url},
    {"redis",
     "redis-sentinel://",
     {"HOST:PORT,.../MASTER"},
     "Redis behind Sentinel: the primary the Sentinels name",
     {"min_replicas", "replica_wait_ms"},
     false,
     open_redis_url},
    {"etcd",
     "etcd://",
     {"HOST:PORT,..."},
     "etcd v3 through its JSON gateway",
     {},
     false,
     open_etcd_registry},
    {"zookeeper",
     "zookeeper://",
     {"HOST:PORT,.../PATH"},
     "ZooKeeper, ephemeral nodes",
     {},
     false,
     open_zookeeper_registry},
};

// A lease renewed every ttl/3 needs a few ms of room, and one that outlives a day
// keeps a dead node's slot taken for longer than anyone would wait.
constexpr int64_t kMinTtlMs = 100;
constexpr int64_t kMaxTtlMs = 86'400'000;
constexpr size_t kMaxClusterLength = 64;

// The URL as an error shows it: the password of a USER:PASSWORD@ becomes ***. The last
// '@' before the query ends the credentials, whatever characters the password holds.
std::string without_password(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t start = scheme + 3;
  const size_t at = url.substr(0, url.find('?')).rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  const size_t colon = url.substr(start, at - start).find(':');
  if (colon == std::string_view::npos) return std::string(url);  // a user name alone
  return fmt::format("{}:***{}", url.substr(0, start + colon), url.substr(at));
}

Status bad_url(std::string_view url, std::string_view why) {
  return Status::InvalidArgument(fmt::format("invalid worker registry '{}': {} (use {})",
                                             without_password(url), why, registry_url_forms()));
}

bool valid_cluster(std::string_view name) {
  if (name.empty() || name.size() > kMaxClusterLength) return false;
  for (char c : name) {
    const bool ok = text::is_alnum(c) || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return name != "." && name != "..";  // it becomes a path segment in etcd and ZooKeeper
}

// Applies "ttl_ms=N&cluster=NAME" to `options`; the kind's own parameters go to `own`,
// as they were written.
Status apply_query(std::string_view url, std::string_view query, const RegistryKind& kind,
                   RegistryOptions* options, std::string* own) {
  bool seen_ttl = false;
  bool seen_cluster = false;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (key == "ttl_ms") {
      if (seen_ttl) return bad_url(url, "ttl_ms is given twice");
      seen_ttl = true;
      int64_t ttl = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ttl);
      if (ec != std::errc() || p != value.data() + value.size() || ttl < kMinTtlMs ||
          ttl > kMaxTtlMs) {
        return bad_url(url, fmt::format("ttl_ms must be a whole number of ms from {} to {}, got "
                                        "'{}'",
                                        kMinTtlMs, kMaxTtlMs, value));
      }
      options->ttl_ms = ttl;
    } else if (key == "cluster") {
      if (seen_cluster) return bad_url(url, "cluster is given twice");
      seen_cluster = true;
      if (!valid_cluster(value)) {
        return bad_url(url, fmt::format("cluster must be 1 to {} of A-Z a-z 0-9 . _ -, got '{}'",
                                        kMaxClusterLength, value));
      }
      options->cluster = std::string(value);
    } else if (std::find(std::begin(kind.own_parameters), std::end(kind.own_parameters), key) !=
                   std::end(kind.own_parameters) &&
               !key.empty()) {
      if (!own->empty()) *own += '&';
      *own += item;
    } else {
      std::string known = "ttl_ms, cluster";
      for (std::string_view p : kind.own_parameters) {
        if (!p.empty()) known += fmt::format(", {}", p);
      }
      return bad_url(url, fmt::format("unknown parameter '{}' (known: {})", key, known));
    }
  }
  return Status::Ok();
}

}  // namespace

std::span<const RegistryKind> registry_kinds() { return kKinds; }

const RegistryKind* find_registry_kind(std::string_view url) {
  const std::string_view target = url.substr(0, url.find('?'));
  for (const RegistryKind& kind : kKinds) {
    if (target.starts_with(kind.scheme)) return &kind;
    // The bare word of a kind that needs no address: "local", "static".
    const std::string_view word = kind.scheme.substr(0, kind.scheme.size() - 1);
    if (kind.scheme.ends_with(':') && target == word) return &kind;
  }
  return nullptr;
}

std::string registry_url_forms() {
  std::vector<std::string> forms;
  for (const RegistryKind& kind : kKinds) {
    for (std::string_view form : kind.forms) {
      if (!form.empty()) forms.push_back(fmt::format("{}{}", kind.scheme, form));
    }
  }
  return text::join_alternatives(forms) + ", each optionally with ?ttl_ms=N&cluster=NAME";
}

std::string describe_registry_kinds() {
  std::string out;
  for (const RegistryKind& kind : kKinds) {
    if (!out.empty()) out += '\n';
    out += fmt::format("  {:<38} {}", fmt::format("{}{}", kind.scheme, kind.forms[0]), kind.what);
  }
  return out;
}

Status check_registry_url(std::string_view url) {
  if (url.empty() || find_registry_kind(url) != nullptr) return Status::Ok();
  return Status::InvalidArgument(fmt::format("unknown registry URL '{}' (expected {})",
                                             without_password(url), registry_url_forms()));
}

std::string local_registry_url(std::string_view dir) {
  return fmt::format("{}{}", kLocalScheme, dir);
}

Result<std::unique_ptr<WorkerRegistry>> open_registry(std::string_view url,
                                                      RegistryOptions options) {
  const size_t question = url.find('?');
  std::string target(url.substr(0, question));
  if (target.empty()) return bad_url(url, "it is empty");
  const RegistryKind* kind = find_registry_kind(target);
  if (kind == nullptr) return bad_url(url, "unknown kind");
  if (target.size() + 1 == kind->scheme.size()) target = kind->scheme;  // a bare word
  std::string own;
  if (question != std::string_view::npos) {
    IDFORGE_RETURN_IF_ERROR(apply_query(url, url.substr(question + 1), *kind, &options, &own));
  }
  if (options.space.datacenter_bits < 0 || options.space.worker_bits < 0 ||
      options.space.datacenter_bits + options.space.worker_bits < 1 ||
      options.space.datacenter_bits + options.space.worker_bits > 32) {
    return Status::InvalidArgument(
        fmt::format("a worker registry needs 1 to 32 node bits, got datacenter {} + worker {}",
                    options.space.datacenter_bits, options.space.worker_bits));
  }
  if (!own.empty()) target += "?" + own;
  return kind->open(target, options);
}

}  // namespace idforge::coord
