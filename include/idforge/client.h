// Client: IDs from a list of idforge servers, through the loss of any of them, and
// Snowflake IDs decoded without a server (docs/clients.md: the behaviour shared with the
// Python and JavaScript clients).
//
// A request goes to the server that answered last; one that fails (no answer within
// `timeout_ms`, a refused or reset connection, a 5xx, an answer that is not idforge's) is
// skipped for a back-off period and the request moves on to the next. A local buffer per
// kind and segment tag, refilled by a background thread, serves most calls without a
// network round trip, also while every server is down (until it is empty).
//
//   idforge::ClientOptions options;
//   options.servers = {"http://10.0.0.1:8080", "redis://10.0.0.2:6380"};
//   idforge::Result<std::unique_ptr<idforge::Client>> ids = idforge::Client::open(options);
//   if (!ids.ok()) return ids.status();                       // a bad option or URL
//   idforge::Result<uint64_t> order = (*ids)->segment("order");  // 1001
//   idforge::Result<uint64_t> event = (*ids)->snowflake();       // 910499571847892992
//   // order.status(): NotFound "unknown tag ..." from the server, or Unavailable
//   // naming every server and why it could not answer.
//   idforge::Result<idforge::ParsedId> d = idforge::Client::parse(*event);
//   std::puts(d->to_json().c_str());  // the line of `idforge parse --json`
//
// Thread safety: a Client is shared by any number of threads (one per process is the
// intended use: the buffers and back-off are per client). Destroy it once no call is
// running; its buffered IDs are then dropped (never issued again: a gap). parse() is a
// pure function.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/status.h"

namespace idforge {

struct ClientOptions {
  // `http://HOST:PORT` (the JSON API; port 80 when left out) or `redis://HOST:PORT` (the
  // Redis protocol; port 6380, idforge's, when left out), in the order they are tried.
  std::vector<std::string> servers;
  // One request to one server: connect, send and the whole answer.
  int64_t timeout_ms = 1000;
  // IDs per request; at most the server's limits.max_count (else OutOfRange).
  uint64_t batch = 256;
  // A background refill starts when a buffer holds fewer IDs than this; 0..batch,
  // default batch / 2. 0: refill only when the buffer is empty.
  std::optional<uint64_t> refill_below;
  // Snowflake, UUIDv7 and ULID IDs fetched longer ago are dropped; 0: no limit.
  int64_t max_age_ms = 2000;
  // The same for segment IDs; 0 (the default): no limit.
  int64_t segment_max_age_ms = 0;
  // A failed server is skipped this long, doubling with each failure in a row up to
  // max_backoff_ms; one success clears it.
  int64_t backoff_ms = 500;
  int64_t max_backoff_ms = 30000;
  // false (or batch 1): no buffer, each call is one request.
  bool buffer = true;
};

// A Snowflake ID decoded by a layout: the keys and values of `idforge parse --json`.
struct ParsedId {
  uint64_t id = 0;
  std::string layout;  // the preset's name, or "custom"
  int64_t unix_ms = 0;
  std::string time;  // ISO-8601 UTC with ms; outside the years 0000..9999 the ms as text
  // Each non-time field in layout order, under its JSON key: its name, or "field_NAME"
  // for a custom field named id, layout, unix_ms or time.
  std::vector<std::pair<std::string, uint64_t>> fields;

  // The value of the field with that key; 0 when the layout has none.
  uint64_t get(std::string_view key) const;
  // {"id":"910499571847892992","layout":"twitter","unix_ms":1505914988849,
  //  "time":"2017-09-20T13:43:08.849Z","datacenter":17,"worker":25,"sequence":0}
  // (the id as text), without a newline.
  std::string to_json() const;
};

// What a client sees now, for monitoring and tests.
struct ClientServerState {
  std::string url;        // normalised: scheme://HOST:PORT
  uint64_t failures = 0;  // in a row
  int64_t backoff_left_ms = 0;
  std::string last_error;  // "" after a success
  bool current = false;    // the server that answered last
};
struct ClientBufferState {
  std::string kind;  // snowflake, segment, uuid7, ulid
  std::string tag;   // segment only
  uint64_t size = 0;
  uint64_t dropped = 0;  // by the age limit
  uint64_t refills = 0;
  bool refilling = false;
  std::string last_error;  // of the last refill; "" when it worked
};
struct ClientStats {
  std::vector<ClientServerState> servers;
  std::vector<ClientBufferState> buffers;
};

class Client {
 public:
  // Checks the options and the URLs (InvalidArgument naming the bad one); connects to
  // nothing yet.
  static Result<std::unique_ptr<Client>> open(ClientOptions options);

  virtual ~Client();

  // The next ID. Errors: InvalidArgument, OutOfRange or NotFound with the server's text
  // for a wrong request (an unknown tag, a batch above the server's limit), never tried
  // on another server; Unavailable, naming every server and why, when none answered.
  virtual Result<uint64_t> snowflake() = 0;
  virtual Result<uint64_t> segment(std::string_view tag) = 0;
  virtual Result<std::string> uuid7() = 0;
  virtual Result<std::string> ulid() = 0;

  virtual ClientStats stats() const = 0;

  // Decodes a Snowflake ID without a server: a preset (twitter, discord, instagram,
  // sonyflake, baidu) or a custom spec ("time:41,datacenter:5,worker:5,sequence:12"),
  // with the epoch (Unix ms, >= 0) and tick (1..86400000 ms) overridden when given.
  // InvalidArgument for a bad layout, epoch or tick, or an ID wider than the layout.
  static Result<ParsedId> parse(uint64_t id, std::string_view layout = "twitter",
                                std::optional<int64_t> epoch_ms = {},
                                std::optional<int64_t> tick_ms = {});

 protected:
  Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
};

}  // namespace idforge
