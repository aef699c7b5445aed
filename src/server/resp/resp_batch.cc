// Large ID.SNOWFLAKE, ID.UUID7 and ID.ULID batches, made and written in slices, and large
// ID.NEXT arrays, written in slices (resp_session_impl.h, "start_batch"). A batch of
// 10,000 IDs takes a loop several hundred microseconds to make and write; in slices of
// ServiceConfig::batch_slice, the loop serves its other connections between two slices,
// so one client pulling maximum batches adds at most a slice's time to their latency
// (docs/operations.md, "Limits").
#include <algorithm>
#include <span>
#include <string>

#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"

namespace idforge::server::resp {

Answer RespSession::start_batch(bool as_array) {
  batch_starting_ = true;
  batch_written_ = 0;
  batch_as_array_ = as_array;
  return {200, Next::kFlush};
}

int RespSession::write_batch_slice(std::string& out) {
  const IdBatch& ids = ids_batch_;
  const uint64_t slice = std::max<uint64_t>(1, service_.config().batch_slice);
  if (!ids.made_all()) {
    const Status made = ids_batch_.make_slice(service_, slice);
    return made.ok() ? 0 : put_status(out, made);
  }
  if (batch_written_ == 0 && batch_as_array_) put_number(out, '*', ids.count());
  const size_t n = std::min(slice, ids.count() - batch_written_);
  for (size_t i = batch_written_; i < batch_written_ + n; ++i) {
    switch (ids.kind()) {
      case BatchKind::kSnowflake:
      case BatchKind::kSegment:
        put_number(out, ':', ids.id(i));
        break;
      case BatchKind::kUuid7:
        put_bulk(out, ids.uuid(i).to_string());
        break;
      case BatchKind::kUlid:
        put_bulk(out, ids.ulid(i).to_string());
        break;
    }
  }
  batch_written_ += n;
  return batch_written_ < ids.count() ? 0 : 200;
}

}  // namespace idforge::server::resp
