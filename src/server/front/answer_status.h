// The HTTP status an answer counts as (docs/api.md): what an HTTP error answers with, and
// what the metrics count every answer by (Metrics::record_request), RESP's included, so
// both front ends' errors fall into the same classes. Pure: thread-safe.
#pragma once

#include "idforge/status.h"

namespace idforge::server {

// 200 for kOk; 400, 404, 409, 500 or 503 for the error codes.
int http_status_of(StatusCode code);

}  // namespace idforge::server
