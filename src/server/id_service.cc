#include "server/id_service.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <map>
#include <optional>

#include "coord/held_lease.h"
#include "idforge/serial.h"
#include "idforge/time_format.h"
#include "store/store_set.h"
#include "store/zoneinfo.h"

namespace idforge::server {
namespace {

using Steady = std::chrono::steady_clock;

// How often the maintenance thread renews the Snowflake reservation (requests never
// write the mark themselves), checks the lease and probes the segment store.
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kStoreProbeEvery = std::chrono::seconds(2);
constexpr auto kReacquireBackoff = std::chrono::seconds(1);
// A name no tag can have: probing it costs the store one indexed lookup and answers
// NotFound when the store is up.
constexpr std::string_view kProbeTag = "idforge.probe";

std::string default_identity() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost:serve";
  return std::string(host) + ":serve";
}

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string_view id_kind_name(IdKind kind) {
  switch (kind) {
    case IdKind::kSnowflake:
      return "snowflake";
    case IdKind::kSegment:
      return "segment";
    case IdKind::kUuid7:
      return "uuid7";
    case IdKind::kUlid:
      return "ulid";
    case IdKind::kSerial:
      return "serial";
  }
  return "unknown";
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

// One tag the service has served: its source over the stores and its double buffer.
struct TagEntry {
  store::TagSource source;
  std::unique_ptr<SegmentBuffer> buffer;
  std::optional<SerialTemplate> serial;  // when the tag has a template
};

using TagMap = std::map<std::string, TagEntry*, std::less<>>;

struct IdService::Impl {
  explicit Impl(const ServiceConfig& service_config) : config(service_config) {}

  const ServiceConfig& config;  // the facade's: one copy of the settings
  Steady::time_point started = Steady::now();
  std::string identity;
  TimeZone zone;

  std::vector<store::OpenedStore> stores;  // used under stores_mu (backends block)
  std::mutex stores_mu;

  // The lease and its generator. Leases lost are kept (stopped) with their generators
  // until the end, since a request may still hold the old generator's pointer.
  std::mutex lease_mu;
  std::unique_ptr<coord::HeldLease> lease;
  std::vector<std::unique_ptr<coord::HeldLease>> retired_leases;
  std::atomic<SnowflakeGenerator*> generator{nullptr};
  std::atomic<uint64_t> leases_taken{0};
  std::string reacquire_error;  // under lease_mu

  // Tags: readers load the current map without a lock; a writer copies it. Every map
  // and entry lives until the end, so a reader's pointer never dangles.
  std::atomic<const TagMap*> tags{nullptr};
  std::mutex tags_mu;
  std::vector<std::unique_ptr<TagMap>> maps;
  std::vector<std::unique_ptr<TagEntry>> entries;

  std::atomic<bool> segments_ok{false};
  mutable std::mutex health_mu;
  std::string segments_error;

  Uuid7Generator uuid7;
  UlidGenerator ulid;

  std::mutex run_mu;
  std::condition_variable run_cv;
  bool stopping = false;
  bool renew_wanted = false;  // a request reached the generator's renew point
  std::thread maintainer;

  Status open_lease();
  Result<TagEntry*> entry_for(std::string_view tag);
  TagEntry* find(std::string_view tag) const {
    const TagMap* map = tags.load(std::memory_order_acquire);
    auto it = map->find(tag);
    return it == map->end() ? nullptr : it->second;
  }
  void publish_locked(TagMap next);
  void note_store(const Status& status);
  void maintain();
};

Status IdService::Impl::open_lease() {
  std::string url = config.registry_url;
  if (url.empty()) url = "local:" + config.data_dir + "/workers";
  Result<coord::OpenedRegistry> opened =
      coord::open_worker_registry(url, config.layout, config.layout_label, config.data_dir);
  if (!opened.ok()) return opened.status();
  Result<std::unique_ptr<coord::HeldLease>> held =
      coord::HeldLease::acquire(std::move(opened).value(), identity);
  if (!held.ok()) return held.status();
  SnowflakeOptions options;
  options.layout = config.layout;
  options.policy = config.policy;
  options.max_drift_ms = config.max_drift_ms;
  options.max_wait_ms = config.max_wait_ms;
  // Requests never write the mark (a coordinator round trip on an event loop); the
  // maintenance thread does, at once when a request asks.
  options.store_on_next = false;
  options.reservation_wanted = [this] {
    {
      std::lock_guard run_lock(run_mu);
      renew_wanted = true;
    }
    run_cv.notify_all();
  };
  Result<SnowflakeGenerator*> made = (*held)->make_generator(std::move(options));
  if (!made.ok()) return made.status();
  std::lock_guard lock(lease_mu);
  if (lease) retired_leases.push_back(std::move(lease));
  lease = std::move(held).value();
  generator.store(*made, std::memory_order_release);
  leases_taken.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

void IdService::Impl::publish_locked(TagMap next) {
  maps.push_back(std::make_unique<TagMap>(std::move(next)));
  tags.store(maps.back().get(), std::memory_order_release);
}

void IdService::Impl::note_store(const Status& status) {
  // NotFound and InvalidArgument are answers: the store is up.
  const bool up = status.ok() || status.code() == StatusCode::kNotFound ||
                  status.code() == StatusCode::kInvalidArgument ||
                  status.code() == StatusCode::kAlreadyExists;
  segments_ok.store(up, std::memory_order_release);
  std::lock_guard lock(health_mu);
  segments_error = up ? "" : status.message();
}

Result<TagEntry*> IdService::Impl::entry_for(std::string_view tag) {
  if (TagEntry* found = find(tag)) return found;
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  std::lock_guard stores_lock(stores_mu);
  if (TagEntry* found = find(tag)) return found;  // made while we waited
  const std::string name(tag);
  Result<store::TagSource> source = store::tag_source(stores, name);
  note_store(source.status());
  if (!source.ok()) return source.status();

  auto entry = std::make_unique<TagEntry>();
  entry->source = std::move(source).value();
  SegmentBufferOptions options;
  options.tag = name;
  options.min_step = entry->source.step;
  options.max_step = std::max(entry->source.step, config.max_step);
  options.wait_ms = config.segment_wait_ms;
  Result<std::unique_ptr<SegmentBuffer>> buffer =
      SegmentBuffer::create(entry->source.source, options);
  if (!buffer.ok()) return buffer.status();
  entry->buffer = std::move(buffer).value();
  for (store::OpenedStore& o : stores) {
    if (!o.store) continue;
    Result<TagInfo> info = o.store->get_tag(name);
    if (!info.ok() || info->serial_template.empty()) continue;
    Result<SerialTemplate> parsed = SerialTemplate::parse(info->serial_template);
    if (parsed.ok()) entry->serial = std::move(parsed).value();
    break;
  }

  std::lock_guard lock(tags_mu);
  TagMap next = *tags.load(std::memory_order_acquire);
  next[name] = entry.get();
  entries.push_back(std::move(entry));
  publish_locked(std::move(next));
  return entries.back().get();
}

void IdService::Impl::maintain() {
  auto next_probe = Steady::now();
  auto next_reacquire = Steady::now();
  std::unique_lock lock(run_mu);
  while (!stopping) {
    run_cv.wait_for(lock, kTick, [this] { return stopping || renew_wanted; });
    if (stopping) break;
    renew_wanted = false;
    lock.unlock();

    SnowflakeGenerator* gen = generator.load(std::memory_order_acquire);
    coord::LeaseState state = coord::LeaseState::kHeld;
    {
      std::lock_guard lease_lock(lease_mu);
      if (lease) state = lease->keeper().state();
    }
    if (state == coord::LeaseState::kHeld && gen != nullptr) {
      // Errors here reach callers through next() itself; nothing to add.
      gen->renew_reservation().ignore_error();
    }
    // A lost lease may now be someone else's slot: this node stays fenced on it and
    // asks for a new one (possibly another slot) in the background.
    if (state == coord::LeaseState::kLost && Steady::now() >= next_reacquire) {
      Status taken = open_lease();
      std::lock_guard lease_lock(lease_mu);
      reacquire_error = taken.ok() ? "" : taken.message();
      next_reacquire = Steady::now() + kReacquireBackoff;
    }
    if (Steady::now() >= next_probe) {
      std::unique_lock stores_lock(stores_mu);
      for (store::OpenedStore& o : stores) {
        if (!o.store) continue;
        note_store(o.store->get_tag(kProbeTag).status());
        break;
      }
      next_probe = Steady::now() + kStoreProbeEvery;
    }
    lock.lock();
  }
}

IdService::IdService(ServiceConfig config)
    : config_(std::move(config)), impl_(std::make_unique<Impl>(config_)) {}

Result<std::unique_ptr<IdService>> IdService::start(ServiceConfig config) {
  if (config.max_count == 0) return Status::InvalidArgument("max_count must be at least 1");
  if (config.segment_wait_ms < 0) {
    return Status::InvalidArgument("segment wait_ms must not be negative");
  }
  std::unique_ptr<IdService> service(new IdService(std::move(config)));
  Impl& impl = *service->impl_;
  impl.identity = impl.config.identity.empty() ? default_identity() : impl.config.identity;
  if (!impl.config.serial_zone.empty()) {
    Result<TimeZone> zone = store::load_time_zone(impl.config.serial_zone);
    if (!zone.ok()) return zone.status();
    impl.zone = std::move(zone).value();
  }
  IDFORGE_RETURN_IF_ERROR(store::ensure_data_dir(impl.config.data_dir));

  Result<std::vector<store::OpenedStore>> stores =
      store::open_stores(impl.config.store_urls, impl.config.data_dir);
  if (!stores.ok()) return stores.status();
  impl.stores = std::move(stores).value();
  Status first = Status::Unavailable("no segment store could be opened");
  for (store::OpenedStore& o : impl.stores) {
    first = o.store ? o.store->get_tag(kProbeTag).status() : o.error;
    if (o.store) break;
  }
  // A store that is down at start is not fatal: Snowflake, UUID and ULID still work,
  // /readyz says why segments do not, and the store is probed again.
  impl.note_store(first);
  impl.publish_locked(TagMap{});

  IDFORGE_RETURN_IF_ERROR(impl.open_lease());
  impl.maintainer = std::thread([&impl] { impl.maintain(); });
  return service;
}

IdService::~IdService() { stop().ignore_error(); }

Status IdService::stop() {
  {
    std::lock_guard lock(impl_->run_mu);
    if (impl_->stopping) return Status::Ok();
    impl_->stopping = true;
  }
  impl_->run_cv.notify_all();
  if (impl_->maintainer.joinable()) impl_->maintainer.join();
  std::lock_guard lease_lock(impl_->lease_mu);
  Status released = impl_->lease ? impl_->lease->release() : Status::Ok();
  for (auto& old : impl_->retired_leases) old->release().ignore_error();
  return released;
}

Status IdService::snowflake(std::span<uint64_t> out) {
  SnowflakeGenerator* gen = impl_->generator.load(std::memory_order_acquire);
  IDFORGE_RETURN_IF_ERROR(gen->next_batch(out));
  metrics_.record_ids(IdKind::kSnowflake, out.size());
  return Status::Ok();
}

Result<size_t> IdService::try_segment(std::string_view tag, std::span<uint64_t> out) {
  TagEntry* entry = impl_->find(tag);
  if (entry == nullptr) {
    IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
    return size_t{0};  // first use of the tag: the store must be asked
  }
  Result<size_t> filled = entry->buffer->try_next_batch(out);
  if (filled.ok() && *filled > 0) metrics_.record_ids(IdKind::kSegment, *filled);
  return filled;
}

Status IdService::segment(std::string_view tag, std::span<uint64_t> out) {
  Result<TagEntry*> entry = impl_->entry_for(tag);
  if (!entry.ok()) return entry.status();
  Status made = (*entry)->buffer->next_batch(out);
  if (made.ok()) {
    metrics_.record_ids(IdKind::kSegment, out.size());
  } else if (made.code() == StatusCode::kUnavailable) {
    impl_->note_store(made);
  }
  return made;
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
  Result<TagEntry*> entry = impl_->entry_for(tag);
  if (!entry.ok()) return entry.status();
  if (!(*entry)->serial) {
    return Status::InvalidArgument(
        fmt::format("tag '{}' has no serial template; create it with "
                    "`idforge tag create {} --template 'PREFIX{{yyyyMMdd}}{{seq:08}}'`",
                    tag, tag));
  }
  Result<uint64_t> seq = (*entry)->buffer->next();
  if (!seq.ok()) return seq.status();
  metrics_.record_ids(IdKind::kSerial, 1);
  return (*entry)->serial->format(*seq, now_unix_ms(), impl_->zone);
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
  std::lock_guard lock(impl_->stores_mu);
  Status made = Status::Ok();
  for (store::OpenedStore& o : impl_->stores) {
    if (!o.store) return store::from_store(o.error, o, impl_->stores.size());
    made = o.store->create_tag(spec);
    impl_->note_store(made);
    if (!made.ok()) return store::from_store(made, o, impl_->stores.size());
  }
  return impl_->stores.front().store->get_tag(spec.name);
}

Result<std::vector<TagInfo>> IdService::list_tags() {
  std::lock_guard lock(impl_->stores_mu);
  Status last = Status::Unavailable("no segment store could be reached");
  for (store::OpenedStore& o : impl_->stores) {
    if (!o.store) continue;
    Result<std::vector<TagInfo>> tags = o.store->list_tags();
    impl_->note_store(tags.status());
    if (tags.ok()) return tags;
    last = store::from_store(tags.status(), o, impl_->stores.size());
  }
  return last;
}

Result<TagInfo> IdService::set_step(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  {
    std::lock_guard lock(impl_->stores_mu);
    for (store::OpenedStore& o : impl_->stores) {
      if (!o.store) return store::from_store(o.error, o, impl_->stores.size());
      Status set = o.store->set_step(tag, step);
      impl_->note_store(set);
      if (!set.ok()) return store::from_store(set, o, impl_->stores.size());
    }
  }
  // The tag's buffer was sized for the old step: drop it from the map (requests in
  // flight finish on it) so the next request builds one with the new step.
  {
    std::lock_guard lock(impl_->tags_mu);
    TagMap next = *impl_->tags.load(std::memory_order_acquire);
    if (auto it = next.find(tag); it != next.end()) {
      next.erase(it);
      impl_->publish_locked(std::move(next));
    }
  }
  std::lock_guard lock(impl_->stores_mu);
  return impl_->stores.front().store->get_tag(tag);
}

ServiceStatus IdService::status() const {
  ServiceStatus s;
  s.layout_label = config_.layout_label;
  s.layout_spec = config_.layout.spec();
  s.policy = std::string(policy_name(config_.policy));
  s.uptime_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - impl_->started).count();
  {
    std::lock_guard lock(impl_->lease_mu);
    if (impl_->lease) {
      s.has_lease = true;
      s.lease = impl_->lease->lease();
      s.keeper = impl_->lease->keeper().status();
      if (s.keeper.last_error.empty()) s.keeper.last_error = impl_->reacquire_error;
      const bool live = s.keeper.state == coord::LeaseState::kHeld ||
                        s.keeper.state == coord::LeaseState::kWaiting ||
                        s.keeper.state == coord::LeaseState::kOverdue;
      s.lease_seconds_left =
          live ? std::max<double>(
                     0, static_cast<double>(s.lease.ttl_ms - s.keeper.since_renew_ms) / 1000.0)
               : 0;
    }
  }
  s.leases_taken = impl_->leases_taken.load(std::memory_order_relaxed);
  if (SnowflakeGenerator* gen = impl_->generator.load(std::memory_order_acquire)) {
    s.fenced = gen->fenced();
    s.clock_offset_ms = gen->drift_ms();
    s.counters = gen->counters();
  }
  s.time_left_ms = std::max<int64_t>(0, config_.layout.capacity().last_unix_ms - now_unix_ms());
  s.segments_ok = impl_->segments_ok.load(std::memory_order_acquire);
  {
    std::lock_guard lock(impl_->health_mu);
    s.segments_error = impl_->segments_error;
  }
  const TagMap* map = impl_->tags.load(std::memory_order_acquire);
  for (const auto& [name, entry] : *map) s.tags.push_back({name, entry->buffer->stats()});
  return s;
}

bool IdService::ready(std::string* why) const {
  auto say = [why](std::string text) {
    if (why != nullptr) *why = std::move(text);
    return false;
  };
  SnowflakeGenerator* gen = impl_->generator.load(std::memory_order_acquire);
  if (gen == nullptr) return say("no worker-id lease");
  {
    std::lock_guard lock(impl_->lease_mu);
    if (impl_->lease) {
      const coord::KeeperStatus keeper = impl_->lease->keeper().status();
      if (keeper.state != coord::LeaseState::kHeld) {
        std::string text = fmt::format("worker-id lease is {}", lease_state_name(keeper.state));
        if (!keeper.last_error.empty()) text += ": " + keeper.last_error;
        return say(std::move(text));
      }
    }
  }
  if (gen->fenced()) return say("the Snowflake generator is fenced");
  if (!impl_->segments_ok.load(std::memory_order_acquire)) {
    std::lock_guard lock(impl_->health_mu);
    return say("segment store unavailable: " + impl_->segments_error);
  }
  if (why != nullptr) why->clear();
  return true;
}

}  // namespace idforge::server
