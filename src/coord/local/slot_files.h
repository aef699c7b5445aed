// Slot files on one host, shared by the `static` and `local` registries: a lock file
// per slot (DIR/worker-<slot>.lock) held with flock, and the slot's high-water mark
// beside it (DIR/worker-<slot>.mark). Both registries use the same names, so a static
// id and a local one in the same directory exclude each other too.
//
// flock belongs to the open file, so the kernel drops it the moment the holding
// process dies, however it dies: a crashed holder frees its slot at once. A lock file is
// never removed while it may be locked (that would let two processes lock two
// different files of one name); SlotLock checks after locking that it locked the file
// the path names now.
//
// SlotLock is not thread-safe; the free functions are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "idforge/status.h"

namespace idforge::coord {

std::string slot_lock_path(const std::string& dir, uint64_t slot);
std::string slot_mark_path(const std::string& dir, uint64_t slot);

// Creates `dir` (and parents) with mode 0700 when missing; an error names `what`.
Status ensure_private_dir(const std::string& dir, const std::string& what);

// Who holds a lock file, as its holder wrote it ("" if unreadable or not written yet).
struct SlotHolder {
  std::string identity;
  int64_t pid = 0;
  std::string describe() const;  // "host:cli (pid 1234)", or "another process"
};

// An exclusive flock on one slot's lock file; destroying it unlocks.
class SlotLock {
 public:
  ~SlotLock();
  SlotLock(const SlotLock&) = delete;
  SlotLock& operator=(const SlotLock&) = delete;

  // Tries to lock `path` without blocking, `attempts` times 2 ms apart (a `worker status`
  // probe holds a free slot's lock for a few microseconds; a caller that must not
  // mistake that for a holder retries). On success writes `identity` and our pid
  // into the file. Returns null with *holder filled when another process holds it;
  // an error only when the file cannot be used at all.
  static Result<std::unique_ptr<SlotLock>> try_lock(const std::string& path,
                                                    const std::string& identity, int attempts,
                                                    SlotHolder* holder);

  // True while the path still names the file we locked (nobody removed or replaced it).
  bool still_linked() const;
  const std::string& path() const { return path_; }

  // Removes the file while still holding it: for freeing a stale slot.
  Status unlink_and_unlock();

 private:
  SlotLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Whether a lock file is held by a live process now (by locking it for a moment when
// free) and, if so, by whom. A missing file is free.
Result<bool> slot_held(const std::string& path, SlotHolder* holder);

}  // namespace idforge::coord
