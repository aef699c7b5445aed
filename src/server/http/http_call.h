// What every HTTP route handler works with: the request on its way through a handler
// (Call) and the small helpers that answer it. Internal to the HTTP front end
// (http_routes.cc, http_tinyid.cc).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "idforge/status.h"
#include "server/http/http_parser.h"
#include "server/http/http_reply.h"
#include "server/http/http_routes.h"
#include "server/service/id_service.h"

namespace idforge::server::http {

// One request on its way through a handler.
struct Call {
  IdService& service;
  HttpRouter::Scratch& s;
  const HttpRequest& request;
  const ReplyMode& mode;
  std::string& out;
  std::string_view capture;  // the pattern's "{}" segment, decoded
  // The tokens file admitted this Tinyid request (http_auth.h): Tinyid's own token
  // table is not asked again.
  bool token_checked = false;
  // The name of the token that admitted the request, for the access log; "" for none.
  std::string_view token_name;
};

// Helpers: an answer already written, an error answered, a body answered.
inline RouteOutcome answered(int status) {
  RouteOutcome outcome;
  outcome.status = status;
  return outcome;
}

inline RouteOutcome fail(Call& c, const Status& status) {
  return answered(write_status_error(c.out, c.mode, status));
}

inline RouteOutcome reply(Call& c, int status, std::string_view content_type,
                          std::string_view body) {
  write_reply(c.out, c.mode, status, content_type, body);
  return answered(status);
}

// The value of `key`, "" when absent. A repeated key is an error rather than a guess.
inline Result<std::string_view> param(const QueryParams& query, std::string_view key) {
  if (size_t n = query.count(key); n > 1) {
    return Status::InvalidArgument(
        fmt::format("query parameter '{}' is given {} times; give it once", key, n));
  }
  return query.get(key).value_or(std::string_view());
}

}  // namespace idforge::server::http
