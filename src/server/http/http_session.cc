#include "server/http/http_session.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "server/front/request_lifecycle.h"
#include "server/http/http_parser.h"
#include "server/http/http_reply.h"
#include "server/http/http_routes.h"
#include "server/net/access_log.h"
#include "server/service/metrics.h"

namespace idforge::server {
namespace {

constexpr int kHttp = Metrics::kHttp;

using SteadyClock = std::chrono::steady_clock;

std::string_view protocol_error_code(int status) {
  switch (status) {
    case 408:
      return "deadline_exceeded";
    case 413:
    case 414:
    case 431:
      return "out_of_range";
    default:
      return "invalid_argument";
  }
}

class HttpSession final : public Session {
 public:
  HttpSession(IdService& service, const HttpOptions& options)
      : service_(service),
        parser_(HttpLimits{options.max_request_line, options.max_header_bytes, options.max_headers,
                           options.max_body}),
        router_(service, options.auth, options.limits) {}

  Step feed(std::string_view in, std::string& out) override {
    Step step;
    if (closing_) {  // the last answer (a job's) is written: nothing more on this connection
      step.next = Next::kClose;
      return step;
    }
    // A batch in progress goes first: its answer comes before those of later requests.
    if (batch_.active()) {
      if (batch_.next(service_.metrics(), out) == 0) {
        step.next = Next::kFlush;
        return step;
      }
      if (std::exchange(batch_closes_, false)) {
        closing_ = true;
        step.next = Next::kClose;
        return step;
      }
    }
    size_t pos = 0;
    RequestTally tally(service_.metrics(), kHttp);
    while (true) {
      HttpRequest request;
      ParseResult parsed = parser_.parse(in.substr(pos), &request);
      if (parsed.kind == ParseResult::Kind::kNeedMore) {
        pos += parsed.consumed;
        partial_ = pos < in.size();
        step.consumed = pos;
        step.next = Next::kNeedMore;
        return step;
      }
      if (parsed.kind == ParseResult::Kind::kError) {
        protocol_error(out, parsed.status, parsed.reason);
        step.consumed = in.size();
        step.next = Next::kClose;
        return step;
      }
      pos += parsed.consumed;
      const bool logged = access_log_ != nullptr && access_log_->sample();
      ReplyMode mode;
      mode.head = request.method == HttpMethod::kHead;
      mode.close = !request.keep_alive;
      mode.keep_alive = request.keep_alive && request.version_minor == 0;
      RouteOutcome outcome = router_.handle(request, mode, out);
      if (outcome.job) {
        partial_ = false;
        closing_ = mode.close;
        step.consumed = pos;
        step.next = Next::kBlocking;
        step.blocking =
            answer_on_worker(service_.metrics(), record(request, outcome, logged, tally.start()),
                             std::move(outcome.job));
        return step;
      }
      if (outcome.slices) {  // counted and logged when its last slice answers
        partial_ = false;
        batch_closes_ = mode.close;
        batch_.start(record(request, outcome, logged, tally.start()), std::move(outcome.slices));
        step.consumed = pos;
        step.next = Next::kFlush;
        return step;
      }
      tally.add(outcome.route, outcome.status);
      if (logged) {
        access_log_->write_http(request.method_text, request.path, outcome.status,
                                seconds_since(tally.start()), outcome.token);
      }
      if (mode.close) {
        closing_ = true;
        step.consumed = pos;
        step.next = Next::kClose;
        return step;
      }
      if (out.size() >= kFlushBytes && pos < in.size()) {
        step.consumed = pos;
        step.next = Next::kFlush;
        return step;
      }
    }
  }

  void on_timeout(std::string& out) override {
    // Only a request that started gets an answer; an idle connection just closes, since
    // a 408 there could be read as the answer to a request the client is sending now.
    if (!partial_ || closing_) return;
    protocol_error(out, 408, "the request did not arrive in time");
  }

 private:
  // What a request answered later (a job, a batch in slices) is counted and logged with.
  // Copies only for a request the access log writes: the request's views point into
  // input the runtime drops before it is answered.
  RequestRecord record(const HttpRequest& request, RouteOutcome& outcome, bool logged,
                       SteadyClock::time_point arrived) const {
    RequestRecord r;
    r.protocol = kHttp;
    r.route = outcome.route;
    r.arrived = arrived;
    r.ticket = std::move(outcome.ticket);
    if (logged) {
      r.access = access_log_;
      r.what = request.method_text;
      r.path = request.path;
      r.token = outcome.token;
    }
    return r;
  }

  void protocol_error(std::string& out, int status, std::string_view reason) {
    ReplyMode mode;
    mode.close = true;
    write_error(out, mode, status, protocol_error_code(status), reason);
    service_.metrics().record_request(kHttp, Route::kNotFound, status, 0);
    // A request that did not parse has no method or path to show.
    if (access_log_ != nullptr && access_log_->sample())
      access_log_->write_http("-", "-", status, 0);
    closing_ = true;
    partial_ = false;
  }

  IdService& service_;
  HttpRequestParser parser_;
  HttpRouter router_;
  bool partial_ = false;       // bytes of an incomplete request are waiting
  bool closing_ = false;       // the connection ends after the answers written so far
  SlicedAnswer batch_;         // a large batch being made in slices (http_batch.h)
  bool batch_closes_ = false;  // Connection: close after its answer
};

}  // namespace

SessionFactory make_http_session_factory(IdService& service, HttpOptions options) {
  if (options.auth) service.metrics().show_tokens(options.auth);
  return [&service, options]() -> std::unique_ptr<Session> {
    return std::make_unique<HttpSession>(service, options);
  };
}

}  // namespace idforge::server
