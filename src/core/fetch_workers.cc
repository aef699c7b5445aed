#include "fetch_workers.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "thread_annotations.h"

namespace idforge {
namespace {

// The hand-off: a queue the idle workers take from. A task is only queued when a worker
// is idle to take it, so no task waits behind a busy one.
class FetchWorkers {
 public:
  Status run(std::function<void()> work) IDFORGE_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (idle_ > static_cast<int>(queue_.size())) {
      queue_.push_back(std::move(work));
      lock.unlock();
      ready_.notify_one();
      return Status::Ok();
    }
    ++alive_;
    lock.unlock();
    try {
      std::thread([this, first = std::move(work)]() mutable { loop(std::move(first)); }).detach();
    } catch (const std::system_error& e) {
      lock.lock();
      --alive_;
      return Status::Unavailable(std::string("cannot start a segment fetch: ") + e.what());
    }
    return Status::Ok();
  }

  int alive() IDFORGE_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return alive_;
  }

 private:
  void loop(std::function<void()> work) IDFORGE_EXCLUDES(mu_) {
    for (;;) {
      work();
      work = nullptr;  // its captures go before the wait, not after the next task
      MutexLock lock(mu_);
      ++idle_;
      const auto until = std::chrono::steady_clock::now() + kFetchWorkerIdle;
      while (queue_.empty() && lock.wait_until(ready_, until)) {
      }
      const bool got = !queue_.empty();
      --idle_;
      if (!got) {
        --alive_;
        return;
      }
      work = std::move(queue_.front());
      queue_.pop_front();
    }
  }

  Mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_ IDFORGE_GUARDED_BY(mu_);  // never longer than idle_
  int idle_ IDFORGE_GUARDED_BY(mu_) = 0;                             // workers waiting on ready_
  int alive_ IDFORGE_GUARDED_BY(mu_) = 0;
};

// Never destroyed: detached workers may still wait on it while the process exits.
FetchWorkers& workers() {
  static auto* w = new FetchWorkers;
  return *w;
}

}  // namespace

Status run_on_fetch_worker(std::function<void()> work) { return workers().run(std::move(work)); }

int fetch_workers_alive() { return workers().alive(); }

}  // namespace idforge
