#include "server/http/http_batch.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "idforge/ulid.h"
#include "idforge/uuid.h"

namespace idforge::server::http {
namespace {

// The batch between two slices; shared by copies of the outcome's std::function.
struct Batch {
  IdService* service = nullptr;
  IdFormat format = IdFormat::kJson;
  ReplyMode mode;
  IdBatch ids;
  std::string tag;  // of a segment batch
  uint64_t written = 0;
  std::string body;

  std::string_view kind_name() const {
    switch (ids.kind()) {
      case BatchKind::kSnowflake:
        return "snowflake";
      case BatchKind::kUuid7:
        return "uuid7";
      case BatchKind::kUlid:
        return "ulid";
      case BatchKind::kSegment:
        return "segment";
    }
    return "";
  }

  // One item, as numeric_ids and text_ids write it.
  void append_item(size_t i) {
    if (format == IdFormat::kJson && i > 0) body.push_back(',');
    if (ids.kind() == BatchKind::kSnowflake || ids.kind() == BatchKind::kSegment) {
      if (format == IdFormat::kJson) body.push_back('"');
      append_u64(body, ids.id(i));
      if (format == IdFormat::kJson) body.push_back('"');
    } else {
      const std::string text =
          ids.kind() == BatchKind::kUuid7 ? ids.uuid(i).to_string() : ids.ulid(i).to_string();
      if (format == IdFormat::kJson) {
        append_json_string(body, text);
      } else {
        body.append(text);
      }
    }
    if (format == IdFormat::kText) body.push_back('\n');
  }

  int step(std::string& out) {
    const uint64_t slice = std::max<uint64_t>(1, service->config().batch_slice);
    if (!ids.made_all()) {
      const Status made = ids.make_slice(*service, slice);
      return made.ok() ? 0 : write_status_error(out, mode, made);
    }
    if (written == 0) {
      open_ids(body, format, kind_name(), tag);
      body.reserve(body.size() + ids.count() * 40 + 2);
    }
    const size_t n = std::min(slice, ids.count() - written);
    for (size_t i = written; i < written + n; ++i) append_item(i);
    written += n;
    if (written < ids.count()) return 0;
    close_ids(body, format);
    write_reply(out, mode, 200, content_type(format), body);
    return 200;
  }
};

std::shared_ptr<Batch> start_batch(IdService& service, IdFormat format, const ReplyMode& mode) {
  auto batch = std::make_shared<Batch>();
  batch->service = &service;
  batch->format = format;
  batch->mode = mode;
  return batch;
}

RouteOutcome outcome_of(std::shared_ptr<Batch> batch) {
  RouteOutcome outcome;
  outcome.slices = [batch = std::move(batch)](std::string& out) { return batch->step(out); };
  return outcome;
}

}  // namespace

RouteOutcome sliced_batch(IdService& service, BatchKind kind, uint64_t count, IdFormat format,
                          const ReplyMode& mode) {
  auto batch = start_batch(service, format, mode);
  batch->ids.start(kind, count);
  return outcome_of(std::move(batch));
}

RouteOutcome sliced_segment_batch(IdService& service, std::string_view tag,
                                  std::span<const uint64_t> ids, IdFormat format,
                                  const ReplyMode& mode) {
  auto batch = start_batch(service, format, mode);
  batch->tag = tag;
  const std::span<uint64_t> taken = batch->ids.start_taken(ids.size());
  std::copy(ids.begin(), ids.end(), taken.begin());
  return outcome_of(std::move(batch));
}

}  // namespace idforge::server::http
