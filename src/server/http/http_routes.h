// The HTTP routes of docs/api.md: one table mapping a path pattern and its methods to a
// handler, and the handlers, which parse the query, call IdService and write the
// answer. A path that matches a route but not its methods gets 405 with `Allow`; a
// path no route matches is a web asset (GET "/" is /index.html) or 404. Admin routes
// exist only when an admin token or a tokens file is configured, and want
// `Authorization: Bearer <token>` (401 otherwise). With a tokens file every route but
// the health checks and the web page wants a token with its scope, and the token's and
// the connection's limits apply (HttpGate, http_auth.h).
//
// Handlers that call only IdService methods that never block answer at once. The rest
// (a segment request the tag's buffer cannot fill, serial numbers, the admin tag
// routes) return a job that answers on the worker pool.
//
// A router belongs to one connection: it keeps scratch buffers so the hot routes do not
// allocate per request. Not thread-safe; the jobs it returns do not refer to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/auth/auth.h"
#include "server/http/http_auth.h"
#include "server/http/http_parser.h"
#include "server/http/http_reply.h"
#include "server/service/id_service.h"
#include "server/service/metrics.h"

namespace idforge::server {

// What answering one request came to.
struct RouteOutcome {
  Route route = Route::kNotFound;  // the metrics label
  int status = 200;                // of the answer written to `out`, when there is no job
  // Set when the answer must wait on a backend: appends the answer and returns its
  // status. Owns what it needs, since the request's bytes may be gone when it runs.
  std::function<int(std::string& out)> job;
  // Set for a large batch made in slices (http_batch.h): each call makes one slice on
  // the I/O thread; the call that completes the batch appends the answer to `out` and
  // returns its status, the others return 0. Owns what it needs, as `job` does.
  std::function<int(std::string& out)> slices;
  // The name of the client token that admitted the request (auth.h), for the access
  // log; "" for none. Valid until the router's next request.
  std::string_view token;
  // The request's place under its token's in_flight limit (auth.h): a job or a batch made
  // in slices keeps it until it has answered (request_lifecycle.h).
  InFlight ticket;
};

class HttpRouter {
 public:
  // `service` must outlive the router and its jobs. `auth` null: no tokens.
  explicit HttpRouter(IdService& service, std::shared_ptr<Auth> auth = nullptr,
                      ConnectionLimits limits = {})
      : service_(service), gate_(std::move(auth), limits) {}

  // Answers `request` into `out` (framed by `mode`), or returns the job that will.
  RouteOutcome handle(const HttpRequest& request, const ReplyMode& mode, std::string& out);

  // Reused buffers; the handlers in http_routes.cc use them.
  struct Scratch {
    PathSegments path;
    QueryParams query;
    std::vector<uint64_t> ids;
    std::vector<Uuid> uuids;
    std::vector<Ulid> ulids;
    std::string body;
  };

 private:
  IdService& service_;
  HttpGate gate_;
  Scratch scratch_;
};

}  // namespace idforge::server
