#include "idforge/high_water.h"

#include <memory>
#include <string>
#include <utility>

#include "high_water_impl.h"

namespace idforge {

std::unique_ptr<MemoryHighWaterStore> MemoryHighWaterStore::create(int64_t initial,
                                                                   std::string layout) {
  return std::make_unique<MemoryHighWaterStoreImpl>(initial, std::move(layout));
}

MemoryHighWaterStoreImpl::MemoryHighWaterStoreImpl(int64_t initial, std::string layout)
    : mark_{initial, std::move(layout)} {}

Result<int64_t> MemoryHighWaterStoreImpl::load() {
  MutexLock lock(mu_);
  return mark_.unix_ms;
}

Status MemoryHighWaterStoreImpl::store(int64_t unix_ms) { return store_mark({unix_ms, {}}); }

Result<HighWaterMark> MemoryHighWaterStoreImpl::load_mark() {
  MutexLock lock(mu_);
  return mark_;
}

Status MemoryHighWaterStoreImpl::store_mark(const HighWaterMark& mark) {
  MutexLock lock(mu_);
  ++stores_;
  mark_ = mark;
  return Status::Ok();
}

int MemoryHighWaterStoreImpl::stores() const {
  MutexLock lock(mu_);
  return stores_;
}

}  // namespace idforge
