// The sampled access log (NetOptions::access_log_sample, docs/operations.md, "Logs"):
// one request in N as an `access` event at level info. HTTP: method, path (without the
// query, which may carry a token), status, duration; RESP: the command's name, status,
// duration; both the `name=` of the client token that was admitted (auth.h), when there
// is one. Never a header (Authorization), a query string, a command's arguments or a
// token's secret.
//
// The runtime (net_server.cc) gives every session the server's AccessLog when N > 0; a
// session asks sample() once per request and writes the ones it is told to. Counting is
// per thread (no shared counter to bounce between the event loops), so "one in N" holds
// per event loop; while the log's level is above info, nothing is sampled, so a session
// copies and times nothing for lines that would not be written. Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "log/log.h"

namespace idforge::server {

class AccessLog {
 public:
  explicit AccessLog(uint64_t one_in) : one_in_(one_in) {}

  // Whether the request now being handled is one to write.
  bool sample() const {
    thread_local uint64_t seen = 0;
    return one_in_ != 0 && log::enabled(log::Level::kInfo) && seen++ % one_in_ == 0;
  }
  // `token`: the admitted token's name, "" for none.
  void write_http(std::string_view method, std::string_view path, int status, double seconds,
                  std::string_view token = {}) const;
  void write_resp(std::string_view command, int status, double seconds,
                  std::string_view token = {}) const;

 private:
  const uint64_t one_in_;
};

}  // namespace idforge::server
