// A large batch of Snowflake IDs, UUIDv7s or ULIDs made one slice at a time
// (ServiceConfig::batch_slice): what both front ends' sliced batches (resp_batch.cc,
// http_batch.cc) make, each writing it in its own protocol. Every ID is made before any
// is written, so an error (a fenced generator) is the whole answer; the IDs made before
// it are skipped, never repeated. A segment batch is taken whole from its tag's buffer
// (start_taken: a copy from memory, no store call), so only its writing is sliced.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "idforge/status.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/service/id_service.h"

namespace idforge::server {

enum class BatchKind { kSnowflake, kUuid7, kUlid, kSegment };

// Whether a batch of `count` IDs is made and written in slices (0: never).
inline bool is_sliced(const ServiceConfig& config, uint64_t count) {
  return config.batch_slice > 0 && count > config.batch_slice;
}

class IdBatch {
 public:
  // Sizes the batch; the vectors' memory is kept for the next one.
  void start(BatchKind kind, uint64_t count) {
    kind_ = kind;
    count_ = count;
    made_ = 0;
    switch (kind) {
      case BatchKind::kSnowflake:
        ids_.resize(count);
        break;
      case BatchKind::kUuid7:
        uuids_.resize(count);
        break;
      case BatchKind::kUlid:
        ulids_.resize(count);
        break;
      case BatchKind::kSegment:
        ids_.resize(count);
        made_ = count;
        break;
    }
  }

  // A segment batch of `count` IDs: the caller fills the span (IdService::try_segment)
  // before the first slice is written.
  std::span<uint64_t> start_taken(uint64_t count) {
    start(BatchKind::kSegment, count);
    return std::span<uint64_t>(ids_.data(), count);
  }

  // Makes the next slice of at most `slice` IDs.
  Status make_slice(IdService& service, uint64_t slice) {
    const size_t n = std::min(std::max<uint64_t>(1, slice), count_ - made_);
    Status made = Status::Ok();
    switch (kind_) {
      case BatchKind::kSnowflake:
        made = service.snowflake(std::span<uint64_t>(ids_).subspan(made_, n));
        break;
      case BatchKind::kUuid7:
        service.uuid7(std::span<Uuid>(uuids_).subspan(made_, n));
        break;
      case BatchKind::kUlid:
        service.ulid(std::span<Ulid>(ulids_).subspan(made_, n));
        break;
      case BatchKind::kSegment:  // taken whole by start_taken's caller
        break;
    }
    made_ += n;
    return made;
  }

  bool made_all() const { return made_ == count_; }
  BatchKind kind() const { return kind_; }
  uint64_t count() const { return count_; }
  uint64_t id(size_t i) const { return ids_[i]; }
  const Uuid& uuid(size_t i) const { return uuids_[i]; }
  const Ulid& ulid(size_t i) const { return ulids_[i]; }

 private:
  BatchKind kind_ = BatchKind::kSnowflake;
  uint64_t count_ = 0;
  uint64_t made_ = 0;
  std::vector<uint64_t> ids_;
  std::vector<Uuid> uuids_;
  std::vector<Ulid> ulids_;
};

}  // namespace idforge::server
