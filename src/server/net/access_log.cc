#include "server/net/access_log.h"

#include <algorithm>
#include <cstdint>

#include "log/log.h"

namespace idforge::server {
namespace {

// A path or a command is the client's text: long enough to recognise, never a flood.
constexpr size_t kMaxShown = 256;

int64_t micros(double seconds) { return static_cast<int64_t>(std::max(0.0, seconds) * 1e6 + 0.5); }

}  // namespace

void AccessLog::write_http(std::string_view method, std::string_view path, int status,
                           double seconds, std::string_view token) const {
  method = method.substr(0, kMaxShown);
  path = path.substr(0, kMaxShown);
  if (token.empty()) {
    log::info("access", {{"proto", "http"},
                         {"method", method},
                         {"path", path},
                         {"status", status},
                         {"duration_us", micros(seconds)}});
  } else {
    log::info("access", {{"proto", "http"},
                         {"method", method},
                         {"path", path},
                         {"status", status},
                         {"duration_us", micros(seconds)},
                         {"token", token}});
  }
}

void AccessLog::write_resp(std::string_view command, int status, double seconds,
                           std::string_view token) const {
  command = command.substr(0, kMaxShown);
  if (token.empty()) {
    log::info("access", {{"proto", "resp"},
                         {"command", command},
                         {"status", status},
                         {"duration_us", micros(seconds)}});
  } else {
    log::info("access", {{"proto", "resp"},
                         {"command", command},
                         {"status", status},
                         {"duration_us", micros(seconds)},
                         {"token", token}});
  }
}

}  // namespace idforge::server
