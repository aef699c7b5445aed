// MemoryHighWaterStoreImpl: the state behind MemoryHighWaterStore
// (include/idforge/high_water.h), a mark in memory under one mutex. Internal: included
// as "core/high_water_impl.h", never installed.
#pragma once

#include <cstdint>
#include <string>

#include "idforge/high_water.h"
#include "thread_annotations.h"

namespace idforge {

class MemoryHighWaterStoreImpl final : public MemoryHighWaterStore {
 public:
  MemoryHighWaterStoreImpl(int64_t initial, std::string layout);

  Result<int64_t> load() override IDFORGE_EXCLUDES(mu_);
  Status store(int64_t unix_ms) override IDFORGE_EXCLUDES(mu_);
  Result<HighWaterMark> load_mark() override IDFORGE_EXCLUDES(mu_);
  Status store_mark(const HighWaterMark& mark) override IDFORGE_EXCLUDES(mu_);
  int stores() const override IDFORGE_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  HighWaterMark mark_ IDFORGE_GUARDED_BY(mu_);
  int stores_ IDFORGE_GUARDED_BY(mu_) = 0;
};

}  // namespace idforge
