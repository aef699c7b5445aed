// FileHighWaterStore: the time high-water mark in a small file (the `static` and
// `local` registries keep it in the data dir).
//
// The file holds the mark in Unix ms on its first line and, when known, the layout it
// was written under on a second ("layout " + mark_layout_key()). A file of one number
// (older versions) is a mark of unknown layout.
//
// store() writes a temporary file, fsyncs it, renames it over the old one and fsyncs
// the directory, so after a crash the file holds either the old or the new mark, never
// a torn one; a failed fsync is an error. A file that exists but does not hold a mark
// (a number that does not fit, trailing text, ...) is an error, never read as 0:
// guessing low could repeat IDs. Thread-safe.
#pragma once

#include <string>

#include "core/thread_annotations.h"
#include "idforge/high_water.h"

namespace idforge::coord {

class FileHighWaterStore final : public HighWaterStore {
 public:
  // The fsync the store calls, replaceable so tests can make it fail.
  using SyncFn = int (*)(int fd);

  explicit FileHighWaterStore(std::string path, SyncFn sync = nullptr);

  Result<int64_t> load() override;
  Status store(int64_t unix_ms) override;
  Result<HighWaterMark> load_mark() override IDFORGE_EXCLUDES(mu_);
  Status store_mark(const HighWaterMark& mark) override IDFORGE_EXCLUDES(mu_);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  SyncFn sync_;
  // One load or store at a time (two stores would share PATH.tmp). It guards the file,
  // not a member, so nothing here is GUARDED_BY it.
  Mutex mu_;
};

}  // namespace idforge::coord
