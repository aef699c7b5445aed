// MULTI, EXEC and DISCARD, as Redis answers them (docs/api.md, "Transactions"): after
// MULTI each command is checked (known, right number of arguments, within the limits
// of resp_session_impl.h, in its token's scope and limits: resp_auth.cc) and answered
// +QUEUED; one refused while queueing makes EXEC answer -EXECABORT. EXEC runs the
// queued commands in order and answers the array of their answers, an error among
// them answered in its place. A nested MULTI, or EXEC or DISCARD without MULTI, is an
// error that changes nothing, with Redis's words.
//
// The answers of an EXEC cannot be interleaved with anything, so when a queued command
// must wait on the store (a segment buffer ran dry) the EXEC becomes one kBlocking job:
// it finishes that command on the worker thread and runs the rest there, where a
// segment request waits on the store itself (may_wait_), then answers the whole array.
// Each queued command is counted in the metrics and the access log when EXEC runs it,
// as if it had been sent alone; MULTI, EXEC and DISCARD count as "other".
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/net/access_log.h"
#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"
#include "server/service/metrics.h"

namespace idforge::server::resp {

uint64_t ids_asked(const CommandSpec& spec, Args args, uint64_t max_count) {
  if (spec.count_at == 0) return 0;
  if (args.size() <= spec.count_at) return 1;
  Result<uint64_t> count = parse_request_count(args[spec.count_at], max_count);
  return count.ok() ? *count : 0;
}

Answer RespSession::multi(Args, std::string& out) {
  if (in_multi_) {
    put_error(out, "ERR MULTI calls can not be nested");
    return {400};
  }
  in_multi_ = true;
  put_simple(out, "OK");
  return {};
}

Answer RespSession::discard(Args, std::string& out) {
  if (!in_multi_) {
    put_error(out, "ERR DISCARD without MULTI");
    return {400};
  }
  end_multi();
  put_simple(out, "OK");
  return {};
}

void RespSession::end_multi() {
  in_multi_ = false;
  multi_refused_ = false;
  queued_.clear();
  queued_bytes_ = 0;
  queued_ids_ = 0;
}

Answer RespSession::queue(const CommandSpec& spec, Args args, std::string& out) {
  size_t bytes = 0;
  for (std::string_view arg : args) bytes += arg.size();
  const uint64_t max_ids = service_.config().max_count;
  const uint64_t ids = ids_asked(spec, args, max_ids);
  const Token* token = current_token();
  const uint64_t token_max_ids = token != nullptr ? token->spec.limits.max_ids : 0;
  std::string refused;
  if (queued_.size() >= kMaxQueued) {
    refused = fmt::format("ERR a transaction holds at most {} commands", kMaxQueued);
  } else if (bytes > kMaxQueuedBytes - queued_bytes_) {
    refused = fmt::format("ERR a transaction holds at most {} bytes of arguments in all",
                          kMaxQueuedBytes);
  } else if (ids > max_ids - queued_ids_) {
    refused = fmt::format(
        "ERR a transaction asks for at most {} IDs in all (max_count), as one request does; "
        "this one would ask for {}",
        max_ids, queued_ids_ + ids);
  } else if (token_max_ids != 0 && queued_ids_ + ids > token_max_ids) {
    // The token's max_ids bounds a transaction as it bounds one request.
    service_.metrics().record_limit_refusal(kProtocolIndex, Limit::kMaxIds, /*connection=*/false);
    token->state->limit_refusals[static_cast<size_t>(Limit::kMaxIds)].fetch_add(
        1, std::memory_order_relaxed);
    refused = fmt::format(
        "ERR max_ids: token '{}' may ask for at most {} IDs in one request, a transaction "
        "too; this one would ask for {}",
        token->spec.name, token_max_ids, queued_ids_ + ids);
  }
  if (!refused.empty()) {
    put_error(out, refused);
    multi_refused_ = true;
    return {400};
  }
  Queued& queued = queued_.emplace_back();
  queued.spec = &spec;
  queued.args.assign(args.begin(), args.end());
  queued_bytes_ += bytes;
  queued_ids_ += ids;
  put_simple(out, "QUEUED");
  return {kQueued};
}

Answer RespSession::exec(Args, std::string& out) {
  if (!in_multi_) {
    put_error(out, "ERR EXEC without MULTI");
    return {400};
  }
  const bool refused = multi_refused_;
  std::vector<Queued> queued = std::move(queued_);
  end_multi();
  if (refused) {
    put_error(out, "EXECABORT Transaction discarded because of previous errors.");
    return {400};
  }
  exec_queue_ = std::move(queued);
  exec_next_ = 0;
  exec_replies_.clear();
  return run_exec(out);
}

Answer RespSession::run_exec(std::string& out) {
  while (exec_next_ < exec_queue_.size()) {
    const Answer answer = run_queued(exec_queue_[exec_next_], exec_replies_);
    if (answer.next == Next::kBlocking) {
      // queued_job_ finishes the command that waits (counted as its own); EXEC's job runs
      // it, then the rest, and feed() counts EXEC once it has answered.
      job_ = [this, waits = std::exchange(queued_job_, nullptr)](std::string& answer_out) {
        waits(exec_replies_);
        ++exec_next_;
        may_wait_ = true;
        const Answer rest = run_exec(answer_out);
        may_wait_ = false;
        return rest.status;
      };
      return {0, Next::kBlocking};
    }
    ++exec_next_;
  }
  put_number(out, '*', exec_queue_.size());
  out += exec_replies_;
  exec_queue_.clear();
  exec_replies_.clear();
  return {};
}

Answer RespSession::run_queued(const Queued& queued, std::string& out) {
  // EXEC's own access line was decided by feed(); each queued command decides its own.
  const bool exec_sampled =
      std::exchange(sampled_, access_log_ != nullptr && access_log_->sample());
  const std::string_view exec_command = std::exchange(command_, queued.spec->name);
  exec_args_.assign(queued.args.begin(), queued.args.end());
  const Answer answer = still_permitted(*queued.spec, exec_args_, out)
                            ? (this->*queued.spec->handler)(exec_args_, out)
                            : Answer{403};
  if (answer.next == Next::kBlocking) {  // counted once its job has answered
    queued_job_ = answer_on_worker(service_.metrics(), record(queued.spec->route, InFlight()),
                                   std::exchange(job_, nullptr));
  } else {
    service_.metrics().record_request(kProtocolIndex, queued.spec->route, answer.status,
                                      seconds_since(start_));
    if (sampled_) {
      access_log_->write_resp(command_, answer.status, seconds_since(start_), token_label());
    }
  }
  sampled_ = exec_sampled;
  command_ = exec_command;
  return answer;
}

}  // namespace idforge::server::resp
