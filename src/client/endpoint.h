// One server of a client as the wire sees it: its URL, its kept-alive connections and one
// request for IDs over HTTP/1.1 (the JSON API) or RESP2 (the Redis protocol), with a
// deadline that covers connect, send and the whole answer (docs/api.md).
//
// What an answer means (docs/clients.md, "Servers and failover"):
//   the IDs asked for                      kIds
//   HTTP 400, 404, 409; RESP -ERR with     kWrongRequest: every server would say the same
//     invalid_argument, out_of_range or
//     not_found
//   anything else: no answer in time, a    kFailed: the request moves on to another server
//     refused or reset connection, any
//     other status or RESP error, an
//     answer that is not the IDs asked for
// A kept-alive connection the server closed meanwhile (its idle timeout, a restart) is
// replaced by a new one within the same request and is not a failure.
//
// Thread-safe: concurrent requests use separate connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/connection.h"
#include "core/thread_annotations.h"
#include "idforge/status.h"

namespace idforge::client {

enum class Kind { kSnowflake, kSegment, kUuid7, kUlid };
std::string_view kind_name(Kind kind);

struct ServerAddress {
  bool http = true;  // else redis://
  std::string host;  // without brackets
  uint16_t port = 0;
  std::string url;  // normalised: scheme://HOST:PORT (IPv6 in brackets)
};

// `http://HOST[:PORT][/]` or `redis://HOST[:PORT][/]`; InvalidArgument naming the URL.
Result<ServerAddress> parse_server_url(std::string_view url);

// The IDs of one answer: numbers for snowflake and segment, text for uuid7 and ulid.
struct FetchedIds {
  std::vector<uint64_t> numbers;
  std::vector<std::string> texts;
};

struct Attempt {
  enum class Outcome { kIds, kWrongRequest, kFailed };
  Outcome outcome = Outcome::kFailed;
  FetchedIds ids;
  Status error;        // kWrongRequest: the server's code and text, naming the server
  std::string reason;  // kFailed: why, as the Unavailable error shows it
};

class Endpoint {
 public:
  // `wake_fd` becomes readable when the client is destroyed: requests end at once.
  Endpoint(ServerAddress address, int wake_fd, const std::atomic<bool>* closed);
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& url() const { return address_.url; }

  // `count` IDs of `kind` (of `tag` for segments), within `timeout_ms`.
  Attempt fetch(Kind kind, std::string_view tag, uint64_t count, int64_t timeout_ms)
      IDFORGE_EXCLUDES(mu_);

 private:
  Result<FetchedIds> http(Connection& conn, Kind kind, std::string_view tag, uint64_t count,
                          const Deadline& deadline, Status* wrong);
  Result<FetchedIds> resp(Connection& conn, Kind kind, std::string_view tag, uint64_t count,
                          const Deadline& deadline, Status* wrong);
  std::unique_ptr<Connection> take_idle() IDFORGE_EXCLUDES(mu_);
  void give_back(std::unique_ptr<Connection> conn) IDFORGE_EXCLUDES(mu_);

  const ServerAddress address_;
  const std::string host_header_;
  const int wake_fd_;
  const std::atomic<bool>* const closed_;
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ IDFORGE_GUARDED_BY(mu_);
};

}  // namespace idforge::client
