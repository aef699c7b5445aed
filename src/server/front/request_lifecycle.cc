#include "server/front/request_lifecycle.h"

#include <memory>

#include "server/net/access_log.h"

namespace idforge::server {

using SteadyClock = std::chrono::steady_clock;

void RequestRecord::finish(Metrics& metrics, int status, SteadyClock::time_point timed_from) {
  metrics.record_request(protocol, route, status, seconds_since(timed_from));
  if (access != nullptr) {
    if (protocol == Metrics::kHttp) {
      access->write_http(what, path, status, seconds_since(arrived), token);
    } else {
      access->write_resp(what, status, seconds_since(arrived), token);
    }
  }
  ticket.release();
}

std::function<void(std::string& out)> answer_on_worker(
    Metrics& metrics, RequestRecord record, std::function<int(std::string& out)> answer) {
  // Shared: a std::function must be copyable, and the record's in-flight place is not.
  return [metrics = &metrics, record = std::make_shared<RequestRecord>(std::move(record)),
          answer = std::move(answer)](std::string& out) {
    const SteadyClock::time_point started = SteadyClock::now();
    const int status = answer(out);
    record->finish(*metrics, status, started);
  };
}

void SlicedAnswer::start(RequestRecord record, std::function<int(std::string& out)> slices) {
  record_ = std::move(record);
  slices_ = std::move(slices);
}

int SlicedAnswer::next(Metrics& metrics, std::string& out) {
  const int status = slices_(out);
  if (status == 0) return 0;
  record_.finish(metrics, status, record_.arrived);
  slices_ = nullptr;
  return status;
}

}  // namespace idforge::server
