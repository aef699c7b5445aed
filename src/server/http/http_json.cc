#include "server/http/http_json.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "core/bit_diagram.h"
#include "core/parse_u64.h"
#include "core/quote.h"
#include "idforge/time_format.h"

#ifndef IDFORGE_VERSION
#define IDFORGE_VERSION "unknown"
#endif

namespace idforge::server {
namespace {

using Json = nlohmann::ordered_json;

// Never throws for text that is not UTF-8 (a backend's error, a user's tag).
std::string dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `idforge parse --json` prefixes a field named like one of its own keys; the server
// does the same, and also for the keys only the server adds.
std::string field_key(const std::string& name) {
  for (std::string_view reserved :
       {"id", "layout", "unix_ms", "time", "spec", "fields", "unused_bits", "binary", "diagram"}) {
    if (name == reserved) return "field_" + name;
  }
  return name;
}

Json lease_object(const ServiceStatus& s) {
  Json lease;
  lease["held"] = s.has_lease;
  lease["state"] = s.has_lease ? std::string(lease_state_name(s.keeper.state)) : "none";
  lease["slot"] = s.lease.slot;
  lease["datacenter"] = s.lease.datacenter;
  lease["worker"] = s.lease.worker;
  lease["ttl_ms"] = s.lease.ttl_ms;
  lease["seconds_left"] = s.lease_seconds_left;
  lease["fence_after_ms"] = s.keeper.fence_after_ms;
  lease["renewals"] = s.keeper.renewals;
  lease["failures"] = s.keeper.failures;
  lease["last_error"] = s.keeper.last_error;
  lease["leases_taken"] = s.leases_taken;
  return lease;
}

Json tag_object(const TagInfo& tag) {
  Json json;
  json["tag"] = tag.name;
  json["max_id"] = std::to_string(tag.max_id);
  json["step"] = tag.step;
  json["serial_template"] = tag.serial_template;
  json["description"] = tag.description;
  return json;
}

Result<Json> parse_object(std::string_view body, std::string_view example) {
  Json json = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Status::InvalidArgument("the request body must be a JSON object like " +
                                   std::string(example));
  }
  return json;
}

// A JSON number or a decimal string ("start": "1" as docs/api.md writes it).
Result<uint64_t> json_u64(const Json& value, std::string_view key) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_string()) return parse_u64(value.get_ref<const std::string&>(), key);
  return Status::InvalidArgument("\"" + std::string(key) +
                                 "\" must be a whole number from 0 to 18446744073709551615");
}

Result<std::string> json_string(const Json& value, std::string_view key) {
  if (value.is_string()) return value.get<std::string>();
  return Status::InvalidArgument("\"" + std::string(key) + "\" must be a string");
}

}  // namespace

std::string decode_json(const Layout& layout, const DecodedId& decoded) {
  Json json;
  json["id"] = std::to_string(decoded.id);
  json["layout"] = layout.name();
  json["spec"] = layout.spec();
  json["unix_ms"] = decoded.unix_ms;
  json["time"] = format_iso8601_utc(decoded.unix_ms);
  for (const FieldValue& field : decoded.fields) {
    if (field.role == FieldRole::kTime) continue;
    json[field_key(field.name)] = field.value;
  }
  Json fields = Json::array();
  for (const FieldValue& field : decoded.fields) {
    Json item;
    item["name"] = field.name;
    item["role"] = field_role_name(field.role);
    item["bits"] = field.bits;
    item["shift"] = field.shift;
    item["value"] = std::to_string(field.value);
    fields.push_back(std::move(item));
  }
  json["fields"] = std::move(fields);
  json["unused_bits"] = 64 - layout.total_bits();
  std::string binary(64, '0');
  for (int bit = 0; bit < 64; ++bit) {
    if ((decoded.id >> bit) & 1u) binary[static_cast<size_t>(63 - bit)] = '1';
  }
  json["binary"] = std::move(binary);
  json["diagram"] = bit_diagram(layout, decoded.id);
  return dump(json);
}

std::string lease_json(const ServiceStatus& status) { return dump(lease_object(status)); }

std::string status_json(IdService& service, std::string_view only_tag) {
  const ServiceStatus s = service.status();
  // segment.tag_detail_limit bounds the lists, unless one tag is asked for.
  const size_t limit =
      only_tag.empty() ? service.config().tag_detail_limit : std::numeric_limits<size_t>::max();
  auto shown = [&](std::string_view tag, size_t* matching) {
    if (!only_tag.empty() && tag != only_tag) return false;
    return (*matching)++ < limit;
  };
  const Metrics& metrics = service.metrics();
  Json json;
  json["version"] = IDFORGE_VERSION;
  json["uptime_ms"] = s.uptime_ms;
  json["layout"] = {{"name", s.layout_label}, {"spec", s.layout_spec}};
  json["policy"] = s.policy;
  json["lease"] = lease_object(s);
  json["clock"] = {{"offset_ms", s.clock_offset_ms},    {"borrowed_ms", s.counters.borrowed_ms},
                   {"rollbacks", s.counters.rollbacks}, {"jumps", s.counters.clock_jumps},
                   {"waited_ms", s.counters.waited_ms}, {"time_left_ms", s.time_left_ms}};
  json["clock"]["reserved_ahead_ms"] = s.reserved_ahead_ms;
  json["clock"]["reservation_error"] = s.reservation_error;
  json["fenced"] = s.fenced;
  Json tags = Json::array();
  size_t tags_total = 0;
  for (const TagStatus& tag : s.tags) {
    if (!shown(tag.tag, &tags_total)) continue;
    Json item;
    item["tag"] = tag.tag;
    item["step"] = tag.stats.step;
    item["current"] = {{"first", std::to_string(tag.stats.current_first)},
                       {"count", tag.stats.current_count},
                       {"used", tag.stats.current_used}};
    item["next_ready"] = tag.stats.next_ready;
    item["fetching"] = tag.stats.fetching;
    item["fetches"] = tag.stats.fetches;
    item["last_fetch_ms"] = tag.stats.last_fetch_ms;
    item["last_error"] = tag.stats.last_error;
    tags.push_back(std::move(item));
  }
  Json stores = Json::array();
  for (const StoreStatus& store : s.stores) {
    stores.push_back({{"store", store.store},
                      {"up", store.up},
                      {"error", store.error},
                      {"probed_ms_ago", store.probed_ms_ago},
                      {"probing_ms", store.probing ? store.probing_ms : 0},
                      {"guard",
                       {{"place", store.guard.place},
                        {"identity", store.guard.identity},
                        {"problem", store.guard.problem},
                        {"refused_ranges", store.guard.refused_ranges},
                        {"fleet_refused_ranges", store.guard.fleet_refused_ranges},
                        {"fleet_unrecorded_ranges", store.guard.fleet_unrecorded_ranges},
                        {"foreign_ranges", store.guard.foreign_ranges},
                        {"identity_changes", store.guard.identity_changes},
                        {"identity_changes_seen", store.guard.identity_changes_seen}}}});
  }
  // Strings, like IDs everywhere in our JSON: JavaScript loses integers above 2^53.
  Json served = Json::array();
  size_t served_total = 0;
  for (const auto& m : s.served) {
    if (!shown(m.tag, &served_total)) continue;
    served.push_back({{"tag", m.tag}, {"place", m.place}, {"highest", std::to_string(m.highest)}});
  }
  json["served"] = std::move(served);
  json["served_total"] = served_total;
  json["segments"] = {{"ok", s.segments_ok},
                      {"error", s.segments_error},
                      {"tags", std::move(tags)},
                      {"tags_total", tags_total},
                      {"stores", std::move(stores)}};
  auto part = [](const PartReadiness& r) { return Json{{"ready", r.ready}, {"why", r.why}}; };
  json["ready"] = {{"snowflake", part(s.snowflake_ready)}, {"segments", part(s.segments_ready)}};
  json["ids"] = {{"snowflake", metrics.ids(IdKind::kSnowflake)},
                 {"segment", metrics.ids(IdKind::kSegment)},
                 {"uuid7", metrics.ids(IdKind::kUuid7)},
                 {"ulid", metrics.ids(IdKind::kUlid)},
                 {"serial", metrics.ids(IdKind::kSerial)}};
  json["requests"] = {{"total", metrics.total_requests()}};
  return dump(json);
}

std::string tag_json(const TagInfo& tag) { return dump(tag_object(tag)); }

std::string tags_json(const std::vector<TagInfo>& tags) {
  Json list = Json::array();
  for (const TagInfo& tag : tags) list.push_back(tag_object(tag));
  Json json;
  json["tags"] = std::move(list);
  return dump(json);
}

Result<TagSpec> parse_tag_spec(std::string_view body) {
  IDFORGE_ASSIGN_OR_RETURN(Json json, parse_object(body, R"({"tag":"order","step":1000})"));
  TagSpec spec;
  bool has_tag = false;
  for (const auto& [key, value] : json.items()) {
    if (key == "tag") {
      IDFORGE_ASSIGN_OR_RETURN(std::string name, json_string(value, key));
      spec.name = std::move(name);
      has_tag = true;
    } else if (key == "step" || key == "start") {
      IDFORGE_ASSIGN_OR_RETURN(uint64_t number, json_u64(value, key));
      (key == "step" ? spec.step : spec.start) = number;
    } else if (key == "serial_template" || key == "description") {
      IDFORGE_ASSIGN_OR_RETURN(std::string text, json_string(value, key));
      (key == "description" ? spec.description : spec.serial_template) = std::move(text);
    } else {
      return Status::InvalidArgument(
          "unknown key " + quote_text(key, '"') +
          " in the tag; known: tag, step, start, serial_template, description");
    }
  }
  if (!has_tag) return Status::InvalidArgument(R"(the body needs "tag", the tag's name)");
  return spec;
}

Result<uint64_t> parse_step_body(std::string_view body) {
  IDFORGE_ASSIGN_OR_RETURN(Json json, parse_object(body, R"({"step":5000})"));
  if (json.size() != 1 || !json.contains("step")) {
    return Status::InvalidArgument(R"(the body must be {"step":N} and nothing else)");
  }
  return json_u64(json["step"], "step");
}

}  // namespace idforge::server
