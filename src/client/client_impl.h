// The state behind idforge::Client (include/idforge/client.h): the servers' failover state
// and a buffer per kind and segment tag, refilled by one background thread
// (docs/clients.md, "Servers and failover" and "The local buffer").
//
// Locks, in the order they may be taken: a buffer's `mu`, then `queue_mu_` or `mu_` (the
// servers' state); `segments_mu_` and each Endpoint's lock are taken alone. No lock is
// held across a request to a server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "client/connection.h"
#include "client/endpoint.h"
#include "core/thread_annotations.h"
#include "idforge/client.h"
#include "idforge/status.h"

namespace idforge::client {

enum class RefillState { kIdle, kQueued, kRunning };

// What a request asks for, as errors name it: "snowflake IDs", "segment IDs of tag 'order'".
inline std::string describe_ids(Kind kind, std::string_view tag) {
  return kind == Kind::kSegment ? "segment IDs of tag '" + std::string(tag) + "'"
                                : std::string(kind_name(kind)) + " IDs";
}

// The IDs of one kind (and tag), in the batches they came in, each with the time its
// request was sent (its IDs were made after that: the age counts from there).
template <typename T>
class Buffer {
 public:
  struct Chunk {
    Clock::time_point at;
    std::vector<T> ids;
    size_t pos = 0;  // ids[pos..] are left
  };
  // A caller waiting on the empty buffer: a refill hands it an ID before it keeps any,
  // so that busy threads cannot starve a waiting one.
  struct Waiter {
    std::optional<T> value;
  };

  Buffer(Kind kind_of, std::string tag_of, int64_t max_age_ms)
      : kind(kind_of),
        tag(std::move(tag_of)),
        what(describe_ids(kind, tag)),
        max_age(std::chrono::milliseconds(max_age_ms)) {}

  // Drops the batches older than max_age (none when it is 0).
  void expire(Clock::time_point now) IDFORGE_REQUIRES(mu) {
    while (!chunks.empty() && now - chunks.front().at > max_age) {
      const size_t left = chunks.front().ids.size() - chunks.front().pos;
      size -= left;
      dropped += left;
      chunks.pop_front();
    }
  }

  // Precondition: size > 0.
  T take() IDFORGE_REQUIRES(mu) {
    Chunk& chunk = chunks.front();
    T value = std::move(chunk.ids[chunk.pos++]);
    if (chunk.pos == chunk.ids.size()) chunks.pop_front();
    --size;
    return value;
  }

  const Kind kind;
  const std::string tag;          // segment only
  const std::string what;         // "snowflake IDs", "segment IDs of tag 'order'"
  const Clock::duration max_age;  // 0: no limit

  mutable Mutex mu;
  std::condition_variable cv;  // a refill finished
  std::deque<Chunk> chunks IDFORGE_GUARDED_BY(mu);
  std::deque<Waiter*> waiters IDFORGE_GUARDED_BY(mu);
  uint64_t size IDFORGE_GUARDED_BY(mu) = 0;
  RefillState state IDFORGE_GUARDED_BY(mu) = RefillState::kIdle;
  uint64_t gen IDFORGE_GUARDED_BY(mu) = 0;              // counts finished refills
  std::optional<Status> error IDFORGE_GUARDED_BY(mu);   // of the last refill that got no IDs
  Clock::time_point retry_at IDFORGE_GUARDED_BY(mu){};  // no background refill before this
  uint64_t dropped IDFORGE_GUARDED_BY(mu) = 0;
  uint64_t refills IDFORGE_GUARDED_BY(mu) = 0;
};

using NumberBuffer = Buffer<uint64_t>;
using TextBuffer = Buffer<std::string>;

class ClientImpl final : public Client {
 public:
  // `wake_pipe`: a pipe's read and write ends, owned from here on.
  ClientImpl(const ClientOptions& options, std::vector<ServerAddress> servers,
             uint64_t refill_below, const int wake_pipe[2]);
  ~ClientImpl() override;

  Result<uint64_t> snowflake() override;
  Result<uint64_t> segment(std::string_view tag) override;
  Result<std::string> uuid7() override;
  Result<std::string> ulid() override;
  ClientStats stats() const override;

 private:
  struct ServerState {
    uint64_t failures = 0;      // in a row
    Clock::time_point until{};  // the end of its back-off period
    Clock::time_point last_failure{};
    std::string last_error;
  };

  // What one request with failover came to.
  struct Fetch {
    enum class Outcome { kIds, kError, kNothingTried };
    Outcome outcome = Outcome::kError;
    FetchedIds ids;
    Clock::time_point sent_at{};  // when the attempt that answered was sent
    Status error;
  };

  template <typename T>
  Result<T> next(Buffer<T>& buf);
  // An ID from the buffer (after dropping the expired ones), queueing a background refill
  // when it falls below refill_below; nullopt when it is empty.
  template <typename T>
  std::optional<T> take_buffered(Buffer<T>& buf) IDFORGE_REQUIRES(buf.mu);
  template <typename T>
  Result<T> next_slow(Buffer<T>& buf);
  // One request of `batch` IDs into `buf`, whose state the caller set to kRunning.
  // must_try=false (the background): when every server is backing off nothing is tried.
  // take_one: the first ID is returned to the caller rather than buffered.
  template <typename T>
  Result<std::optional<T>> refill(Buffer<T>& buf, bool must_try, bool take_one,
                                  std::optional<Clock::time_point> deadline);
  template <typename T>
  Result<T> request_one(Kind kind, std::string_view tag);

  // Called with buf.mu held, the buffer below refill_below and idle.
  template <typename T>
  void queue_refill(Buffer<T>& buf) IDFORGE_REQUIRES(buf.mu);
  void refill_loop();

  Fetch request(Kind kind, std::string_view tag, uint64_t count, bool must_try,
                std::optional<Clock::time_point> deadline);
  Attempt attempt(size_t index, Kind kind, std::string_view tag, uint64_t count,
                  std::optional<Clock::time_point> deadline, Clock::time_point* sent_at);
  void answered(size_t index) IDFORGE_EXCLUDES(mu_);
  void failed(size_t index, const std::string& reason, Clock::time_point started)
      IDFORGE_EXCLUDES(mu_);
  // When a background refill may start again after one that got no IDs.
  Clock::time_point retry_time(const Status* error) IDFORGE_EXCLUDES(mu_);
  // "URL failed: why; URL skipped: backing off ...": every server, in list order.
  std::string describe_servers(const std::vector<std::optional<std::string>>& tried) const
      IDFORGE_EXCLUDES(mu_);
  NumberBuffer& segment_buffer(std::string_view tag) IDFORGE_EXCLUDES(segments_mu_);

  const ClientOptions options_;
  const uint64_t refill_below_;
  const bool buffered_;
  const int wake_read_;
  const int wake_write_;
  std::atomic<bool> closed_{false};
  std::vector<std::unique_ptr<Endpoint>> endpoints_;

  mutable Mutex mu_;
  std::vector<ServerState> states_ IDFORGE_GUARDED_BY(mu_);
  size_t current_ IDFORGE_GUARDED_BY(mu_) = 0;  // the server that answered last

  NumberBuffer snowflake_;
  TextBuffer uuid7_;
  TextBuffer ulid_;
  mutable Mutex segments_mu_;
  std::map<std::string, std::unique_ptr<NumberBuffer>, std::less<>> segments_
      IDFORGE_GUARDED_BY(segments_mu_);

  Mutex queue_mu_;
  std::condition_variable queue_cv_;
  // Buffers waiting for the refill thread: a number or a text buffer, the other null.
  std::deque<std::pair<NumberBuffer*, TextBuffer*>> queue_ IDFORGE_GUARDED_BY(queue_mu_);
  std::thread thread_ IDFORGE_GUARDED_BY(queue_mu_);  // started by the first refill
};

}  // namespace idforge::client
