// ConnectionPool: a few connections to one server, shared by the threads of a store.
//
// A connection serves one call at a time. acquire() hands out an idle connection that
// still looks alive, else opens a new one while fewer than `max_size` exist, else waits
// for one to come back (every holder is bounded by its command timeout, so the wait is
// too). A connection that failed mid-call is discarded, never reused, so the next call
// reconnects. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/status.h"

namespace idforge {

// Conn needs: bool looks_alive() (cheap, no round trip) and bool broken() const.
template <typename Conn>
class ConnectionPool {
 public:
  using Connect = std::function<Result<std::unique_ptr<Conn>>()>;

  // One connection in use; goes back to the pool when the lease ends unless broken.
  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)),
          conn_(std::move(other.conn_)),
          reused_(other.reused_) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (pool_ != nullptr) pool_->give_back(std::move(conn_));
    }

    Conn& operator*() const { return *conn_; }
    Conn* operator->() const { return conn_.get(); }
    // True when the connection served earlier calls: a failure on it may only mean the
    // server restarted since, so one retry on a fresh connection is worth it.
    bool reused() const { return reused_; }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Conn> conn, bool reused)
        : pool_(pool), conn_(std::move(conn)), reused_(reused) {}

    ConnectionPool* pool_;
    std::unique_ptr<Conn> conn_;
    bool reused_;
  };

  ConnectionPool(size_t max_size, Connect connect)
      : max_size_(max_size < 1 ? 1 : max_size), connect_(std::move(connect)) {}
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  Result<Lease> acquire() IDFORGE_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    for (;;) {
      while (!idle_.empty()) {
        std::unique_ptr<Conn> conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->looks_alive()) return Lease(this, std::move(conn), true);
        // Closed by the server while idle (restart, idle timeout): drop it quietly.
        --open_;
      }
      if (open_ < max_size_) break;
      lock.wait(returned_);
    }
    ++open_;
    lock.unlock();
    // Connect without the lock: it may take up to the connect timeout.
    Result<std::unique_ptr<Conn>> conn = connect_();
    if (!conn.ok()) {
      lock.lock();
      --open_;
      returned_.notify_one();
      return conn.status();
    }
    return Lease(this, std::move(conn).value(), false);
  }

 private:
  void give_back(std::unique_ptr<Conn> conn) IDFORGE_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      if (conn && !conn->broken()) {
        idle_.push_back(std::move(conn));
      } else {
        --open_;
      }
    }
    // Destroying a broken connection (outside the lock) closes it.
    returned_.notify_one();
  }

  const size_t max_size_;
  const Connect connect_;
  Mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Conn>> idle_ IDFORGE_GUARDED_BY(mu_);
  size_t open_ IDFORGE_GUARDED_BY(mu_) = 0;  // idle + leased + being opened
};

}  // namespace idforge
