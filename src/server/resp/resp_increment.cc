// Segment IDs over RESP: INCR, INCRBY and ID.NEXT, and the increments Redis clients may
// send that idforge refuses with the reason (docs/api.md, "What clients send").
//
// INCRBY tag n answers as Redis would, the value after adding n, so the caller owns
// (last - n, last]. That is exact only when the n IDs taken are contiguous; when they
// are not (they cross from one range of the tag to the next while other servers take
// ranges too, or the tag is striped over several stores) no single value names them,
// and the answer is an error naming ID.NEXT tag n, which lists any n IDs. The n IDs
// taken are then skipped: a gap, never a duplicate.
#include <fmt/format.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/quote.h"
#include "core/text.h"
#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"
#include "server/service/metrics.h"

namespace idforge::server::resp {
namespace {

// The answer to a segment request holding all its `ids`; returns its status.
int put_segment_ids(std::string& out, std::span<const uint64_t> ids, IdsForm form,
                    std::string_view tag) {
  if (form != IdsForm::kLast) {
    put_ids(out, ids, form == IdsForm::kArray);
    return 200;
  }
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] != ids[0] + i) {
      put_error(out, fmt::format("ERR IDs not contiguous: the {} IDs taken from tag {} cross a "
                                 "range boundary or come from striped stores, so INCRBY cannot "
                                 "answer them as one value; they are skipped. "
                                 "Use ID.NEXT {} {}, which lists the IDs it takes",
                                 ids.size(), quote_text(tag), tag, ids.size()));
      return 400;
    }
  }
  put_number(out, ':', ids.back());
  return 200;
}

// A command Redis has and idforge refuses, with why and what to use instead.
Answer refuse(std::string& out, std::string_view why) {
  put_error(out, why);
  return {400};
}

// The commands RespSession::refused answers (their kCommands entries name it).
struct Refusal {
  std::string_view command;  // lower case, as in kCommands
  std::string_view why;
};
constexpr Refusal kRefusals[] = {
    {"decr",
     "ERR IDs never go down: DECR is not served; INCR tag or ID.NEXT tag count takes the next "
     "IDs"},
    {"decrby",
     "ERR IDs never go down: DECRBY is not served; INCRBY tag n or ID.NEXT tag n takes the next "
     "IDs"},
    {"incrbyfloat",
     "ERR IDs are whole numbers: INCRBYFLOAT is not served; INCRBY tag n takes n IDs"},
    {"get", "ERR IDs are not stored values: GET is not served; INCR tag takes the next ID"},
    {"set",
     "ERR IDs are not stored values: SET is not served; a tag's first ID is set by 'idforge tag "
     "create NAME --start N'"},
};

}  // namespace

Answer RespSession::incr(Args args, std::string& out) {
  return segment_ids(args[1], 1, IdsForm::kOne, out);
}

Answer RespSession::incrby(Args args, std::string& out) {
  long long by = 0;
  if (!text::parse_int(args[2], &by)) {
    put_error(out, "ERR value is not an integer or out of range");  // Redis's words
    return {400};
  }
  if (by <= 0) {
    return refuse(out, fmt::format("ERR IDs never go down or repeat: INCRBY takes an increment "
                                   "of 1 or more, got {}",
                                   by));
  }
  // Above max_count: the same out_of_range error as ID.NEXT's count.
  Result<uint64_t> count = parse_request_count(args[2], service_.config().max_count);
  if (!count.ok()) return {put_status(out, count.status())};
  return segment_ids(args[1], *count, *count == 1 ? IdsForm::kOne : IdsForm::kLast, out);
}

Answer RespSession::id_next(Args args, std::string& out) {
  Result<uint64_t> count = count_arg(args, 2);
  if (!count.ok()) return {put_status(out, count.status())};
  return segment_ids(args[1], *count, args.size() > 2 ? IdsForm::kArray : IdsForm::kOne, out);
}

Answer RespSession::refused(Args args, std::string& out) {
  for (const Refusal& r : kRefusals) {
    if (text::equals_ignore_case(args[0], r.command)) return refuse(out, r.why);
  }
  return refuse(out, "ERR this command is not served");  // kCommands names no other
}

Answer RespSession::segment_ids(std::string_view tag, uint64_t count, IdsForm form,
                                std::string& out) {
  // A large ID.NEXT array is taken into the sliced batch's own vector, written from there
  // a slice at a time when the buffer held it all (resp_batch.cc).
  const bool sliced = form == IdsForm::kArray && may_slice(count);
  if (!sliced) ids_.resize(count);
  const std::span<uint64_t> ids =
      sliced ? ids_batch_.start_taken(count) : std::span<uint64_t>(ids_.data(), count);
  Result<size_t> filled = service_.try_segment(tag, ids);
  if (!filled.ok()) return {put_status(out, filled.status())};
  if (*filled == count) {
    return sliced ? start_batch(/*as_array=*/true) : Answer{put_segment_ids(out, ids, form, tag)};
  }
  if (may_wait_) {  // inside an EXEC job, already off the I/O thread
    const Status made = service_.segment(tag, ids.subspan(*filled));
    if (!made.ok()) return {put_status(out, made)};
    return {put_segment_ids(out, ids, form, tag)};
  }
  // The buffer ran dry: keep what it gave and wait on the store for the rest, off the
  // I/O thread (request_lifecycle.h).
  job_ = wait_for_segment_ids(service_, tag, ids, *filled,
                              [form](std::string& answer, const Status& made,
                                     std::span<const uint64_t> all, std::string_view of) {
                                return made.ok() ? put_segment_ids(answer, all, form, of)
                                                 : put_status(answer, made);
                              });
  return {0, Next::kBlocking};
}

}  // namespace idforge::server::resp
