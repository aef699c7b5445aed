#include "server/http/http_tinyid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/parse_u64.h"
#include "server/http/http_json.h"

namespace idforge::server::http {
namespace {

// Tinyid's Response codes (vo/ErrorCode): 200 ok, 5 a bad token, 6 anything else.
constexpr int kOk = 200;
constexpr int kTokenError = 5;
constexpr int kSystemError = 6;
// Tinyid's share of a segment used before its client loads the next (LOADING_PERCENT).
constexpr uint64_t kLoadingPercent = 20;

struct TinyidRequest {
  std::string biz_type;
  uint64_t batch = 1;
  bool token_ok = false;
};

// bizType, token and batchSize (tinyid_batch_size).
Result<TinyidRequest> read_request(Call& c) {
  TinyidRequest r;
  IDFORGE_ASSIGN_OR_RETURN(std::string_view biz, param(c.s.query, "bizType"));
  IDFORGE_ASSIGN_OR_RETURN(std::string_view token, param(c.s.query, "token"));
  IDFORGE_ASSIGN_OR_RETURN(std::string_view batch, param(c.s.query, "batchSize"));
  r.biz_type = std::string(biz);
  r.token_ok = c.token_checked || c.service.tinyid_can_visit(biz, token);
  IDFORGE_ASSIGN_OR_RETURN(r.batch, tinyid_batch_size(batch, c.service.config().max_count));
  return r;
}

std::string response_json(int code, std::string_view message, std::string_view data) {
  std::string body = R"({"data":)";
  body.append(data.empty() ? "null" : data);
  body.append(fmt::format(R"(,"code":{},"message":)", code));
  append_json_string(body, message);
  body.push_back('}');
  return body;
}

std::string ids_text(const std::vector<uint64_t>& ids, char separator, bool brackets) {
  std::string out = brackets ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(separator);
    out += std::to_string(ids[i]);
  }
  if (brackets) out.push_back(']');
  return out;
}

// Tinyid's SegmentId for a range: the client adds delta to currentId before each ID,
// so currentId is one stride below the first; loadingId is where it fetches the next.
struct TinyidSegment {
  int64_t current, loading, max;
  uint64_t delta, remainder;
};
TinyidSegment tinyid_segment(const Segment& s) {
  TinyidSegment t;
  t.current = static_cast<int64_t>(s.first) - static_cast<int64_t>(s.stride);
  t.max = static_cast<int64_t>(s.last());
  t.delta = s.stride;
  t.remainder = s.first % s.stride;
  t.loading = t.current + static_cast<int64_t>(s.count * s.stride * kLoadingPercent / 100);
  return t;
}

// IDs (or a range) are fetched on the worker pool: a tag not buffered yet waits on a
// store. `answer` turns the outcome into the body.
template <typename Fetch, typename Answer>
RouteOutcome on_pool(Call& c, std::string_view content_type, Fetch fetch, Answer answer) {
  RouteOutcome outcome;
  outcome.job = [mode = c.mode, content_type, fetch, answer](std::string& out) mutable {
    std::string body = answer(fetch());
    write_reply(out, mode, 200, content_type, body);
    return 200;
  };
  return outcome;
}

// The answer for a request that cannot go on (a bad parameter, a token that may not
// fetch the business type), in the route's format; nullopt when it may go on.
std::optional<RouteOutcome> refused(Call& c, const Result<TinyidRequest>& r, bool json) {
  if (r.ok() && r->token_ok) return std::nullopt;
  if (!json) return reply(c, 200, kTextType, "");
  return reply(c, 200, kJsonType,
               r.ok() ? response_json(kTokenError, "token is error", "")
                      : response_json(kSystemError, r.status().message(), ""));
}

Result<std::vector<uint64_t>> fetch_ids(IdService* service, const TinyidRequest& req) {
  std::vector<uint64_t> ids(req.batch);
  IDFORGE_RETURN_IF_ERROR(service->segment(req.biz_type, ids));
  return ids;
}

}  // namespace

Result<uint64_t> tinyid_batch_size(std::string_view text, uint64_t max_count) {
  if (text.empty()) return 1;
  IDFORGE_ASSIGN_OR_RETURN(uint64_t n, parse_u64(text, "batchSize"));
  return std::clamp<uint64_t>(n, 1, max_count);
}

RouteOutcome tinyid_next_id(Call& c) {
  Result<TinyidRequest> r = read_request(c);
  if (auto answer = refused(c, r, /*json=*/true)) return std::move(*answer);
  return on_pool(
      c, kJsonType, [service = &c.service, req = *r] { return fetch_ids(service, req); },
      [](const Result<std::vector<uint64_t>>& ids) {
        if (!ids.ok()) return response_json(kSystemError, ids.status().message(), "");
        return response_json(kOk, "", ids_text(*ids, ',', true));
      });
}

RouteOutcome tinyid_next_id_simple(Call& c) {
  Result<TinyidRequest> r = read_request(c);
  if (auto answer = refused(c, r, /*json=*/false)) return std::move(*answer);
  return on_pool(
      c, kTextType, [service = &c.service, req = *r] { return fetch_ids(service, req); },
      [](const Result<std::vector<uint64_t>>& ids) {
        return ids.ok() ? ids_text(*ids, ',', false) : std::string();
      });
}

RouteOutcome tinyid_next_segment_id(Call& c) {
  Result<TinyidRequest> r = read_request(c);
  if (auto answer = refused(c, r, /*json=*/true)) return std::move(*answer);
  return on_pool(
      c, kJsonType,
      [service = &c.service, tag = r->biz_type] { return service->segment_range(tag); },
      [](const Result<Segment>& got) {
        if (!got.ok()) return response_json(kSystemError, got.status().message(), "");
        const TinyidSegment t = tinyid_segment(*got);
        return response_json(
            kOk, "",
            fmt::format(R"({{"currentId":{},"loadingId":{},"maxId":{},"delta":{},"remainder":{}}})",
                        t.current, t.loading, t.max, t.delta, t.remainder));
      });
}

RouteOutcome tinyid_next_segment_id_simple(Call& c) {
  Result<TinyidRequest> r = read_request(c);
  if (auto answer = refused(c, r, /*json=*/false)) return std::move(*answer);
  return on_pool(
      c, kTextType,
      [service = &c.service, tag = r->biz_type] { return service->segment_range(tag); },
      [](const Result<Segment>& got) {
        if (!got.ok()) return std::string();
        const TinyidSegment t = tinyid_segment(*got);
        return fmt::format("{},{},{},{},{}", t.current, t.loading, t.max, t.delta, t.remainder);
      });
}

}  // namespace idforge::server::http
