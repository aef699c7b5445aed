// FileHighWaterStore: the time high-water mark in a small file (the `static` and
// `local` registries keep it in the data dir).
//
// store() writes a temporary file, fsyncs it, renames it over the old one and fsyncs
// the directory, so after a crash the file holds either the old or the new mark, never
// a torn one. A file that exists but does not hold a mark is an error, never read as 0:
// guessing low could repeat IDs. Thread-safe.
#pragma once

#include <mutex>
#include <string>

#include "idforge/high_water.h"

namespace idforge::coord {

class FileHighWaterStore final : public HighWaterStore {
 public:
  explicit FileHighWaterStore(std::string path) : path_(std::move(path)) {}

  Result<int64_t> load() override;
  Status store(int64_t unix_ms) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::mutex mu_;
};

}  // namespace idforge::coord
