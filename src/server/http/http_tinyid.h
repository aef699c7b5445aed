// Tinyid's HTTP routes (docs/migrating.md), so Tinyid clients switch to idforge
// unchanged: /tinyid/id/nextId, nextIdSimple, nextSegmentId and nextSegmentIdSimple with
// bizType, token and batchSize, answered in Tinyid's formats. A token is checked against
// Tinyid's own tiny_id_token table (ServiceConfig::tinyid_tokens_url), or, with a tokens
// file, by HttpGate before the handler runs (http_auth.h; Call::token_checked).
#pragma once

#include <cstdint>
#include <string_view>

#include "idforge/status.h"
#include "server/http/http_call.h"

namespace idforge::server::http {

// Tinyid's batchSize as its routes read it: "" is 1; a number is cut to 1..max_count, as
// Tinyid cuts it to batch.size.max; anything else InvalidArgument. HttpGate counts a
// request's IDs against a token's max_ids with it too (http_auth.cc).
Result<uint64_t> tinyid_batch_size(std::string_view text, uint64_t max_count);

// {"data":[ids],"code":200,"message":""}; a bad token is code 5 "token is error", any
// other failure code 6 with the reason, always with HTTP 200, as Tinyid answers.
RouteOutcome tinyid_next_id(Call& c);
// "id" or "id,id,..."; an empty body for a bad token or a failure, as Tinyid.
RouteOutcome tinyid_next_id_simple(Call& c);
// A whole range for a client that hands it out itself: {"data":{"currentId",
// "loadingId","maxId","delta","remainder"},...}, or as "currentId,loadingId,maxId,delta,
// remainder" (Simple). The client's first ID is currentId + delta.
RouteOutcome tinyid_next_segment_id(Call& c);
RouteOutcome tinyid_next_segment_id_simple(Call& c);

}  // namespace idforge::server::http
