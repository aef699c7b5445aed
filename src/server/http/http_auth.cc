#include "server/http/http_auth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/quote.h"
#include "core/text.h"
#include "idforge/segment_store.h"
#include "server/http/http_call.h"
#include "server/http/http_reply.h"
#include "server/http/http_tinyid.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

// What a route needs, of which tag, for how many IDs.
struct Access {
  Need need = Need::kNone;
  std::string_view tag;  // kSegment
  uint64_t ids = 0;
};

// A request's count as the handler will read it (parse_request_count); 0 when it will
// refuse it (the handler answers that), so only counts that would be served meet max_ids.
uint64_t count_for_limit(http::Call& c) {
  Result<std::string_view> text = http::param(c.s.query, "count");
  if (!text.ok()) return 0;
  Result<uint64_t> n = parse_request_count(*text, c.service.config().max_count);
  return n.ok() ? *n : 0;
}

// The same for Tinyid's batchSize, cut to max_count as its handler cuts it.
uint64_t tinyid_batch_of(http::Call& c) {
  Result<std::string_view> text = http::param(c.s.query, "batchSize");
  if (!text.ok()) return 0;
  Result<uint64_t> n = http::tinyid_batch_size(*text, c.service.config().max_count);
  return n.ok() ? *n : 0;
}

Access access_of(http::Call& c, Route route) {
  switch (route) {
    case Route::kSnowflake:
      return {Need::kSnowflake, {}, count_for_limit(c)};
    case Route::kLeafSnowflake:
      return {Need::kSnowflake, {}, 1};
    case Route::kSegment:
    case Route::kSerial:
      return {Need::kSegment, c.capture, count_for_limit(c)};
    case Route::kLeafSegment:
      return {Need::kSegment, c.capture, 1};
    case Route::kTinyid: {
      Result<std::string_view> biz = http::param(c.s.query, "bizType");
      // nextSegmentId hands out a whole range of the tag's step, not a count asked for.
      const bool range = c.s.path.size() > 2 && c.s.path[2].starts_with("nextSegmentId");
      return {Need::kSegment, biz.value_or(std::string_view()), range ? 0 : tinyid_batch_of(c)};
    }
    case Route::kUuid7:
    case Route::kUlid:
      return {Need::kUuid, {}, count_for_limit(c)};
    case Route::kMetrics:
    case Route::kStatus:
      return {Need::kMetrics, {}, 0};
    case Route::kAdmin:
      return {Need::kAdmin, {}, 0};
    case Route::kDecode:
    case Route::kCompose:
      return {Need::kAnyToken, {}, 0};
    default:
      return {};
  }
}

int refuse_unauthorized(http::Call& c, AuthFailure reason, bool tinyid) {
  c.service.metrics().record_auth_failure(Metrics::kHttp, reason);
  if (reason == AuthFailure::kMissing) {
    write_error(c.out, c.mode, 401, "unauthorized",
                tinyid ? "this route needs a token: 'Authorization: Bearer <token>' or ?token="
                       : "this route needs a token: 'Authorization: Bearer <token>'",
                "WWW-Authenticate: Bearer\r\n");
  } else {
    write_error(c.out, c.mode, 401, "unauthorized", "the token is not valid",
                "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n");
  }
  return 401;
}

int refuse_scope(http::Call& c, const Token& token, const Access& access) {
  c.service.metrics().record_auth_failure(Metrics::kHttp, AuthFailure::kScope);
  token.state->scope_refusals.fetch_add(1, std::memory_order_relaxed);
  const std::string scope = scope_name(access.need, access.tag);
  // The scope goes into a header only when it is plain text: a tag is the client's.
  const bool plain = access.need != Need::kSegment || validate_tag_name(access.tag).ok();
  write_error(c.out, c.mode, 403, "forbidden",
              fmt::format("token '{}' has no scope for this route; it needs {}", token.spec.name,
                          quote_text(scope, '\'', 80)),
              plain ? fmt::format("WWW-Authenticate: Bearer error=\"insufficient_scope\", "
                                  "scope=\"{}\"\r\n",
                                  scope)
                    : std::string("WWW-Authenticate: Bearer error=\"insufficient_scope\"\r\n"));
  return 403;
}

int refuse_limit(http::Call& c, const Refusal& refusal, bool connection) {
  c.service.metrics().record_limit_refusal(Metrics::kHttp, refusal.limit, connection);
  std::string body = R"({"error":{"code":"too_many_requests","message":)";
  append_json_string(body, refusal.message);
  body += R"(,"limit":)";
  append_json_string(body, limit_name(refusal.limit));
  body += "}}";
  std::string headers;
  if (refusal.limit == Limit::kRate) {
    // Whole seconds, rounded up (RFC 9110 section 10.2.3).
    const int64_t seconds =
        std::max<int64_t>(1, (refusal.retry_after_ns + 999'999'999) / 1'000'000'000);
    headers = fmt::format("Retry-After: {}\r\n", seconds);
  }
  write_reply(c.out, c.mode, 429, kJsonType, body, headers);
  return 429;
}

}  // namespace

std::string_view bearer_secret(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (!text::starts_with_ignore_case(authorization, kScheme)) return {};
  std::string_view given = authorization.substr(kScheme.size());
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  return given;
}

bool admin_token_matches(const IdService& service, std::string_view authorization) {
  const std::string& token = service.config().admin_token;
  const std::string_view given = bearer_secret(authorization);
  return !token.empty() && !given.empty() && same_secret(given, token);
}

int HttpGate::check_connection(http::Call& c) {
  if (!(limits_.rate > 0)) return 0;
  const int64_t now = view_.on() ? view_.auth().now_ns() : steady_now_ns();
  if (auto refusal = admit_connection(connection_rate_, limits_, now)) {
    return refuse_limit(c, *refusal, /*connection=*/true);
  }
  return 0;
}

int HttpGate::check(http::Call& c, Route route, InFlight* ticket) {
  const Access access = access_of(c, route);
  if (access.need == Need::kNone) return 0;
  if (route == Route::kAdmin && admin_token_matches(c.service, c.request.authorization)) return 0;
  const bool tinyid = route == Route::kTinyid;
  std::string_view secret = bearer_secret(c.request.authorization);
  std::string_view query_token;
  if (tinyid) {
    query_token = http::param(c.s.query, "token").value_or(std::string_view());
    if (secret.empty()) secret = query_token;
  }
  if (secret.empty()) return refuse_unauthorized(c, AuthFailure::kMissing, tinyid);
  const Token* token = view_.find(secret);
  if (token == nullptr) {
    // Tinyid's own tiny_id_token table (tinyid_tokens_url) still admits its tokens.
    if (tinyid && c.service.tinyid_can_visit(access.tag, query_token)) return 0;
    return refuse_unauthorized(c, AuthFailure::kWrong, tinyid);
  }
  c.token_name = token->spec.name;  // the access log names the client, refused or not
  if (!token->spec.scopes.allows(access.need, access.tag)) return refuse_scope(c, *token, access);
  if (auto refusal = admit(view_.auth(), *token, access.ids, ticket)) {
    return refuse_limit(c, *refusal, /*connection=*/false);
  }
  if (tinyid) c.token_checked = true;
  return 0;
}

}  // namespace idforge::server
