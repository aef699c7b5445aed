// Tokens and limits over RESP (auth.h), answered in Redis 7.0's own words, taken from a
// real redis-server 7.0 with requirepass and an ACL user (tests/redis_clients/
// auth_compare.sh compares them):
//
//   before AUTH, any command but AUTH, HELLO, QUIT  -NOAUTH Authentication required.
//   EXEC then                                       -EXECABORT Transaction discarded because
//                                                   of: NOAUTH Authentication required.
//   HELLO without AUTH then                         -NOAUTH HELLO must be called with ...
//   AUTH wrong / AUTH user wrong                    -WRONGPASS invalid username-password
//                                                   pair or user is disabled.
//   AUTH (no argument) / AUTH a b c                 -ERR wrong number of arguments for
//                                                   'auth' command / -ERR syntax error
//   INCR tag not in the token's scope               -NOPERM this user has no permissions to
//                                                   access one of the keys used as arguments
//   ID.SNOWFLAKE, ID.UUID7, ID.ULID, INFO           -NOPERM this user has no permissions to
//     without the scope                             run the 'id.snowflake' command
//
// The order is Redis's too: an unknown command or a wrong arity is answered before
// NOAUTH, NOAUTH before NOPERM. Inside MULTI a command is checked when queued (NOPERM
// then, and EXEC answers EXECABORT) and, as Redis does, again when EXEC runs it, in
// case a reload took the scope away. The user name of AUTH is ignored: the token names
// the client. A failed AUTH leaves the connection as it was, as in Redis. A connection
// whose token a reload removed is closed, unanswered, at its next command that needs a
// token: Redis closes the connections of a deleted user.
//
// Without tokens AUTH SECRET gets Redis's answer for a server with no password, and
// AUTH USER SECRET or HELLO ... AUTH get WRONGPASS, Redis's answer for a user it does
// not have: never a silent OK.
//
// Limits are idforge's own: "-ERR rate: ...", "-ERR in_flight: ...", "-ERR max_ids: ...".
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"
#include "server/service/metrics.h"

namespace idforge::server::resp {
namespace {

constexpr std::string_view kNoAuth = "NOAUTH Authentication required.";
constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
constexpr std::string_view kNoPassword =
    "ERR AUTH <password> called without any password configured for the default user. Are you "
    "sure your configuration is correct?";
constexpr std::string_view kNoPermKey =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
constexpr std::string_view kAclChanged =
    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: ";

// What a command needs of the connection's token.
Need need_of(const CommandSpec& spec) {
  if (spec.handler == &RespSession::auth || spec.handler == &RespSession::hello ||
      spec.handler == &RespSession::quit) {
    return Need::kNone;  // HELLO checks for itself (RespSession::hello)
  }
  if (spec.handler == &RespSession::info) return Need::kMetrics;
  switch (spec.route) {
    case Route::kSnowflake:
      return Need::kSnowflake;
    case Route::kUuid7:
    case Route::kUlid:
      return Need::kUuid;
    case Route::kSegment:
      // INCR, INCRBY, ID.NEXT take IDs of their key; DECR and the like are refused anyway.
      return spec.count_at != 0 ? Need::kSegment : Need::kAnyToken;
    default:
      return Need::kAnyToken;
  }
}

bool permits(const Token& token, Args args, Need need) {
  const std::string_view tag = need == Need::kSegment ? args[1] : std::string_view();
  return token.spec.scopes.allows(need, tag);
}

std::string limit_error(const Refusal& refusal) {
  return fmt::format("ERR {}: {}", limit_name(refusal.limit), refusal.message);
}

}  // namespace

Answer RespSession::auth(Args args, std::string& out) {
  if (args.size() > 3) {
    put_error(out, "ERR syntax error");
    return {400};
  }
  if (!auth_.on()) {
    // Redis with no password: the one-argument form is a configuration mistake; a user
    // name it does not know is a wrong password.
    put_error(out, args.size() == 2 ? kNoPassword : kWrongPass);
    return {args.size() == 2 ? 400 : 401};
  }
  if (auth_.authenticate(args.back()) == nullptr) {
    service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kWrong);
    put_error(out, kWrongPass);
    return {401};
  }
  put_simple(out, "OK");
  return {};
}

void RespSession::reject(const CommandSpec* spec, std::string_view error, std::string& out) {
  if (spec != nullptr && spec->handler == &RespSession::exec) {
    end_multi();  // as Redis: a refused EXEC ends the transaction
    put_error(out, fmt::format("EXECABORT Transaction discarded because of: {}", error));
    return;
  }
  multi_refused_ = multi_refused_ || in_multi_;
  put_error(out, error);
}

const Token* RespSession::current_token() { return auth_.on() ? auth_.token() : nullptr; }

bool RespSession::connection_admits(const CommandSpec* spec, std::string& out, Answer* answer) {
  if (!(limits_.rate > 0)) return true;
  if (spec != nullptr && spec->handler == &RespSession::quit) return true;  // never kept open
  const auto refusal = admit_connection(connection_rate_, limits_, now_ns());
  if (!refusal) return true;
  service_.metrics().record_limit_refusal(kProtocolIndex, refusal->limit, /*connection=*/true);
  reject(spec, limit_error(*refusal), out);
  *answer = {429};
  return false;
}

bool RespSession::token_admits(const CommandSpec& spec, Args args, std::string& out,
                               InFlight* ticket, Answer* answer) {
  if (!auth_.on()) return true;
  const Need need = need_of(spec);
  if (need == Need::kNone) return true;
  const Token* token = auth_.token();
  if (token == nullptr && auth_.revoked()) {
    // Redis closes the connections of a deleted user at once; here the removal is seen at
    // the connection's next command, which is not answered.
    service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kWrong);
    *answer = {401, Next::kClose};
    return false;
  }
  if (token == nullptr) {
    service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kMissing);
    reject(&spec, kNoAuth, out);
    *answer = {401};
    return false;
  }
  if (!permits(*token, args, need)) {
    service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kScope);
    token->state->scope_refusals.fetch_add(1, std::memory_order_relaxed);
    reject(
        &spec,
        need == Need::kSegment
            ? std::string(kNoPermKey)
            : fmt::format("NOPERM this user has no permissions to run the '{}' command", spec.name),
        out);
    *answer = {403};
    return false;
  }
  const uint64_t ids = ids_asked(spec, args, service_.config().max_count);
  if (const auto refusal = admit(auth_.auth(), *token, ids, ticket)) {
    service_.metrics().record_limit_refusal(kProtocolIndex, refusal->limit, /*connection=*/false);
    reject(&spec, limit_error(*refusal), out);
    *answer = {429};
    return false;
  }
  return true;
}

bool RespSession::still_permitted(const CommandSpec& spec, Args args, std::string& out) {
  if (!auth_.on()) return true;
  const Need need = need_of(spec);
  if (need == Need::kNone || need == Need::kAnyToken) return true;
  const Token* token = auth_.token();
  if (token != nullptr && permits(*token, args, need)) return true;
  service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kScope);
  if (token != nullptr) token->state->scope_refusals.fetch_add(1, std::memory_order_relaxed);
  put_error(out, fmt::format("{}{}", kAclChanged,
                             need == Need::kSegment
                                 ? "no permission to touch the specified keys"
                                 : "no permission to execute the command or subcommand"));
  return false;
}

}  // namespace idforge::server::resp
