// Redis URLs, as the segment store and the worker registry read them:
// redis://[USER:PASSWORD@]HOST[:PORT][/DB] for one server, and
// redis-sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER_NAME[/DB] for
// the primary that those Sentinels name (redis_connection.h finds it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge::redis {

struct RedisAddress {
  std::string host;
  int port = 6379;
  std::string shown() const;  // "host:port", "[v6]:port"
};

// Where a URL points: redis://[user[:password]@]host[:port][/db], or
// redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/master_name[/db].
struct RedisTarget {
  std::string host;  // redis:// only; with Sentinels, found by asking them
  int port = 6379;
  int db = 0;
  std::string user;  // user and password are for the data server, not the Sentinels
  std::string password;
  std::vector<RedisAddress> sentinels;  // redis-sentinel://: asked in this order
  std::string master_name;

  bool via_sentinels() const { return !sentinels.empty(); }
  // The URL without user or password, for errors and describe().
  std::string shown() const;
};

inline constexpr int kDefaultSentinelPort = 26379;

// Parses a redis:// or redis-sentinel:// URL (no ?query). `what` names its use in
// errors ("store", "registry"); an error never shows the password.
Result<RedisTarget> parse_redis_url(std::string_view url, std::string_view what);
// Whether `url` is of a scheme parse_redis_url reads.
bool is_redis_url(std::string_view url);

}  // namespace idforge::redis
