// Large /v1/snowflake, /v1/uuid7 and /v1/ulid batches, made and formatted in slices,
// and large /v1/segment/TAG batches, formatted in slices (is_sliced, id_batch.h). A batch
// of 10,000 IDs takes a loop several hundred microseconds to make and format; in slices
// of ServiceConfig::batch_slice the HTTP session hands the loop back between two slices
// (Session::Next::kFlush), so one client pulling maximum batches adds at most a slice's
// time to the latency of the others (docs/operations.md, "Limits"). Internal to the HTTP
// front end (http_routes.cc, http_session.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "server/front/id_batch.h"
#include "server/http/http_ids.h"
#include "server/http/http_reply.h"
#include "server/http/http_routes.h"
#include "server/service/id_service.h"

namespace idforge::server::http {

// An outcome whose `slices` makes every ID first, a slice per call (an error then
// answers alone, as for a batch made at once: the IDs made before it are skipped),
// then formats them a slice per call, and answers. `service` must outlive it.
RouteOutcome sliced_batch(IdService& service, BatchKind kind, uint64_t count, IdFormat format,
                          const ReplyMode& mode);

// The same for a tag's segment IDs, all taken already (IdService::try_segment): the
// outcome keeps a copy and formats it a slice per call.
RouteOutcome sliced_segment_batch(IdService& service, std::string_view tag,
                                  std::span<const uint64_t> ids, IdFormat format,
                                  const ReplyMode& mode);

}  // namespace idforge::server::http
