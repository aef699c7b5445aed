// The Redis-protocol front end (docs/api.md, "RESP"): a Session that reads commands with
// RespParser, answers them from IdService and formats RESP2, or RESP3 after `HELLO 3`.
// Commands: PING, ECHO, HELLO, AUTH, INCR, INCRBY, ID.NEXT, ID.SNOWFLAKE, ID.UUID7,
// ID.ULID, ID.DECODE, INFO, COMMAND, CLIENT, SELECT, QUIT, MULTI, EXEC, DISCARD; DECR,
// DECRBY, INCRBYFLOAT, GET and SET are refused with the reason (docs/api.md,
// "Increments"). The commands are implemented in resp_session.cc, resp_increment.cc,
// resp_transaction.cc and resp_auth.cc over the class in resp_session_impl.h.
//
// With RespOptions::auth (client tokens, auth.h) a connection must `AUTH SECRET` (or
// `AUTH USER SECRET`, `HELLO 3 AUTH USER SECRET`: the user name is ignored) before any
// command but AUTH, HELLO and QUIT, and each command wants its token's scope and stays
// within its limits; the answers are Redis 7's (NOAUTH, WRONGPASS, NOPERM) word for word
// (resp_auth.cc). Without tokens AUTH is refused as Redis refuses it with no password
// set. RespOptions::limits caps each connection's command rate.
//
// Answers to INCR, INCRBY, ID.NEXT and ID.SNOWFLAKE are written straight into the output
// buffer with no allocation per answer. A segment request the tag's buffer cannot fill
// at once becomes a kBlocking step that waits on the store (IdService::segment) off the
// I/O thread, and so does an EXEC holding one; everything else is answered inline.
//
// Every command is counted in the service's metrics (protocol "resp"): the route (INCR,
// INCRBY, ID.NEXT and the refused DECR... are "segment", PING/HELLO/INFO/MULTI/... are
// "other", an unknown command is "not_found"; a queued command counts when EXEC runs it) and a
// status of 200, or 400/404/500/503 by the error's kind; a protocol error counts as "other" 400.
// IDs are counted by IdService itself, not here.
//
// Errors are "-ERR <code>: <message>" (the codes of the HTTP errors) for what IdService
// refuses, Redis's own wording for unknown commands and wrong arity, and the connection
// stays open; a protocol error (RespParser's limits) answers "-ERR Protocol error: ..."
// and closes, as Redis does.
//
// A session belongs to one connection; the factory may be called from any thread.
#pragma once

#include <memory>

#include "server/auth/auth.h"
#include "server/auth/rate_limit.h"
#include "server/net/session.h"
#include "server/service/id_service.h"

namespace idforge::server {

// The protocol limits are RespParser's and the request limits (max_count,
// segment_wait_ms) the service's.
struct RespOptions {
  std::shared_ptr<Auth> auth;  // client tokens (auth.h); null: none, as before tokens
  ConnectionLimits limits;     // each connection's command rate; 0: none
};

// `service` must outlive every session the factory makes.
SessionFactory make_resp_session_factory(IdService& service, RespOptions options = {});

}  // namespace idforge::server
