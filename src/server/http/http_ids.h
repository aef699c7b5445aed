// The bodies of the ID routes (/v1/snowflake, /v1/segment/TAG, ...), written by hand:
// the hot path. {"kind":...,"ids":["1","2"]} as JSON, one ID a line as text, or the
// bare number (Leaf's routes). Internal to the HTTP front end (http_routes.cc,
// http_batch.cc).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/json_string.h"
#include "server/http/http_reply.h"

namespace idforge::server::http {

enum class IdFormat { kJson, kText, kBare };

inline std::string_view content_type(IdFormat format) {
  return format == IdFormat::kJson ? kJsonType : kTextType;
}

inline void append_u64(std::string& out, uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;  // 24 bytes hold any uint64_t
  out.append(digits, static_cast<size_t>(end - digits));
}

inline void open_ids(std::string& body, IdFormat format, std::string_view kind,
                     std::string_view tag) {
  body.clear();
  if (format != IdFormat::kJson) return;
  body.append(R"({"kind":")");
  body.append(kind);
  body.push_back('"');
  if (!tag.empty()) {
    body.append(R"(,"tag":)");
    append_json_string(body, tag);
  }
  body.append(R"(,"ids":[)");
}

inline void close_ids(std::string& body, IdFormat format) {
  if (format == IdFormat::kJson) body.append("]}");
}

// {"kind":...,"ids":["1","2"]}, or one per line, or (Leaf) the bare number.
inline void numeric_ids(std::string& body, IdFormat format, std::string_view kind,
                        std::string_view tag, std::span<const uint64_t> ids) {
  open_ids(body, format, kind, tag);
  body.reserve(body.size() + ids.size() * 23 + 2);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (format == IdFormat::kJson) {
      if (i > 0) body.push_back(',');
      body.push_back('"');
      append_u64(body, ids[i]);
      body.push_back('"');
    } else {
      append_u64(body, ids[i]);
      if (format == IdFormat::kText) body.push_back('\n');
    }
  }
  close_ids(body, format);
}

// The same for IDs that are text; `item(i)` returns the i-th.
template <typename Item>
void text_ids(std::string& body, IdFormat format, std::string_view kind, std::string_view tag,
              size_t count, Item&& item) {
  open_ids(body, format, kind, tag);
  for (size_t i = 0; i < count; ++i) {
    if (format == IdFormat::kJson) {
      if (i > 0) body.push_back(',');
      append_json_string(body, item(i));
    } else {
      body.append(item(i));
      body.push_back('\n');
    }
  }
  close_ids(body, format);
}

}  // namespace idforge::server::http
