#include "server/service/id_service.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>

#include "coord/registry_floor.h"
#include "core/ulid_impl.h"
#include "core/uuid_impl.h"
#include "log/log.h"
#include "server/service/service_health.h"
#include "server/service/service_segments.h"
#include "server/service/service_snowflake.h"
#include "store/mysql/tinyid_tokens.h"
#include "store/store_common.h"
#include "store/store_set.h"
#include "store/zoneinfo.h"

namespace idforge::server {
namespace {

using Steady = std::chrono::steady_clock;

}  // namespace

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

Result<uint64_t> parse_request_count(std::string_view text, uint64_t max_count) {
  if (text.empty()) return uint64_t{1};
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    return Status::OutOfRange(fmt::format("count {} is above the limit of {}", text, max_count));
  }
  if (ec != std::errc() || ptr != end || text.front() == '+') {
    return Status::InvalidArgument(
        fmt::format("count must be a whole number from 1 to {}, got '{}'", max_count, text));
  }
  if (value == 0) {
    return Status::InvalidArgument(fmt::format("count must be from 1 to {}, got 0", max_count));
  }
  if (value > max_count) {
    return Status::OutOfRange(
        fmt::format("count {} is above the limit of {} per request", value, max_count));
  }
  return value;
}

Result<uint64_t> parse_id(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument(fmt::format(
        "ID '{}' is not a decimal number from 0 to 18446744073709551615", text.substr(0, 64)));
  }
  return value;
}

struct IdService::Impl {
  explicit Impl(Clock* clock) : uuid7(clock), ulid(clock) {}

  Steady::time_point started = Steady::now();
  TimeZone zone;
  Uuid7GeneratorImpl uuid7;  // the implementations: no virtual call per batch
  UlidGeneratorImpl ulid;
  // The fleet floor and its registry: the stores' guards point into them.
  coord::RegistryFloor floor;
  // Built in this order and stopped in reverse of what matters: the lease is released
  // before the probers are joined, so a hung store never delays handing the slot back.
  std::unique_ptr<SegmentPart> segments;
  std::unique_ptr<SnowflakePart> snowflake;
  std::unique_ptr<ServiceHealth> health;
  std::unique_ptr<store::TinyidTokens> tinyid_tokens;  // null: no Tinyid tokens configured
};

Status IdService::open_fleet_floor(const ServiceConfig& c, Impl& impl) {
  if (!c.fleet_floor) {
    log::warn("segment.fleet_floor_off",
              {{"message",
                "segment.fleet_floor is false: a store that goes back with its identity (a dump "
                "restored, a tag recreated, max_id lowered) after another node served can make "
                "IDs repeat; each node's own served marks and the identity check remain"}});
    return Status::Ok();
  }
  IDFORGE_ASSIGN_OR_RETURN(impl.floor, coord::open_registry_floor(c.registry_url, c.data_dir));
  if (!impl.floor.floor) {
    log::warn("segment.fleet_floor_none",
              {{"registry", impl.floor.registry->describe()},
               {"message",
                "static: worker ids have no place the fleet shares, so there is no fleet floor: "
                "each node refuses ranges at or below what it served itself, and a store whose "
                "identity changed moves its tags forward by the failover margin, but a store "
                "that goes back with its identity after another node served is not caught "
                "(docs/stores.md, \"The fleet floor\")"}});
    return Status::Ok();
  }
  log::info("segment.fleet_floor", {{"registry", impl.floor.floor->describe()},
                                    {"served_marks_fsync", !impl.floor.on_this_host}});
  return Status::Ok();
}

IdService::IdService(ServiceConfig config) : config_(std::move(config)) {
  if (config_.clock == nullptr) config_.clock = &system_clock();
  impl_ = std::make_unique<Impl>(config_.clock);
}

Result<std::unique_ptr<IdService>> IdService::start(ServiceConfig config) {
  if (config.max_count == 0) return Status::InvalidArgument("max_count must be at least 1");
  if (config.segment_wait_ms < 0) {
    return Status::InvalidArgument("segment wait_ms must not be negative");
  }
  std::unique_ptr<IdService> service(new IdService(std::move(config)));
  const ServiceConfig& c = service->config_;
  Impl& impl = *service->impl_;
  if (!c.serial_zone.empty()) {
    IDFORGE_ASSIGN_OR_RETURN(TimeZone zone, store::load_time_zone(c.serial_zone));
    impl.zone = std::move(zone);
  }
  IDFORGE_RETURN_IF_ERROR(store::ensure_data_dir(c.data_dir));

  // Every range is guarded (store_guard.h): what this node served of each tag is kept
  // in the data directory, and a store whose history changed moves its tags forward.
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<store::ServedMarks> marks,
                           store::ServedMarks::open(store::served_marks_path(c.data_dir)));
  IDFORGE_RETURN_IF_ERROR(open_fleet_floor(c, impl));
  // A floor on this host fsyncs each range's record first: one fsync a range, not two.
  if (impl.floor.floor && impl.floor.on_this_host) marks->set_mark_fsync(false);
  store::StoreSafety safety;
  safety.marks = marks.get();
  safety.fleet = impl.floor.floor.get();
  safety.margin = c.failover_margin;
  safety.max_step = c.max_step;
  safety.allow_unsafe = c.allow_unsafe_store;
  // No safety.log: the guards write their refusals and history changes to the process
  // log, with fields (docs/operations.md, "Logs").
  IDFORGE_ASSIGN_OR_RETURN(std::vector<store::OpenedStore> stores,
                           store::open_stores(c.store_urls, c.data_dir, safety));
  SegmentPartOptions segment_options;
  segment_options.wait_ms = c.segment_wait_ms;
  segment_options.max_step = c.max_step;
  segment_options.slow_ms = c.slow_store_ms;
  segment_options.clock = c.clock;
  impl.segments = SegmentPart::start(std::move(stores), std::move(marks), segment_options);

  IDFORGE_ASSIGN_OR_RETURN(
      std::unique_ptr<SnowflakePart> snowflake,
      SnowflakePart::start(c, c.identity.empty() ? host_name() + ":serve" : c.identity));
  impl.snowflake = std::move(snowflake);
  impl.health = std::make_unique<ServiceHealth>(*impl.snowflake, *impl.segments);
  if (!c.tinyid_tokens_url.empty()) {
    IDFORGE_ASSIGN_OR_RETURN(impl.tinyid_tokens, store::TinyidTokens::open(c.tinyid_tokens_url));
  }
  return service;
}

IdService::~IdService() { stop().ignore_error(); }

Status IdService::stop() {
  // Snowflake first: fencing and releasing the lease must not wait for a store probe.
  Status released = impl_->snowflake ? impl_->snowflake->stop() : Status::Ok();
  if (impl_->segments) impl_->segments->stop();
  return released;
}

Status IdService::snowflake(std::span<uint64_t> out) {
  IDFORGE_RETURN_IF_ERROR(impl_->snowflake->next(out));
  metrics_.record_ids(IdKind::kSnowflake, out.size());
  return Status::Ok();
}

Result<size_t> IdService::try_segment(std::string_view tag, std::span<uint64_t> out) {
  Result<size_t> filled = impl_->segments->try_next(tag, out);
  if (filled.ok() && *filled > 0) metrics_.record_ids(IdKind::kSegment, *filled);
  return filled;
}

Status IdService::segment(std::string_view tag, std::span<uint64_t> out) {
  Status made = impl_->segments->next(tag, out);
  if (made.ok()) metrics_.record_ids(IdKind::kSegment, out.size());
  return made;
}

Result<Segment> IdService::segment_range(std::string_view tag) {
  Result<Segment> got = impl_->segments->range(tag);
  if (got.ok()) metrics_.record_ids(IdKind::kSegment, got->count);
  return got;
}

bool IdService::tinyid_can_visit(std::string_view biz_type, std::string_view token) const {
  return impl_->tinyid_tokens != nullptr && impl_->tinyid_tokens->can_visit(biz_type, token);
}

void IdService::uuid7(std::span<Uuid> out) {
  impl_->uuid7.next_batch(out);
  metrics_.record_ids(IdKind::kUuid7, out.size());
}

void IdService::ulid(std::span<Ulid> out) {
  impl_->ulid.next_batch(out);
  metrics_.record_ids(IdKind::kUlid, out.size());
}

Result<std::string> IdService::serial(std::string_view tag) {
  Result<std::string> made = impl_->segments->serial(tag, store::now_unix_ms(), impl_->zone);
  if (made.ok()) metrics_.record_ids(IdKind::kSerial, 1);
  return made;
}

Result<Layout> IdService::layout_named(std::string_view name) const {
  if (name.empty()) return config_.layout;
  if (Result<Layout> preset = Layout::preset(name); preset.ok()) return preset;
  Result<Layout> custom = Layout::parse(name);
  if (custom.ok()) return custom;
  return Status::InvalidArgument(
      fmt::format("layout '{}' is neither a preset ({}) nor a valid spec: {}", name.substr(0, 200),
                  fmt::join(Layout::preset_names(), ", "), custom.status().message()));
}

Result<TagInfo> IdService::create_tag(const TagSpec& spec) {
  // As `idforge tag create` does: a tag recreated at or below what the fleet took of it
  // starts above that (the guard would refuse those ranges anyway, one by one).
  TagSpec checked = spec;
  if (FleetFloor* floor = impl_->floor.floor.get(); floor != nullptr && spec.start > 0) {
    IDFORGE_ASSIGN_OR_RETURN(uint64_t highest,
                             floor->highest_of_tag(spec.name, impl_->segments->store_count()));
    if (spec.start <= highest) {
      checked.start = highest + 1;
      log::warn("tag.start_moved", {{"tag", spec.name},
                                    {"start", spec.start},
                                    {"moved_to", checked.start},
                                    {"registry", floor->describe()}});
    }
  }
  return impl_->segments->create_tag(checked);
}

Result<std::vector<TagInfo>> IdService::list_tags() { return impl_->segments->list_tags(); }

Result<TagInfo> IdService::set_step(std::string_view tag, uint64_t step) {
  return impl_->segments->set_step(tag, step);
}

ServiceStatus IdService::status() const {
  ServiceStatus s;
  s.layout_label = config_.layout_label;
  s.layout_spec = config_.layout.spec();
  s.policy = std::string(policy_name(config_.policy));
  s.uptime_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - impl_->started).count();
  impl_->snowflake->fill_status(s);
  s.time_left_ms =
      std::max<int64_t>(0, config_.layout.capacity().last_unix_ms - store::now_unix_ms());
  s.stores = impl_->segments->stores();
  s.tags = impl_->segments->tags();
  s.served = impl_->segments->served();
  s.segments_ready = impl_->segments->readiness();
  s.segments_ok = s.segments_ready.ready;
  if (!s.segments_ok) {  // the stores' own errors, as before the per-store probes
    for (const StoreStatus& store : s.stores) {
      if (store.up) continue;
      s.segments_error += (s.segments_error.empty() ? "" : "; ") + store.error;
    }
  }
  return s;
}

bool IdService::ready(std::string* why) const {
  PartReadiness r = readiness(ServicePart::kAll);
  if (why != nullptr) *why = std::move(r.why);
  return r.ready;
}

PartReadiness IdService::readiness(ServicePart part) const {
  return impl_->health->readiness(part);
}

Steady::time_point IdService::lease_keeper_last_round() const {
  return impl_->snowflake->keeper_last_round();
}

}  // namespace idforge::server
