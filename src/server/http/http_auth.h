// Tokens and limits on the HTTP routes (auth.h, docs/api.md): the check one connection's
// router makes before a handler runs.
//
// Without a tokens file only the connection's rate (if set) and, on the admin routes,
// the admin token are checked, as before tokens existed. With one, every route but
// /healthz, /readyz and the web page wants `Authorization: Bearer SECRET` (Tinyid's
// routes also take Tinyid's `?token=`): none gets 401 with `WWW-Authenticate: Bearer`,
// a secret that is no token 401 with `error="invalid_token"` (RFC 6750), a token
// without the route's scope 403. Scopes: snowflake (/v1/snowflake, Leaf's snowflake),
// segment:TAG (/v1/segment/TAG, /v1/serial/TAG, Leaf's segment, Tinyid's bizType), uuid
// (/v1/uuid7, /v1/ulid), metrics (/metrics, /v1/status), admin (/v1/admin/...; the
// admin token works there too), any token (/v1/decode, /v1/compose). A token's limits
// and the connection's rate refuse with 429 and
// `{"error":{"code":"too_many_requests","message":"...","limit":"rate"}}` (rate:
// with Retry-After). Every refusal is counted (Metrics::record_auth_failure,
// record_limit_refusal).
//
// One HttpGate per connection (it keeps the connection's rate bucket and its view of
// the tokens); not thread-safe.
#pragma once

#include <memory>
#include <string_view>

#include "server/auth/auth.h"
#include "server/auth/rate_limit.h"
#include "server/service/metrics.h"

namespace idforge::server {

class IdService;
namespace http {
struct Call;
}

// The secret of `Authorization: Bearer SECRET` (the scheme in any case, RFC 9110
// section 11.1); "" for none or another scheme.
std::string_view bearer_secret(std::string_view authorization);

// Whether `authorization` carries the configured admin token (constant time); false
// when none is configured.
bool admin_token_matches(const IdService& service, std::string_view authorization);

class HttpGate {
 public:
  HttpGate(std::shared_ptr<Auth> auth, ConnectionLimits limits)
      : view_(std::move(auth)), limits_(limits) {}

  bool tokens_on() const { return view_.on(); }

  // The connection's rate: 0 to go on, else the 429 written and its status.
  int check_connection(http::Call& c);
  // The token for a request of `route` whose query is parsed: 0 to go on, with `ticket`
  // holding its in-flight place while its token has that limit; else the 401, 403 or
  // 429 written and its status. Only with tokens_on().
  int check(http::Call& c, Route route, InFlight* ticket);

 private:
  AuthView view_;
  ConnectionLimits limits_;
  RateLimiter connection_rate_;
};

}  // namespace idforge::server
