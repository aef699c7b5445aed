// The JSON bodies of the HTTP routes that are not on a hot path (docs/api.md): decode
// and compose, the status view, the admin API's tags and lease, and the admin request
// bodies. Built with nlohmann::json; text from users or backends that is not valid
// UTF-8 is replaced, never thrown. Pure functions of their arguments: thread-safe as
// far as the IdService methods they call are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idforge/layout.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "server/service/id_service.h"

namespace idforge::server {

// {"id":"...","layout":"twitter","spec":"...","unix_ms":...,"time":"...Z", one key per
// non-time field (as `idforge parse --json` names them), "fields":[...],
// "unused_bits":1,"binary":"0000...","diagram":"..."}.
std::string decode_json(const Layout& layout, const DecodedId& decoded);

// The live status of GET /v1/status.
// /v1/status. Tags and served marks are listed up to segment.tag_detail_limit (with
// their totals beside); `only_tag`, when not empty, lists that tag's only.
std::string status_json(IdService& service, std::string_view only_tag = {});
// The "lease" object of the status, alone (GET /v1/admin/worker).
std::string lease_json(const ServiceStatus& status);

// {"tag":"order","max_id":"2000","step":1000,"serial_template":"","description":""}
std::string tag_json(const TagInfo& tag);
// {"tags":[tag_json...]}
std::string tags_json(const std::vector<TagInfo>& tags);

// The body of POST /v1/admin/tags: {"tag":"order","step":1000,"start":"1",
// "serial_template":"","description":""}; only "tag" is required. Numbers may be JSON
// numbers or decimal strings. InvalidArgument names the bad or unknown key.
Result<TagSpec> parse_tag_spec(std::string_view body);
// The body of PUT /v1/admin/tags/{tag}/step: {"step":5000}.
Result<uint64_t> parse_step_body(std::string_view body);

}  // namespace idforge::server
