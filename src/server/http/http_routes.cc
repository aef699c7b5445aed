#include "server/http/http_routes.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <memory>
#include <span>
#include <utility>

#include "core/parse_u64.h"
#include "core/quote.h"
#include "idforge/time_format.h"
#include "server/front/request_lifecycle.h"
#include "server/http/http_batch.h"
#include "server/http/http_call.h"
#include "server/http/http_ids.h"
#include "server/http/http_json.h"
#include "server/http/http_tinyid.h"
#include "server/http/web_assets.h"

namespace idforge::server {
namespace {

using http::answered;
using http::Call;
using http::content_type;
using http::fail;
using http::IdFormat;
using http::numeric_ids;
using http::param;
using http::reply;
using http::text_ids;
using Handler = RouteOutcome (*)(Call&);

enum MethodBits : unsigned { kGetBit = 1, kPostBit = 2, kPutBit = 4 };

unsigned method_bit(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
    case HttpMethod::kHead:
      return kGetBit;
    case HttpMethod::kPost:
      return kPostBit;
    case HttpMethod::kPut:
      return kPutBit;
    default:
      return 0;
  }
}

std::string allow_header(unsigned methods) {
  std::string header = "Allow: ";
  if (methods & kGetBit) header += "GET, HEAD, ";
  if (methods & kPostBit) header += "POST, ";
  if (methods & kPutBit) header += "PUT, ";
  header.resize(header.size() - 2);
  return header + "\r\n";
}

Result<uint64_t> count_of(Call& c) {
  IDFORGE_ASSIGN_OR_RETURN(std::string_view text, param(c.s.query, "count"));
  return parse_request_count(text, c.service.config().max_count);
}

Result<IdFormat> format_of(Call& c) {
  IDFORGE_ASSIGN_OR_RETURN(std::string_view text, param(c.s.query, "format"));
  if (text.empty() || text == "json") return IdFormat::kJson;
  if (text == "text") return IdFormat::kText;
  return Status::InvalidArgument("format must be json or text, got " + quote_text(text));
}

// --- ID routes ---

RouteOutcome snowflake_ids(Call& c, uint64_t count, IdFormat format) {
  if (is_sliced(c.service.config(), count)) {
    return http::sliced_batch(c.service, BatchKind::kSnowflake, count, format, c.mode);
  }
  c.s.ids.resize(count);
  Status made = c.service.snowflake(c.s.ids);
  if (!made.ok()) return fail(c, made);
  numeric_ids(c.s.body, format, "snowflake", {}, c.s.ids);
  return reply(c, 200, content_type(format), c.s.body);
}

// Takes what the tag's buffer holds now; the rest waits on the store off the I/O thread.
RouteOutcome segment_ids(Call& c, uint64_t count, IdFormat format) {
  c.s.ids.resize(count);
  Result<size_t> taken = c.service.try_segment(c.capture, c.s.ids);
  if (!taken.ok()) return fail(c, taken.status());
  if (*taken >= count) {
    if (is_sliced(c.service.config(), count)) {
      return http::sliced_segment_batch(c.service, c.capture, c.s.ids, format, c.mode);
    }
    numeric_ids(c.s.body, format, "segment", c.capture, c.s.ids);
    return reply(c, 200, content_type(format), c.s.body);
  }
  RouteOutcome outcome;
  outcome.job = wait_for_segment_ids(
      c.service, c.capture, c.s.ids, *taken,
      [format, mode = c.mode](std::string& out, const Status& made, std::span<const uint64_t> ids,
                              std::string_view tag) {
        if (!made.ok()) return write_status_error(out, mode, made);
        std::string body;
        numeric_ids(body, format, "segment", tag, ids);
        write_reply(out, mode, 200, content_type(format), body);
        return 200;
      });
  return outcome;
}

// A count and a format, or the error answered.
struct IdRequest {
  uint64_t count = 0;
  IdFormat format = IdFormat::kJson;
};

Result<IdRequest> id_request(Call& c) {
  IDFORGE_ASSIGN_OR_RETURN(uint64_t count, count_of(c));
  IDFORGE_ASSIGN_OR_RETURN(IdFormat format, format_of(c));
  return IdRequest{count, format};
}

RouteOutcome snowflake(Call& c) {
  Result<IdRequest> r = id_request(c);
  if (!r.ok()) return fail(c, r.status());
  return snowflake_ids(c, r->count, r->format);
}

RouteOutcome segment(Call& c) {
  Result<IdRequest> r = id_request(c);
  if (!r.ok()) return fail(c, r.status());
  return segment_ids(c, r->count, r->format);
}

RouteOutcome leaf_snowflake(Call& c) { return snowflake_ids(c, 1, IdFormat::kBare); }
RouteOutcome leaf_segment(Call& c) { return segment_ids(c, 1, IdFormat::kBare); }

RouteOutcome uuid7(Call& c) {
  Result<IdRequest> r = id_request(c);
  if (!r.ok()) return fail(c, r.status());
  if (is_sliced(c.service.config(), r->count)) {
    return http::sliced_batch(c.service, BatchKind::kUuid7, r->count, r->format, c.mode);
  }
  c.s.uuids.resize(r->count);
  c.service.uuid7(c.s.uuids);
  text_ids(c.s.body, r->format, "uuid7", {}, c.s.uuids.size(),
           [&](size_t i) { return c.s.uuids[i].to_string(); });
  return reply(c, 200, content_type(r->format), c.s.body);
}

RouteOutcome ulid(Call& c) {
  Result<IdRequest> r = id_request(c);
  if (!r.ok()) return fail(c, r.status());
  if (is_sliced(c.service.config(), r->count)) {
    return http::sliced_batch(c.service, BatchKind::kUlid, r->count, r->format, c.mode);
  }
  c.s.ulids.resize(r->count);
  c.service.ulid(c.s.ulids);
  text_ids(c.s.body, r->format, "ulid", {}, c.s.ulids.size(),
           [&](size_t i) { return c.s.ulids[i].to_string(); });
  return reply(c, 200, content_type(r->format), c.s.body);
}

RouteOutcome serial(Call& c) {
  Result<IdRequest> r = id_request(c);
  if (!r.ok()) return fail(c, r.status());
  RouteOutcome outcome;
  outcome.job = [service = &c.service, tag = std::string(c.capture), request = *r,
                 mode = c.mode](std::string& out) {
    std::vector<std::string> serials;
    serials.reserve(request.count);
    for (uint64_t i = 0; i < request.count; ++i) {
      Result<std::string> next = service->serial(tag);
      if (!next.ok()) return write_status_error(out, mode, next.status());
      serials.push_back(std::move(*next));
    }
    std::string body;
    text_ids(body, request.format, "serial", tag, serials.size(),
             [&](size_t i) -> std::string_view { return serials[i]; });
    write_reply(out, mode, 200, content_type(request.format), body);
    return 200;
  };
  return outcome;
}

// --- decode and compose ---

Result<Layout> layout_of(Call& c) {
  IDFORGE_ASSIGN_OR_RETURN(std::string_view name, param(c.s.query, "layout"));
  return c.service.layout_named(name);
}

RouteOutcome decode(Call& c) {
  Result<uint64_t> id = parse_id(c.capture);
  if (!id.ok()) return fail(c, id.status());
  Result<Layout> layout = layout_of(c);
  if (!layout.ok()) return fail(c, layout.status());
  Result<DecodedId> decoded = layout->decode(*id);
  if (!decoded.ok()) return fail(c, decoded.status());
  return reply(c, 200, kJsonType, decode_json(*layout, *decoded));
}

RouteOutcome compose(Call& c) {
  Result<Layout> layout = layout_of(c);
  if (!layout.ok()) return fail(c, layout.status());
  Result<std::string_view> time_text = param(c.s.query, "time");
  if (!time_text.ok()) return fail(c, time_text.status());
  if (time_text->empty()) {
    return fail(c, Status::InvalidArgument(
                       "compose needs time=T, Unix ms or ISO-8601 (2026-11-22T10:00:00Z)"));
  }
  Result<int64_t> unix_ms = parse_time(*time_text);
  if (!unix_ms.ok()) return fail(c, unix_ms.status());
  std::vector<std::pair<std::string, uint64_t>> values;
  for (const auto& [key, text] : c.s.query.items()) {
    if (key == "time" || key == "layout") continue;
    Result<uint64_t> value = parse_u64(text, "field " + quote_text(key));
    if (!value.ok()) return fail(c, value.status());
    values.emplace_back(std::string(key), *value);
  }
  Result<uint64_t> id = layout->compose_named(*unix_ms, values);
  if (!id.ok()) return fail(c, id.status());
  Result<DecodedId> decoded = layout->decode(*id);
  if (!decoded.ok()) return fail(c, decoded.status());
  return reply(c, 200, kJsonType, decode_json(*layout, *decoded));
}

// --- status, metrics, health ---

// ?tag=NAME: that tag's buffers and served marks only, however many tags there are.
RouteOutcome status(Call& c) {
  Result<std::string_view> tag = param(c.s.query, "tag");
  if (!tag.ok()) return fail(c, tag.status());
  if (!tag->empty()) {
    Status valid = validate_tag_name(*tag);
    if (!valid.ok()) return fail(c, valid);
  }
  return reply(c, 200, kJsonType, status_json(c.service, *tag));
}

RouteOutcome metrics(Call& c) {
  return reply(c, 200, "text/plain; version=0.0.4", c.service.metrics().render(c.service));
}

RouteOutcome healthz(Call& c) { return reply(c, 200, kTextType, "ok\n"); }

// ?part=snowflake or ?part=segments asks about one part, so a balancer that sends only
// Snowflake traffic keeps a node whose segment store is down.
RouteOutcome readyz(Call& c) {
  Result<std::string_view> name = param(c.s.query, "part");
  if (!name.ok()) return fail(c, name.status());
  Result<ServicePart> part = parse_service_part(*name);
  if (!part.ok()) return fail(c, part.status());
  const PartReadiness r = c.service.readiness(*part);
  if (r.ready) return reply(c, 200, kTextType, "ready\n");
  return reply(c, 503, kTextType, "not ready: " + r.why + "\n");
}

// --- admin ---

RouteOutcome unauthorized(Call& c) {
  write_error(c.out, c.mode, 401, "unauthorized",
              c.request.authorization.empty()
                  ? "admin routes need the header 'Authorization: Bearer <admin token>'"
                  : "the admin token is wrong",
              "WWW-Authenticate: Bearer\r\n");
  return answered(401);
}

RouteOutcome admin_list_tags(Call& c) {
  RouteOutcome outcome;
  outcome.job = [service = &c.service, mode = c.mode](std::string& out) {
    Result<std::vector<TagInfo>> tags = service->list_tags();
    if (!tags.ok()) return write_status_error(out, mode, tags.status());
    write_reply(out, mode, 200, kJsonType, tags_json(*tags));
    return 200;
  };
  return outcome;
}

RouteOutcome admin_create_tag(Call& c) {
  Result<TagSpec> parsed = parse_tag_spec(c.request.body);
  if (!parsed.ok()) return fail(c, parsed.status());
  RouteOutcome outcome;
  outcome.job = [service = &c.service, spec = std::move(*parsed), mode = c.mode](std::string& out) {
    Result<TagInfo> tag = service->create_tag(spec);
    if (!tag.ok()) return write_status_error(out, mode, tag.status());
    write_reply(out, mode, 201, kJsonType, tag_json(*tag));
    return 201;
  };
  return outcome;
}

RouteOutcome admin_set_step(Call& c) {
  Result<uint64_t> parsed = parse_step_body(c.request.body);
  if (!parsed.ok()) return fail(c, parsed.status());
  RouteOutcome outcome;
  outcome.job = [service = &c.service, tag = std::string(c.capture), step = *parsed,
                 mode = c.mode](std::string& out) {
    Result<TagInfo> info = service->set_step(tag, step);
    if (!info.ok()) return write_status_error(out, mode, info.status());
    write_reply(out, mode, 200, kJsonType, tag_json(*info));
    return 200;
  };
  return outcome;
}

RouteOutcome admin_worker(Call& c) {
  return reply(c, 200, kJsonType, lease_json(c.service.status()));
}

// --- the table ---

struct RouteEntry {
  std::array<std::string_view, 5> pattern;  // segments; "{}" captures one; "" past the end
  unsigned methods;
  Route route;
  bool admin;
  Handler handler;
};

// Hot routes first: the table is searched in order.
constexpr RouteEntry kRoutes[] = {
    {{"v1", "snowflake"}, kGetBit, Route::kSnowflake, false, snowflake},
    {{"v1", "segment", "{}"}, kGetBit, Route::kSegment, false, segment},
    {{"api", "segment", "get", "{}"}, kGetBit, Route::kLeafSegment, false, leaf_segment},
    {{"api", "snowflake", "get", "{}"}, kGetBit, Route::kLeafSnowflake, false, leaf_snowflake},
    {{"tinyid", "id", "nextIdSimple"},
     kGetBit | kPostBit,
     Route::kTinyid,
     false,
     http::tinyid_next_id_simple},
    {{"tinyid", "id", "nextId"}, kGetBit | kPostBit, Route::kTinyid, false, http::tinyid_next_id},
    {{"tinyid", "id", "nextSegmentIdSimple"},
     kGetBit | kPostBit,
     Route::kTinyid,
     false,
     http::tinyid_next_segment_id_simple},
    {{"tinyid", "id", "nextSegmentId"},
     kGetBit | kPostBit,
     Route::kTinyid,
     false,
     http::tinyid_next_segment_id},
    {{"v1", "uuid7"}, kGetBit, Route::kUuid7, false, uuid7},
    {{"v1", "ulid"}, kGetBit, Route::kUlid, false, ulid},
    {{"v1", "serial", "{}"}, kGetBit, Route::kSerial, false, serial},
    {{"v1", "decode", "{}"}, kGetBit, Route::kDecode, false, decode},
    {{"v1", "compose"}, kGetBit, Route::kCompose, false, compose},
    {{"v1", "status"}, kGetBit, Route::kStatus, false, status},
    {{"metrics"}, kGetBit, Route::kMetrics, false, metrics},
    {{"healthz"}, kGetBit, Route::kHealth, false, healthz},
    {{"readyz"}, kGetBit, Route::kHealth, false, readyz},
    {{"v1", "admin", "tags"}, kGetBit, Route::kAdmin, true, admin_list_tags},
    {{"v1", "admin", "tags"}, kPostBit, Route::kAdmin, true, admin_create_tag},
    {{"v1", "admin", "tags", "{}", "step"}, kPutBit, Route::kAdmin, true, admin_set_step},
    {{"v1", "admin", "worker"}, kGetBit, Route::kAdmin, true, admin_worker},
};

bool matches(const RouteEntry& entry, const PathSegments& path, std::string_view* capture) {
  if (path.too_many()) return false;
  size_t n = 0;
  while (n < entry.pattern.size() && !entry.pattern[n].empty()) ++n;
  if (path.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (entry.pattern[i] == "{}") {
      if (path[i].empty()) return false;
      *capture = path[i];
    } else if (entry.pattern[i] != path[i]) {
      return false;
    }
  }
  return true;
}

RouteOutcome not_found(Call& c) {
  write_error(c.out, c.mode, 404, "not_found",
              fmt::format("no route for {} {}; see docs/api.md", c.request.method_text,
                          quote_text(c.request.path)));
  RouteOutcome outcome = answered(404);
  outcome.route = Route::kNotFound;
  return outcome;
}

RouteOutcome method_not_allowed(Call& c, unsigned methods, Route route) {
  write_error(
      c.out, c.mode, 405, "method_not_allowed",
      fmt::format("{} is not allowed on {}", c.request.method_text, quote_text(c.request.path)),
      allow_header(methods));
  RouteOutcome outcome = answered(405);
  outcome.route = route;
  return outcome;
}

// The web page's files; "/" is /index.html.
RouteOutcome web(Call& c) {
  std::string_view path = c.request.path;
  std::string decoded;
  if (path.find('%') != std::string_view::npos) {
    if (!percent_decode(path, false, &decoded)) return not_found(c);
    path = decoded;
  }
  const WebAsset* asset = find_web_asset(path == "/" ? std::string_view("/index.html") : path);
  if (asset == nullptr) return not_found(c);
  if (method_bit(c.request.method) != kGetBit) return method_not_allowed(c, kGetBit, Route::kWeb);
  RouteOutcome outcome = reply(c, 200, asset->content_type, asset->body);
  outcome.route = Route::kWeb;
  return outcome;
}

}  // namespace

RouteOutcome HttpRouter::handle(const HttpRequest& request, const ReplyMode& mode,
                                std::string& out) {
  Call c{service_, scratch_, request, mode, out, {}, false, {}};
  if (!scratch_.path.parse(request.path)) {
    RouteOutcome outcome = fail(c, Status::InvalidArgument("malformed percent-escape in the path " +
                                                           quote_text(request.path)));
    outcome.route = Route::kNotFound;
    return outcome;
  }
  // No admin token and no tokens file: the admin API does not exist.
  const bool admin_on = !service_.config().admin_token.empty() || gate_.tokens_on();
  const unsigned method = method_bit(request.method);
  unsigned allowed = 0;
  Route allowed_route = Route::kNotFound;
  for (const RouteEntry& entry : kRoutes) {
    if (entry.admin && !admin_on) continue;
    std::string_view capture;
    if (!matches(entry, scratch_.path, &capture)) continue;
    if ((entry.methods & method) == 0) {
      allowed |= entry.methods;
      allowed_route = entry.route;
      continue;
    }
    c.capture = capture;
    RouteOutcome outcome;
    InFlight ticket;
    if (const int refused = gate_.check_connection(c)) {
      outcome = answered(refused);
    } else if (entry.admin && !gate_.tokens_on() &&
               !admin_token_matches(service_, request.authorization)) {
      outcome = unauthorized(c);
    } else if (!scratch_.query.parse(request.query)) {
      outcome = fail(c, Status::InvalidArgument("malformed percent-escape in the query " +
                                                quote_text(request.query)));
    } else if (const int denied = gate_.tokens_on() ? gate_.check(c, entry.route, &ticket) : 0) {
      outcome = answered(denied);
    } else {
      outcome = entry.handler(c);
      outcome.ticket = std::move(ticket);
    }
    outcome.route = entry.route;
    outcome.token = c.token_name;
    return outcome;
  }
  if (const int refused = gate_.check_connection(c)) {
    RouteOutcome outcome = answered(refused);
    outcome.route = allowed != 0 ? allowed_route : Route::kNotFound;
    return outcome;
  }
  if (allowed != 0) return method_not_allowed(c, allowed, allowed_route);
  return web(c);
}

}  // namespace idforge::server
