#include "server/service/service_segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/now_ms.h"
#include "core/thread_name.h"
#include "log/log.h"
#include "url/url_options.h"

namespace idforge::server {
namespace {

using Steady = std::chrono::steady_clock;

// A name no tag can have: probing it costs the store one indexed lookup and answers
// NotFound when the store is up.
constexpr std::string_view kProbeTag = "idforge.probe";

// NotFound, InvalidArgument and AlreadyExists are answers: the store is up.
bool store_answered(const Status& status) {
  return status.ok() || status.code() == StatusCode::kNotFound ||
         status.code() == StatusCode::kInvalidArgument ||
         status.code() == StatusCode::kAlreadyExists;
}

// A tag's source, timed: every range fetched is logged (docs/operations.md, "Logs"), at
// debug, or at info when it took slow_ms or more, so a busy tag does not fill the log;
// failures are logged once per run and window.
class TimedSource final : public RangeSource {
 public:
  TimedSource(RangeSource* inner, int64_t slow_ms) : inner_(inner), slow_ms_(slow_ms) {}

  Result<Segment> allocate(std::string_view tag, uint64_t step) override {
    const int64_t start = steady_now_ms();
    Result<Segment> got = inner_->allocate(tag, step);
    const int64_t took = steady_now_ms() - start;
    if (!got.ok()) {
      failures_.fail(log::Level::kWarn, "segment.fetch_failed",
                     {{"tag", tag}, {"took_ms", took}, {"error", got.status().message()}});
      return got;
    }
    failures_.recover(log::Level::kInfo, "segment.fetch_recovered", {{"tag", tag}});
    const bool slow = took >= slow_ms_;
    log::write(slow ? log::Level::kInfo : log::Level::kDebug, "segment.fetched",
               {{"tag", tag},
                {"first", got->first},
                {"count", got->count},
                {"took_ms", took},
                {"slow", slow}});
    return got;
  }

 private:
  RangeSource* const inner_;
  const int64_t slow_ms_;
  log::RepeatLimiter failures_;
};

}  // namespace

SegmentPart::SegmentPart(std::vector<store::OpenedStore> stores,
                         std::unique_ptr<store::ServedMarks> marks, SegmentPartOptions options)
    : marks_(std::move(marks)), stores_(std::move(stores)), options_(options) {
  for (size_t i = 0; i < stores_.size(); ++i) health_.push_back(std::make_unique<StoreHealth>());
}

std::unique_ptr<SegmentPart> SegmentPart::start(std::vector<store::OpenedStore> stores,
                                                std::unique_ptr<store::ServedMarks> marks,
                                                SegmentPartOptions options) {
  std::unique_ptr<SegmentPart> part(new SegmentPart(std::move(stores), std::move(marks), options));
  // The first probes before the service answers, so /readyz is right from the start.
  // A store that is down is not fatal: Snowflake, UUID and ULID still work, /readyz says
  // why segments do not, and the store is probed again.
  for (size_t i = 0; i < part->stores_.size(); ++i) part->probe_store(i);
  for (size_t i = 0; i < part->stores_.size(); ++i) {
    part->probers_.emplace_back([p = part.get(), i] {
      name_this_thread("idforge-probe-" + std::to_string(i));
      p->prober(i);
    });
  }
  return part;
}

SegmentPart::~SegmentPart() { stop(); }

void SegmentPart::stop() {
  {
    MutexLock lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
  for (std::thread& t : probers_) {
    if (t.joinable()) t.join();
  }
}

// --- stores and their health ---

void SegmentPart::probe_store(size_t index) {
  StoreHealth& h = *health_[index];
  const store::OpenedStore& o = stores_[index];
  const int64_t started = steady_now_ms();
  h.probing_since_ms.store(started, std::memory_order_release);
  Status answer = o.store ? o.store->get_tag(kProbeTag).status() : o.error;
  const int64_t took = steady_now_ms() - started;
  // A store that answers is also asked which history it is (the failover guard moves
  // every tag forward when it changed) and whether it is still safe to take ranges from.
  if (store_answered(answer) && o.guard) {
    if (Status checked = o.guard->check(); !checked.ok()) {
      answer = Status::Unavailable(checked.message());
    }
  }
  h.probing_since_ms.store(0, std::memory_order_release);
  note_store(index, answer);
  // Slow counts only for a store that answered: one that did not is down, not slow.
  if (!store_answered(answer)) return;
  if (took >= options_.slow_ms) {
    h.slow.fail(
        log::Level::kWarn, "store.slow",
        {{"store", store_log_name(index)}, {"took_ms", took}, {"slow_store_ms", options_.slow_ms}});
  } else {
    h.slow.recover(log::Level::kInfo, "store.fast",
                   {{"store", store_log_name(index)}, {"took_ms", took}});
  }
}

void SegmentPart::prober(size_t index) {
  uint64_t seen_round = 0;
  {
    MutexLock lock(run_mu_);
    seen_round = probe_round_;
  }
  while (true) {
    {
      MutexLock lock(run_mu_);
      const auto until = Steady::now() + options_.probe_every;
      while (!stopping_ && probe_round_ == seen_round && lock.wait_until(run_cv_, until)) {
      }
      if (stopping_) return;
      seen_round = probe_round_;
    }
    probe_store(index);
  }
}

void SegmentPart::probe_soon() {
  {
    MutexLock lock(run_mu_);
    ++probe_round_;
  }
  run_cv_.notify_all();
}

void SegmentPart::note_store(size_t index, const Status& status) {
  StoreHealth& h = *health_[index];
  const bool up = store_answered(status);
  std::string error;
  {
    MutexLock lock(h.mu);
    h.up.store(up, std::memory_order_release);
    h.error = up ? "" : store::from_store(status, stores_[index], stores_.size()).message();
    h.probed_at_ms = steady_now_ms();
    error = h.error;
  }
  // Once per change of state, repeats counted (log/repeats.h); outside h.mu.
  if (up) {
    h.down.recover(log::Level::kInfo, "store.up", {{"store", store_log_name(index)}});
  } else {
    h.down.fail(log::Level::kWarn, "store.down",
                {{"store", store_log_name(index)}, {"error", error}});
  }
}

void SegmentPart::note_request(const Status& status) {
  if (!store_answered(status)) probe_soon();
}

std::string SegmentPart::store_name(size_t index) const {
  const store::OpenedStore& o = stores_[index];
  return o.store ? o.store->describe() : o.url;
}

std::string SegmentPart::store_log_name(size_t index) const {
  const store::OpenedStore& o = stores_[index];
  return o.store ? o.store->describe() : redact_url(o.url);
}

bool SegmentPart::store_up(size_t index, int64_t now_ms, std::string* why) const {
  const StoreHealth& h = *health_[index];
  const int64_t since = h.probing_since_ms.load(std::memory_order_acquire);
  if (since != 0 && now_ms - since >= options_.probe_stuck_after.count()) {
    *why = fmt::format("{}{} has not answered a probe for {} ms", *why, store_name(index),
                       now_ms - since);
    return false;
  }
  if (h.up.load(std::memory_order_acquire)) return true;
  MutexLock lock(h.mu);
  *why += h.error;
  return false;
}

std::vector<StoreStatus> SegmentPart::stores() const {
  std::vector<StoreStatus> out;
  const int64_t now = steady_now_ms();
  for (size_t i = 0; i < stores_.size(); ++i) {
    const StoreHealth& h = *health_[i];
    StoreStatus s;
    s.store = store_name(i);
    s.up = store_up(i, now, &s.error);
    if (const int64_t since = h.probing_since_ms.load(std::memory_order_acquire); since != 0) {
      s.probing = true;
      s.probing_ms = now - since;
    }
    if (stores_[i].guard) s.guard = stores_[i].guard->status();
    MutexLock lock(h.mu);
    s.probed_ms_ago = h.probed_at_ms < 0 ? -1 : now - h.probed_at_ms;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ServedMark> SegmentPart::served() const {
  std::vector<ServedMark> served;
  if (!marks_) return served;
  for (store::ServedMarks::Mark& m : marks_->all()) {
    served.push_back({std::move(m.place), std::move(m.tag), m.highest});
  }
  return served;
}

PartReadiness SegmentPart::readiness() const {
  if (stores_.empty()) return PartReadiness{false, "no segment store configured"};
  const int64_t now = steady_now_ms();
  std::string down;
  for (size_t i = 0; i < stores_.size(); ++i) {
    if (!down.empty()) down += "; ";
    if (store_up(i, now, &down)) return PartReadiness{true, ""};
  }
  return PartReadiness{false, "segment store unavailable: " + down};
}

// --- tags ---

SegmentPart::TagEntry* SegmentPart::find(std::string_view tag) const { return index_.find(tag); }

Result<std::unique_ptr<SegmentPart::TagEntry>> SegmentPart::load_tag(const std::string& name) {
  // A striped store the prober knows is down (one that hangs, say) is asked last, so a
  // refill does not wait out its timeout while another store answers.
  Result<store::TagSource> source = store::tag_source(stores_, name, [this](size_t index) {
    std::string why;
    return !store_up(index, steady_now_ms(), &why);
  });
  if (stores_.size() == 1) note_store(0, source.status());
  if (!source.ok()) return source.status();

  auto entry = std::make_unique<TagEntry>();
  entry->source = std::move(source).value();
  SegmentBufferOptions options;
  options.tag = name;
  options.min_step = entry->source.step;
  options.max_step = std::max(entry->source.step, options_.max_step);
  options.wait_ms = options_.wait_ms;
  options.clock = options_.clock;
  entry->timed = std::make_unique<TimedSource>(entry->source.source, options_.slow_ms);
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SegmentBuffer> buffer,
                           SegmentBuffer::create(entry->timed.get(), options));
  entry->buffer = std::move(buffer);
  if (!entry->source.serial_template.empty()) {
    Result<SerialTemplate> parsed = SerialTemplate::parse(entry->source.serial_template);
    if (parsed.ok()) entry->serial = std::move(parsed).value();
  }
  return entry;
}

Result<SegmentPart::TagEntry*> SegmentPart::entry_for(std::string_view tag) {
  if (TagEntry* found = find(tag)) return found;
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  const std::string name(tag);
  std::shared_ptr<TagLoad> load;
  {
    MutexLock lock(tags_mu_);
    std::shared_ptr<TagLoad>& slot = loads_[name];
    if (!slot) slot = std::make_shared<TagLoad>();
    load = slot;
  }
  // set_step drops a tag so that it is built again with the new step; a load that
  // read the old step before that must not publish over it.
  const uint64_t steps_seen = steps_changed_.load(std::memory_order_acquire);
  Result<TagEntry*> result = static_cast<TagEntry*>(nullptr);  // set below
  {
    MutexLock loading(load->mu);
    if (TagEntry* found = find(tag)) return found;  // loaded while we waited
    Result<std::unique_ptr<TagEntry>> made = load_tag(name);
    if (!made.ok()) {
      note_request(made.status());
      result = made.status();
    } else {
      MutexLock lock(tags_mu_);
      // A load that began before set_step dropped the tag may race a newer one: the
      // entry published first is the one every request uses.
      if (TagEntry* published = index_.find(name)) {
        result = published;
      } else if (steps_changed_.load(std::memory_order_acquire) != steps_seen) {
        entries_.push_back(std::move(made).value());  // this request only; kept alive
        result = entries_.back().get();
      } else {
        entries_.push_back(std::move(made).value());
        index_.set(name, entries_.back().get());
        result = entries_.back().get();
      }
    }
  }
  // The load is over either way; waiters still hold their own reference to it.
  MutexLock lock(tags_mu_);
  if (auto it = loads_.find(name); it != loads_.end() && it->second == load) loads_.erase(it);
  return result;
}

Result<size_t> SegmentPart::try_next(std::string_view tag, std::span<uint64_t> out) const {
  TagEntry* entry = find(tag);
  if (entry == nullptr) {
    IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
    return size_t{0};  // first use of the tag: the store must be asked
  }
  return entry->buffer->try_next_batch(out);
}

Status SegmentPart::next(std::string_view tag, std::span<uint64_t> out) {
  IDFORGE_ASSIGN_OR_RETURN(auto* entry, entry_for(tag));
  Status made = entry->buffer->next_batch(out);
  if (!made.ok()) note_request(made);
  return made;
}

Result<Segment> SegmentPart::range(std::string_view tag) {
  IDFORGE_ASSIGN_OR_RETURN(auto* entry, entry_for(tag));
  // Step 0: each store's own step for the tag. The guard records the range as served
  // like any other, so it is never handed out again, here or after a restart.
  Result<Segment> got = entry->timed->allocate(tag, 0);
  if (!got.ok()) note_request(got.status());
  return got;
}

Result<std::string> SegmentPart::serial(std::string_view tag, int64_t unix_ms,
                                        const TimeZone& zone) {
  IDFORGE_ASSIGN_OR_RETURN(auto* entry, entry_for(tag));
  if (!entry->serial) {
    return Status::InvalidArgument(
        fmt::format("tag '{}' has no serial template; create it with "
                    "`idforge tag create {} --template 'PREFIX{{yyyyMMdd}}{{seq:08}}'`",
                    tag, tag));
  }
  Result<uint64_t> seq = entry->buffer->next();
  if (!seq.ok()) {
    note_request(seq.status());
    return seq.status();
  }
  return entry->serial->format(*seq, unix_ms, zone);
}

std::vector<TagStatus> SegmentPart::tags() const {
  std::vector<TagStatus> out;
  index_.for_each([&out](const std::string& name, TagEntry* entry) {
    out.push_back({name, entry->buffer->stats()});
  });
  std::sort(out.begin(), out.end(),
            [](const TagStatus& a, const TagStatus& b) { return a.tag < b.tag; });
  return out;
}

// --- admin ---

Result<TagInfo> SegmentPart::create_tag(const TagSpec& spec) {
  // A tag this node served must not start again below what it served (a store that
  // lost it would hand those IDs out again): `idforge tag served` tells the fleet's.
  const bool exists =
      !stores_.empty() && stores_.front().store && stores_.front().store->get_tag(spec.name).ok();
  if (marks_ && !exists) {
    for (const store::ServedMarks::Mark& m : marks_->all()) {
      if (m.tag != spec.name || spec.start > m.highest) continue;
      return Status::InvalidArgument(fmt::format(
          "this node has served tag '{}' up to {} (store place {}); a recreated tag must start "
          "above it: start {} or higher (other nodes may have served more: idforge tag served)",
          spec.name, m.highest, m.place, m.highest + 1));
    }
  }
  MutexLock admin(admin_mu_);
  for (size_t i = 0; i < stores_.size(); ++i) {
    store::OpenedStore& o = stores_[i];
    if (!o.store) return store::from_store(o.error, o, stores_.size());
    // Best effort: a store that cannot tell its identity still takes the tag.
    store::record_new_store_identity(*o.store).ignore_error();
    Status made = o.store->create_tag(spec);
    note_store(i, made);
    if (!made.ok()) return store::from_store(made, o, stores_.size());
  }
  log::info("tag.created", {{"tag", spec.name},
                            {"start", spec.start},
                            {"step", spec.step},
                            {"template", spec.serial_template},
                            {"stores", stores_.size()}});
  return stores_.front().store->get_tag(spec.name);
}

Result<std::vector<TagInfo>> SegmentPart::list_tags() {
  MutexLock admin(admin_mu_);
  Status last = Status::Unavailable("no segment store could be reached");
  for (size_t i = 0; i < stores_.size(); ++i) {
    store::OpenedStore& o = stores_[i];
    if (!o.store) continue;
    Result<std::vector<TagInfo>> tags = o.store->list_tags();
    note_store(i, tags.status());
    if (tags.ok()) return tags;
    last = store::from_store(tags.status(), o, stores_.size());
  }
  return last;
}

Result<TagInfo> SegmentPart::set_step(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  MutexLock admin(admin_mu_);
  for (size_t i = 0; i < stores_.size(); ++i) {
    store::OpenedStore& o = stores_[i];
    if (!o.store) return store::from_store(o.error, o, stores_.size());
    Status set = o.store->set_step(tag, step);
    note_store(i, set);
    if (!set.ok()) return store::from_store(set, o, stores_.size());
  }
  log::info("tag.step_changed", {{"tag", tag}, {"step", step}, {"stores", stores_.size()}});
  // The tag's buffer was sized for the old step: drop it from the map (requests in
  // flight finish on it) so the next request builds one with the new step.
  {
    MutexLock lock(tags_mu_);
    steps_changed_.fetch_add(1, std::memory_order_acq_rel);
    index_.set(tag, nullptr);
  }
  return stores_.front().store->get_tag(tag);
}

}  // namespace idforge::server
