// Files that survive a crash of the machine: what the served marks, the fleet floor's
// local records and the data directory itself are written with.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "idforge/status.h"

namespace idforge::store {

// The directory part of `path` ("." when it has none).
std::string parent_dir(const std::string& path);

// fsyncs the directory `dir`, so the entries created or renamed in it are durable.
Status sync_dir(const std::string& dir);

// Writes `text` to `path` so that a crash leaves the old or the new contents, never a
// torn file: a temporary file beside it (`path`.tmp, mode 0600), fsync, rename, fsync of
// the directory. Durable on return. Callers that share `path` between processes hold a
// lock around the call, since the temporary name is shared.
Status write_file_durably(const std::string& path, std::string_view text);

// Creates `dir` and its missing parents with mode 0700 and fsyncs each new entry into
// its parent, so a crash cannot take a directory away with the files written into it.
// Ok when it exists already; InvalidArgument naming `what` when it is not a directory.
Status make_dirs_durably(const std::string& dir, std::string_view what);

// An flock on a file beside the one it guards (PATH.lock: files that compaction
// replaces cannot carry their own lock), kept open by its owner: taking and letting go
// are two system calls. An flock belongs to the open file, which all the owner's threads
// share, so the owner keeps its own threads apart (a mutex held around with_lock).
// idforge never removes a lock file.
class LockFile {
 public:
  explicit LockFile(std::string path) : path_(std::move(path)) {}
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  // Runs `fn` with the lock held: exclusive, or shared with `shared`. The file is opened
  // (created, mode 0600) by the first call. IoError when it cannot be opened or locked;
  // otherwise what `fn` returns.
  Status with_lock(const std::function<Status()>& fn, bool shared = false);

 private:
  const std::string path_;
  int fd_ = -1;
};

}  // namespace idforge::store
