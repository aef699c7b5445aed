// The HTTP/1.1 front end (docs/api.md, "HTTP"): a Session that parses requests with
// HttpRequestParser, answers them through HttpRouter and frames the answers.
//
// Keep-alive is the HTTP/1.1 default (HTTP/1.0 only with `Connection: keep-alive`);
// every complete request in the input is answered, in order (pipelining), except that
// a request answered by a job (kBlocking) is the last one of its feed(). After
// `Connection: close` the answer is followed by kClose. A protocol error (400 malformed,
// 413, 414, 431, 501 for Transfer-Encoding, 505) is answered and closes the connection;
// a request still incomplete when the runtime gives up on it gets 408.
//
// Every request is counted in the service's metrics (protocol "http") by route and
// status, timed on the steady clock (a job is timed while it runs). IDs are counted by
// IdService itself.
//
// With HttpOptions::auth, requests want a token with the route's scope, within its
// limits; HttpOptions::limits caps each connection's request rate (http_auth.h).
//
// A session belongs to one connection; the factory may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>

#include "server/auth/auth.h"
#include "server/auth/rate_limit.h"
#include "server/net/session.h"
#include "server/service/id_service.h"

namespace idforge::server {

struct HttpOptions {
  size_t max_request_line = 8192;   // beyond: 414
  size_t max_header_bytes = 32768;  // beyond: 431
  size_t max_headers = 100;         // beyond: 431
  size_t max_body = 65536;          // beyond: 413
  std::shared_ptr<Auth> auth;       // client tokens (auth.h); null: none, as before tokens
  ConnectionLimits limits;          // each connection's request rate; 0: none
};

// `service` must outlive every session the factory makes, and their jobs.
SessionFactory make_http_session_factory(IdService& service, HttpOptions options = {});

}  // namespace idforge::server
