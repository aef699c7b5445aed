// One request's lifecycle, the same in both front ends (the HTTP and the RESP sessions'
// feed()). A request is answered in one of three ways:
//
//   at once, on the event loop      counted with the others of its feed() (RequestTally,
//                                   metrics.h) and access-logged there
//   by a job on the worker pool     when its answer waits on a backend
//                                   (Session::Next::kBlocking): answer_on_worker()
//   by a batch, a slice per feed()  when it asks for more IDs than batch_slice
//                                   (Session::Next::kFlush): SlicedAnswer
//
// The last two end after feed() has returned, so what the request is counted and
// access-logged with once answered travels with it in a RequestRecord, which also holds
// its in-flight place under its token's limit (auth.h) until then. A job is timed while
// it runs; a batch from when its request arrived (docs/api.md,
// idforge_request_duration_seconds). Segment IDs are taken from the tag's buffer without
// waiting (IdService::try_segment), and only the rest waits on the store, in a job
// made by wait_for_segment_ids().
//
// Thread safety: a RequestRecord and a SlicedAnswer belong to one session; a job made by
// answer_on_worker() runs on a worker thread while the session is not fed (session.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/status.h"
#include "server/auth/auth.h"
#include "server/service/id_service.h"
#include "server/service/metrics.h"

namespace idforge::server {

class AccessLog;  // server/net/access_log.h

// What a request is counted and access-logged with once it has been answered.
struct RequestRecord {
  int protocol = Metrics::kHttp;
  Route route = Route::kNotFound;
  // When feed() began on the bytes that carried it: the access log's time starts there.
  std::chrono::steady_clock::time_point arrived;
  const AccessLog* access = nullptr;  // set when the access log writes this request
  // What the access line shows, copied (the request's views die with its input): HTTP's
  // method and path, RESP's command; the token's name ("" for none).
  std::string what;
  std::string path;
  std::string token;
  InFlight ticket;  // its place under its token's in_flight limit, held until answered

  // Counts `status` in `metrics`, timed from `timed_from`; writes the access line, timed
  // from arrival; gives back the in-flight place.
  void finish(Metrics& metrics, int status, std::chrono::steady_clock::time_point timed_from);
};

// The job (Session::Step::blocking) of a request whose answer waits on a backend: runs
// `answer`, which appends the answer and returns its status, then finishes `record`,
// timed from when the job started. `metrics` must outlive the job.
std::function<void(std::string& out)> answer_on_worker(Metrics& metrics, RequestRecord record,
                                                       std::function<int(std::string& out)> answer);

// A request answered by a batch written a slice per feed(): its record, kept until the
// last slice has been written.
class SlicedAnswer {
 public:
  bool active() const { return static_cast<bool>(slices_); }
  // `slices` writes the next slice into `out` per call: 0 while more are to come, the
  // answer's status with the last one.
  void start(RequestRecord record, std::function<int(std::string& out)> slices);
  // One slice of the answer in progress: 0 while more are to come; its status once it is
  // complete, counted and logged (timed from its arrival), and the SlicedAnswer free for
  // the next batch.
  int next(Metrics& metrics, std::string& out);

 private:
  std::function<int(std::string& out)> slices_;  // empty: no batch in progress
  RequestRecord record_;
};

// The answer, on the worker pool, of a request whose IDs the tag's buffer held only
// `taken` of (IdService::try_segment):
// it waits on the store for the rest (up to segment_wait_ms), then answers with
// `answer(out, made, ids, tag)`, which writes the IDs or the error `made` and returns the
// status. It keeps copies of `tag` and `ids`, so it depends on the service alone, which
// must outlive it.
template <typename Answer>
std::function<int(std::string& out)> wait_for_segment_ids(IdService& service, std::string_view tag,
                                                          std::span<const uint64_t> ids,
                                                          size_t taken, Answer answer) {
  return [service = &service, tag = std::string(tag),
          ids = std::vector<uint64_t>(ids.begin(), ids.end()), taken,
          answer = std::move(answer)](std::string& out) mutable {
    const Status made = service->segment(tag, std::span<uint64_t>(ids).subspan(taken));
    return answer(out, made, std::span<const uint64_t>(ids), std::string_view(tag));
  };
}

}  // namespace idforge::server
