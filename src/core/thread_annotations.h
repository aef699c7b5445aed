// Clang thread-safety annotations, and a Mutex that carries them.
//
// libstdc++'s std::mutex has no capability attributes, so clang's -Wthread-safety cannot
// see what a std::lock_guard protects. Code that wants its locking checked declares its
// data `IDFORGE_GUARDED_BY(mu_)` with an idforge::Mutex and takes it with MutexLock; a
// read or write without the lock is then a compile error in the clang build
// (-Werror=thread-safety, top-level CMakeLists.txt). With other compilers the macros are
// empty and Mutex is a plain std::mutex.
//
//   mutable Mutex mu_;
//   int count_ IDFORGE_GUARDED_BY(mu_) = 0;
//   void add() IDFORGE_EXCLUDES(mu_) { MutexLock lock(mu_); ++count_; }
//   void add_locked() IDFORGE_REQUIRES(mu_) { ++count_; }
//
// Waiting on a condition variable goes through MutexLock::wait/wait_for/wait_until, which
// release and retake the lock; write the predicate as a loop in the caller, where the
// analysis knows the lock is held (it does not look into lambdas). A lambda that runs
// with the lock held says so: [&]() IDFORGE_REQUIRES(mu_) { ... }.
//
// Lock order (IDFORGE_ACQUIRED_BEFORE/AFTER) is checked with -Wthread-safety-beta, which
// the clang build turns on too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define IDFORGE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define IDFORGE_THREAD_ANNOTATION(x)
#endif

// A type that is a lock ("mutex" in messages).
#define IDFORGE_CAPABILITY(name) IDFORGE_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a capability for its lifetime.
#define IDFORGE_SCOPED_CAPABILITY IDFORGE_THREAD_ANNOTATION(scoped_lockable)
// Data read and written only with the lock held.
#define IDFORGE_GUARDED_BY(mu) IDFORGE_THREAD_ANNOTATION(guarded_by(mu))
// A pointer whose pointee is read and written only with the lock held.
#define IDFORGE_PT_GUARDED_BY(mu) IDFORGE_THREAD_ANNOTATION(pt_guarded_by(mu))
// Lock order, where both locks are members the analysis can name.
#define IDFORGE_ACQUIRED_BEFORE(...) IDFORGE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define IDFORGE_ACQUIRED_AFTER(...) IDFORGE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// The caller must hold the lock(s).
#define IDFORGE_REQUIRES(...) IDFORGE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The function takes the lock(s) and returns holding them.
#define IDFORGE_ACQUIRE(...) IDFORGE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// The function releases the lock(s) the caller held.
#define IDFORGE_RELEASE(...) IDFORGE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// Returns `result` when it took the lock.
#define IDFORGE_TRY_ACQUIRE(...) IDFORGE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The caller must not hold the lock(s): the function takes them itself.
#define IDFORGE_EXCLUDES(...) IDFORGE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function returns a reference to the named lock.
#define IDFORGE_RETURN_CAPABILITY(mu) IDFORGE_THREAD_ANNOTATION(lock_returned(mu))
// Opts one function out of the analysis; say why next to it.
#define IDFORGE_NO_THREAD_SAFETY_ANALYSIS IDFORGE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace idforge {

// std::mutex with the capability attribute. Not recursive, not copyable.
class IDFORGE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() IDFORGE_ACQUIRE() { mu_.lock(); }
  void unlock() IDFORGE_RELEASE() { mu_.unlock(); }
  bool try_lock() IDFORGE_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope, like std::unique_lock, and waits on condition variables
// with it.
class IDFORGE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) IDFORGE_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() IDFORGE_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets the lock go for a stretch (a call that may block) and takes it again; the
  // analysis follows both, so guarded data in between is an error.
  void unlock() IDFORGE_RELEASE() { lock_.unlock(); }
  void lock() IDFORGE_ACQUIRE() { lock_.lock(); }

  // Releases the lock while waiting and holds it again on return (also on a spurious
  // wake-up: callers loop on their condition).
  void wait(std::condition_variable& cv) { cv.wait(lock_); }

  // The same, with a time limit. False when the time ran out.
  template <class Rep, class Period>
  bool wait_for(std::condition_variable& cv, std::chrono::duration<Rep, Period> timeout) {
    return cv.wait_for(lock_, timeout) == std::cv_status::no_timeout;
  }
  template <class Clock, class Duration>
  bool wait_until(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> deadline) {
    return cv.wait_until(lock_, deadline) == std::cv_status::no_timeout;
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace idforge
