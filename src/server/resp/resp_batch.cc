// Large ID.SNOWFLAKE, ID.UUID7 and ID.ULID batches, made and written in slices, and large
// ID.NEXT arrays, written in slices (resp_session_impl.h, "start_batch"). A batch of
// 10,000 IDs takes a loop several hundred microseconds to make and write; in slices of
// ServiceConfig::batch_slice, the loop serves its other connections between two slices,
// so one client pulling maximum batches adds at most a slice's time to their latency
// (docs/operations.md, "Limits").
#include <algorithm>
#include <span>
#include <string>

#include "server/net/access_log.h"
#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"
#include "server/service/metrics.h"

namespace idforge::server::resp {

Answer RespSession::start_batch(bool as_array) {
  batch_.emplace();
  batch_->as_array = as_array;
  return {200, Next::kFlush};
}

bool RespSession::continue_batch(std::string& out) {
  SlicedBatch& b = *batch_;
  const IdBatch& ids = ids_batch_;
  const uint64_t slice = std::max<uint64_t>(1, service_.config().batch_slice);
  int status = 200;
  if (!ids.made_all()) {
    const Status made = ids_batch_.make_slice(service_, slice);
    if (made.ok()) return false;
    status = put_status(out, made);
  } else {
    if (b.written == 0 && b.as_array) put_number(out, '*', ids.count());
    const size_t n = std::min(slice, ids.count() - b.written);
    for (size_t i = b.written; i < b.written + n; ++i) {
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
    b.written += n;
    if (b.written < ids.count()) return false;
  }
  service_.metrics().record_request(kProtocolIndex, b.route, status, seconds_since(b.start));
  if (b.sampled && access_log_ != nullptr) {
    access_log_->write_resp(b.command, status, seconds_since(b.start), token_label());
  }
  batch_.reset();  // gives back the in-flight place
  return true;
}

}  // namespace idforge::server::resp
