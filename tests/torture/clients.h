// The clients of the torture run: threads that each hold one keep-alive HTTP or RESP
// connection to one server and pull Snowflake and segment IDs from it in batches,
// recording every ID they receive. Errors never count as IDs: an error answer is
// counted by its code, a broken connection by what broke, and the client reconnects
// (to the same port: a restarted server keeps its address).
//
// Thread-safety: start() and stop() from one thread; ids_received() and ids_from() from
// any.
// records() only after stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "cluster.h"

namespace idforge::torture {

// What the IDs are unique within: Snowflake IDs across the cluster, segment IDs per tag
// (two tags in PostgreSQL, one in the Redis store).
enum Kind { kSnowflake = 0, kSegmentA = 1, kSegmentB = 2, kSegmentR = 3, kKinds = 4 };

struct ErrorCount {
  uint64_t count = 0;
  std::string example;  // the first message seen
};

// What one client thread saw.
struct ClientRecord {
  int server = 0;
  Protocol protocol = Protocol::kHttp;
  std::vector<Range> ranges[kKinds];  // every ID received, as runs of consecutive values
  uint64_t ids[kKinds] = {};
  // "http segment 503 unavailable", "resp snowflake unavailable", "resp connection reset"
  std::map<std::string, ErrorCount> errors;
  uint64_t requests = 0;
  uint64_t ok = 0;
};

struct ClientOptions {
  std::string tags[3];           // the segment tags (kinds kSegmentA, kSegmentB, kSegmentR)
  int threads_per_protocol = 2;  // per server
  double ids_per_second = 0;     // all threads together; 0: no limit
  uint64_t seed = 1;
  Clock::time_point run_start;
  std::chrono::milliseconds read_timeout{20000};  // longer than any pause of a server
};

class ClientPool {
 public:
  ClientPool(std::vector<ServerProc*> servers, ClientOptions options);
  ~ClientPool() { stop(); }

  void start();
  void stop();
  uint64_t ids_received() const { return ids_received_.load(std::memory_order_relaxed); }
  uint64_t ids_received(Kind kind) const {
    return kind_received_[kind].load(std::memory_order_relaxed);
  }
  // IDs of `kind` received from the server at `server` (its index in the constructor's
  // list).
  uint64_t ids_from(size_t server, Kind kind) const {
    return server_received_[server * kKinds + kind].load(std::memory_order_relaxed);
  }
  std::vector<ClientRecord>& records() { return records_; }

 private:
  void run(size_t index);

  std::vector<ServerProc*> servers_;
  ClientOptions options_;
  std::vector<ClientRecord> records_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  // Progress only: relaxed is enough, nothing is ordered by it.
  std::atomic<uint64_t> ids_received_{0};
  std::atomic<uint64_t> kind_received_[kKinds]{};
  std::unique_ptr<std::atomic<uint64_t>[]> server_received_;  // [server * kKinds + kind]
};

}  // namespace idforge::torture
