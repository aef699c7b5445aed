#include "server/http_batch.h"

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
  BatchKind kind = BatchKind::kSnowflake;
  IdFormat format = IdFormat::kJson;
  ReplyMode mode;
  uint64_t count = 0;
  uint64_t made = 0;
  uint64_t written = 0;
  std::vector<uint64_t> ids;
  std::vector<Uuid> uuids;
  std::vector<Ulid> ulids;
  std::string body;

  std::string_view kind_name() const {
    switch (kind) {
      case BatchKind::kSnowflake:
        return "snowflake";
      case BatchKind::kUuid7:
        return "uuid7";
      case BatchKind::kUlid:
        return "ulid";
    }
    return "";
  }

  // One item, as numeric_ids and text_ids write it.
  void append_item(size_t i) {
    if (format == IdFormat::kJson && i > 0) body.push_back(',');
    if (kind == BatchKind::kSnowflake) {
      if (format == IdFormat::kJson) body.push_back('"');
      append_u64(body, ids[i]);
      if (format == IdFormat::kJson) body.push_back('"');
    } else {
      const std::string text =
          kind == BatchKind::kUuid7 ? uuids[i].to_string() : ulids[i].to_string();
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
    if (made < count) {
      const size_t n = std::min(slice, count - made);
      switch (kind) {
        case BatchKind::kSnowflake: {
          const Status st = service->snowflake(std::span<uint64_t>(ids).subspan(made, n));
          if (!st.ok()) return write_status_error(out, mode, st);
          break;
        }
        case BatchKind::kUuid7:
          service->uuid7(std::span<Uuid>(uuids).subspan(made, n));
          break;
        case BatchKind::kUlid:
          service->ulid(std::span<Ulid>(ulids).subspan(made, n));
          break;
      }
      made += n;
      return 0;
    }
    if (written == 0) {
      open_ids(body, format, kind_name(), {});
      body.reserve(body.size() + count * 40 + 2);
    }
    const size_t n = std::min(slice, count - written);
    for (size_t i = written; i < written + n; ++i) append_item(i);
    written += n;
    if (written < count) return 0;
    close_ids(body, format);
    write_reply(out, mode, 200, content_type(format), body);
    return 200;
  }
};

}  // namespace

RouteOutcome sliced_batch(IdService& service, BatchKind kind, uint64_t count, IdFormat format,
                          const ReplyMode& mode) {
  auto batch = std::make_shared<Batch>();
  batch->service = &service;
  batch->kind = kind;
  batch->format = format;
  batch->mode = mode;
  batch->count = count;
  switch (kind) {
    case BatchKind::kSnowflake:
      batch->ids.resize(count);
      break;
    case BatchKind::kUuid7:
      batch->uuids.resize(count);
      break;
    case BatchKind::kUlid:
      batch->ulids.resize(count);
      break;
  }
  RouteOutcome outcome;
  outcome.slices = [batch](std::string& out) { return batch->step(out); };
  return outcome;
}

}  // namespace idforge::server::http
