#include "redis/redis_url.h"

#include <fmt/format.h>

#include <charconv>
#include <string>
#include <string_view>

#include "core/text.h"
#include "url/url_options.h"

namespace idforge::redis {

std::string RedisAddress::shown() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string RedisTarget::shown() const {
  std::string s;
  if (via_sentinels()) {
    s = "redis-sentinel://";
    for (size_t i = 0; i < sentinels.size(); ++i) {
      s += (i == 0 ? "" : ",") + sentinels[i].shown();
    }
    s += "/" + master_name;
  } else {
    s = "redis://" + RedisAddress{host, port}.shown();
  }
  if (db != 0) s += fmt::format("/{}", db);
  return s;
}

namespace {

constexpr std::string_view kRedisScheme = "redis://";
constexpr std::string_view kSentinelScheme = "redis-sentinel://";
constexpr size_t kMaxMasterName = 128;

// "HOST[:PORT]" or "[V6][:PORT]" into `out`; the reason when it is not one.
std::string parse_address(std::string_view text, int default_port, RedisAddress* out) {
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return "unclosed '[' in the host";
    out->host = std::string(text.substr(1, close - 1));
    std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return "expected ':PORT' after ']'";
      port = after.substr(1);
    }
  } else {
    const size_t colon = text.rfind(':');
    out->host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) port = text.substr(colon + 1);
  }
  if (out->host.empty()) return "no host";
  out->port = default_port;
  if (!port.empty() && (!text::parse_int(port, &out->port) || out->port < 1 || out->port > 65535)) {
    return "the port must be a number from 1 to 65535";
  }
  return "";
}

// Sentinel names are free text to Redis; these characters keep the name one URL path
// segment that reads the same in every log.
bool valid_master_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxMasterName) return false;
  for (char c : name) {
    const bool ok = text::is_alnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool is_redis_url(std::string_view url) {
  return url.starts_with(kRedisScheme) || url.starts_with(kSentinelScheme);
}

Result<RedisTarget> parse_redis_url(std::string_view url, std::string_view what) {
  const bool sentinel = url.starts_with(kSentinelScheme);
  auto bad = [url, what, sentinel](std::string_view why) {
    // The URL may carry a password; show only what is after the '@', if any.
    const size_t at = url.rfind('@');
    const size_t scheme_end = url.find("://");
    const std::string scheme(
        url.substr(0, scheme_end == std::string_view::npos ? 0 : scheme_end + 3));
    const std::string safe = at == std::string_view::npos
                                 ? std::string(url)
                                 : scheme + "***@" + std::string(url.substr(at + 1));
    const std::string_view expected =
        sentinel ? "redis-sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER_NAME[/DB]"
                 : "redis://[USER:PASSWORD@]HOST[:PORT][/DB] or "
                   "redis-sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER_NAME[/DB]";
    return Status::InvalidArgument(
        fmt::format("bad redis {} URL '{}': {} (expected {})", what, safe, why, expected));
  };
  if (!is_redis_url(url)) return bad("it must start with redis:// or redis-sentinel://");
  std::string_view rest = url.substr(sentinel ? kSentinelScheme.size() : kRedisScheme.size());
  RedisTarget t;
  const size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view auth = rest.substr(0, at);
    const size_t colon = auth.find(':');
    // As other Redis clients read it: user[:password], either part may be empty.
    Result<std::string> user = percent_decode(auth.substr(0, colon));
    Result<std::string> password = percent_decode(
        colon == std::string_view::npos ? std::string_view() : auth.substr(colon + 1));
    if (!user.ok() || !password.ok()) return bad("a bad %-escape in the user or password");
    t.user = *user;
    t.password = *password;
    rest = rest.substr(at + 1);
  }
  const size_t slash = rest.find('/');
  const std::string_view hosts = rest.substr(0, slash);
  std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (sentinel) {
    std::string_view list = hosts;
    while (true) {
      const size_t comma = list.find(',');
      RedisAddress a;
      const std::string why = parse_address(list.substr(0, comma), kDefaultSentinelPort, &a);
      if (!why.empty()) {
        return bad(fmt::format("Sentinel {} in the list: {}", t.sentinels.size() + 1, why));
      }
      t.sentinels.push_back(std::move(a));
      if (comma == std::string_view::npos) break;
      list = list.substr(comma + 1);
    }
    const size_t name_end = path.find('/');
    const std::string_view name = path.substr(0, name_end);
    if (name.empty()) return bad("no master name after the Sentinel addresses");
    if (!valid_master_name(name)) {
      return bad(
          fmt::format("the master name must be 1 to {} of A-Z a-z 0-9 . _ - :", kMaxMasterName));
    }
    t.master_name = std::string(name);
    path = name_end == std::string_view::npos ? std::string_view() : path.substr(name_end + 1);
  } else {
    RedisAddress a;
    const std::string why = parse_address(hosts, 6379, &a);
    if (!why.empty()) return bad(why);
    t.host = std::move(a.host);
    t.port = a.port;
  }
  if (!path.empty() && (!text::parse_int(path, &t.db) || t.db < 0)) {
    return bad(sentinel ? "the database after the master name must be a number"
                        : "the database after '/' must be a number");
  }
  return t;
}

}  // namespace idforge::redis
