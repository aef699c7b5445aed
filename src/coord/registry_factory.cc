#include "coord/registry_factory.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "coord/etcd/etcd_registry.h"
#include "coord/local_registry.h"
#include "coord/redis/redis_registry.h"
#include "coord/static_registry.h"
#include "coord/zookeeper/zookeeper_registry.h"
#include "core/text.h"

namespace idforge::coord {
namespace {

constexpr const char* kForms =
    "static:DC/WORKER, static: (ids from IDFORGE_DATACENTER_ID and IDFORGE_WORKER_ID), "
    "static:ordinal (the number ending the host name's first label, as in idforge-7), local:DIR, "
    "local: "
    "(the data dir), redis://HOST:PORT[/DB], "
    "redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB], "
    "etcd://HOST:PORT[,HOST:PORT...] or zookeeper://HOST:PORT[,HOST:PORT...][/PATH], each "
    "optionally followed by ?ttl_ms=N&cluster=NAME";

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
  return Status::InvalidArgument(
      fmt::format("invalid worker registry '{}': {} (use {})", without_password(url), why, kForms));
}

bool valid_cluster(std::string_view name) {
  if (name.empty() || name.size() > kMaxClusterLength) return false;
  for (char c : name) {
    const bool ok = text::is_alnum(c) || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return name != "." && name != "..";  // it becomes a path segment in etcd and ZooKeeper
}

// Applies "ttl_ms=N&cluster=NAME" to `options`.
Status apply_query(std::string_view url, std::string_view query, RegistryOptions* options) {
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
    } else {
      return bad_url(url, fmt::format("unknown parameter '{}' (known: ttl_ms, cluster)", key));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_registry(std::string_view url,
                                                      RegistryOptions options) {
  // Redis reads options of its own off the query (redis_registry.h); the rest are common.
  RedisRegistryUrl redis{std::string(url), {}};
  if (is_redis_registry_url(url)) {
    IDFORGE_ASSIGN_OR_RETURN(RedisRegistryUrl taken, take_redis_registry_options(url));
    redis = std::move(taken);
    url = redis.rest;
  }
  const size_t question = url.find('?');
  std::string_view target = url.substr(0, question);
  if (question != std::string_view::npos) {
    IDFORGE_RETURN_IF_ERROR(apply_query(url, url.substr(question + 1), &options));
  }
  if (options.space.datacenter_bits < 0 || options.space.worker_bits < 0 ||
      options.space.datacenter_bits + options.space.worker_bits < 1 ||
      options.space.datacenter_bits + options.space.worker_bits > 32) {
    return Status::InvalidArgument(
        fmt::format("a worker registry needs 1 to 32 node bits, got datacenter {} + worker {}",
                    options.space.datacenter_bits, options.space.worker_bits));
  }

  // The bare words are accepted for the two backends that need no address.
  if (target == "static") target = "static:";
  if (target == "local") target = "local:";

  if (target.starts_with("static:")) return open_static_registry(target, options);
  if (target.starts_with("local:")) return open_local_registry(target, options);
  if (is_redis_registry_url(target)) return open_redis_registry(target, options, redis.writes);
  if (target.starts_with("etcd://")) return open_etcd_registry(target, options);
  if (target.starts_with("zookeeper://")) return open_zookeeper_registry(target, options);
  if (target.empty()) return bad_url(url, "it is empty");
  return bad_url(url, "unknown kind");
}

}  // namespace idforge::coord
