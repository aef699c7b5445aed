#include "store/store_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace idforge::store {
namespace {

// An identity that changes again while it is being adopted is retried this often.
constexpr int kAdoptAttempts = 3;
// Ranges one allocate() takes when the store keeps handing out refused ones: the first
// refusal raises the tag, so the second range is normally good.
constexpr int kRefusedAttempts = 3;

}  // namespace

const std::string kNewStorePrefix = "new:";

uint64_t default_failover_margin(uint64_t max_step) {
  return max_step * kMarginNodes * kMarginFetches;
}

StoreGuard::StoreGuard(SegmentStore* store, uint32_t index, uint32_t count, GuardSettings settings)
    : store_(store),
      index_(index),
      count_(count),
      place_(place_name(index, count)),
      settings_(std::move(settings)) {}

void StoreGuard::report(log::Level level, std::string_view event, log::Fields fields,
                        const std::string& line) const {
  if (settings_.log) {
    settings_.log(line);
    return;
  }
  std::vector<log::Field> all(fields.begin(), fields.end());
  all.push_back({"message", line});
  log::write(level, event, all);
}

Mutex& StoreGuard::tag_mutex(std::string_view tag) {
  MutexLock lock(tags_mu_);
  auto it = tag_mu_.find(tag);
  if (it == tag_mu_.end()) {
    it = tag_mu_.emplace(std::string(tag), std::make_unique<Mutex>()).first;
  }
  return *it->second;
}

Status StoreGuard::check() {
  MutexLock lock(check_mu_);
  Status st = check_locked();
  MutexLock state(mu_);
  check_problem_ = st.ok() ? std::string() : st.message();
  return st;
}

Status StoreGuard::check_locked() {
  bool prepared = false;
  {
    MutexLock state(mu_);
    prepared = !verified_.empty();
  }
  if (!prepared) {
    IDFORGE_RETURN_IF_ERROR(store_->claim_place(index_, count_));
    IDFORGE_ASSIGN_OR_RETURN(Durability durable, store_->durability());
    if (!durable.safe && !settings_.allow_unsafe) {
      return Status::InvalidArgument(fmt::format(
          "segment store {} can lose committed ranges ({}): {}; fix the store's settings, or "
          "accept the risk with segment.allow_unsafe_store = true (--allow-unsafe-store)",
          store_->describe(), durable.summary, durable.risk));
    }
  }
  return verify_identity_locked();
}

Status StoreGuard::verify_identity_locked() {
  for (int attempt = 0; attempt < kAdoptAttempts; ++attempt) {
    IDFORGE_ASSIGN_OR_RETURN(StoreIdentity id, store_->identity());
    if (id.current.empty()) {
      return Status::Unavailable(
          fmt::format("segment store {} did not say which history it is (its identity), so ranges "
                      "from it cannot be checked",
                      store_->describe()));
    }
    // "new:X" was recorded when the first tag was created on a new store (or on one
    // that lost its data and got its tags back from an operator). A node that knew the
    // store under another history must still move the tags forward; one that did not
    // has nothing to protect.
    const std::string seen = settings_.marks->seen_identity(place_);
    const bool recorded_new = id.recorded == kNewStorePrefix + id.current;
    bool confirmed_new = recorded_new && (seen.empty() || seen == id.current);
    if (recorded_new && !confirmed_new) {
      // This node knew its place under another history, but if it served none of the
      // store's tags (a data directory used with several stores) it has nothing there to
      // protect: the nodes that served them move the tags.
      IDFORGE_ASSIGN_OR_RETURN(std::vector<TagInfo> tags, store_->list_tags());
      confirmed_new = true;
      for (const TagInfo& tag : tags) {
        if (settings_.marks->highest(place_, tag.name) != 0) confirmed_new = false;
      }
    }
    if (id.recorded == id.current || confirmed_new) {
      IDFORGE_RETURN_IF_ERROR(settings_.marks->record_identity(place_, id.current));
      MutexLock state(mu_);
      verified_ = id.current;
      recorded_ = id.recorded;
      return Status::Ok();
    }
    IdentityChange change;
    change.expected = id.recorded;
    change.adopt = id.current;
    change.margin = settings_.margin;
    change.floors = settings_.marks->of_place(place_);
    // A store with nothing recorded and no tags is new: nobody can have served from it.
    bool fresh = false;
    if (id.recorded.empty()) {
      IDFORGE_ASSIGN_OR_RETURN(std::vector<TagInfo> tags, store_->list_tags());
      fresh = tags.empty();
    }
    if (fresh) {
      change.adopt = kNewStorePrefix + id.current;
      change.margin = 0;
      change.floors.clear();
    }
    IDFORGE_ASSIGN_OR_RETURN(bool applied, store_->adopt_identity(change));
    MutexLock state(mu_);
    if (fresh) {
      // A new store: nothing happened worth a line.
    } else if (!applied) {
      ++changes_seen_;
      report(log::Level::kWarn, "store.history_adopted",
             {{"store", store_->describe()}, {"place", place_}, {"identity", id.current}},
             fmt::format("segment store {}: identity {} was adopted by another node",
                         store_->describe(), id.current));
    } else if (id.recorded.empty()) {
      ++changes_;
      report(log::Level::kWarn, "store.history_recorded",
             {{"store", store_->describe()},
              {"place", place_},
              {"identity", id.current},
              {"margin", settings_.margin},
              {"served_tags", change.floors.size()}},
             fmt::format("segment store {}: no identity was recorded (a new, wiped or older "
                         "store); recorded {} and moved every tag forward by {} past this node's "
                         "{} served tag(s)",
                         store_->describe(), id.current, settings_.margin, change.floors.size()));
    } else {
      ++changes_;
      report(log::Level::kWarn, "store.history_changed",
             {{"store", store_->describe()},
              {"place", place_},
              {"from", id.recorded},
              {"to", id.current},
              {"margin", settings_.margin}},
             fmt::format("segment store {}: identity changed from {} to {} (a promoted replica, a "
                         "restored backup or lost data): moved every tag forward by {} past the "
                         "store's value and this node's highest served numbers",
                         store_->describe(), id.recorded, id.current, settings_.margin));
    }
  }
  return Status::Unavailable(
      fmt::format("segment store {}: its identity kept changing", store_->describe()));
}

Result<Segment> StoreGuard::allocate(std::string_view tag, uint64_t step) {
  MutexLock tag_lock(tag_mutex(tag));
  // A refused range moves the tag past what was served; the store is then ahead again
  // and the next range comes at once, so a request sees a store that went back as one
  // slower refill rather than a failure.
  for (int attempt = 1;; ++attempt) {
    bool raised = false;
    Result<Segment> got = allocate_once(tag, step, &raised);
    if (got.ok() || !raised || attempt == kRefusedAttempts) return got;
  }
}

Status StoreGuard::raise_tag(std::string_view tag, uint64_t floor) {
  {
    MutexLock state(mu_);
    verified_.clear();
  }
  IDFORGE_RETURN_IF_ERROR(check());
  // With the same history (an operator's UPDATE or recreated tag, a restore that brought
  // the identity back) the tag is raised in place; it only ever raises, and the record
  // stays. A changed identity was handled by check() moving every tag forward.
  IdentityChange raise;
  {
    MutexLock state(mu_);
    raise.expected = raise.adopt = recorded_;
  }
  raise.floors.emplace(std::string(tag), floor);
  IDFORGE_ASSIGN_OR_RETURN(bool applied, store_->adopt_identity(raise));
  if (!applied) return Status::Unavailable("the store's recorded identity changed meanwhile");
  return Status::Ok();
}

Result<Segment> StoreGuard::allocate_once(std::string_view tag, uint64_t step, bool* raised) {
  std::string verified;
  {
    MutexLock state(mu_);
    verified = verified_;
  }
  if (verified.empty()) {
    IDFORGE_RETURN_IF_ERROR(check());
    MutexLock state(mu_);
    verified = verified_;
  }
  IDFORGE_RETURN_IF_ERROR(check_every_place_confirmed(tag));
  IDFORGE_ASSIGN_OR_RETURN(Segment seg, store_->allocate(tag, step));

  if (!seg.identity.empty() && seg.identity != verified) {
    const std::string why = fmt::format(
        "tag {}: segment store {} committed {}..{} under history {}, not the verified {} "
        "(it failed over or was restored): the range is skipped, every tag is moved forward, "
        "and IDs resume",
        tag, store_->describe(), seg.first, seg.last(), seg.identity, verified);
    {
      MutexLock state(mu_);
      ++foreign_;
      range_problem_ = why;
      verified_.clear();  // verify again, which applies the fleet step
    }
    report(log::Level::kWarn, "segment.range_skipped",
           {{"tag", tag},
            {"store", store_->describe()},
            {"place", place_},
            {"first", seg.first},
            {"last", seg.last()},
            {"history", seg.identity},
            {"verified", verified}},
           why);
    check().ignore_error();
    return Status::Unavailable(why);
  }

  const uint64_t served = settings_.marks->highest(place_, tag);
  if (seg.first <= served) {
    const std::string why = fmt::format(
        "tag {}: segment store {} handed out {}..{}, but this node has already served up to {} "
        "from it: refused (the store went back: a failover, a restored backup or lost data); "
        "the tag is moved past {} and served again",
        tag, store_->describe(), seg.first, seg.last(), served, served);
    {
      MutexLock state(mu_);
      ++refused_;
      range_problem_ = why;
    }
    report(log::Level::kError, "segment.range_refused",
           {{"tag", tag},
            {"store", store_->describe()},
            {"place", place_},
            {"first", seg.first},
            {"last", seg.last()},
            {"served", served}},
           why);
    *raised = raise_tag(tag, served).ok();
    return Status::Unavailable(why);
  }

  if (settings_.fleet != nullptr) {
    Result<FloorTake> took = settings_.fleet->take(place_, tag, seg.first, seg.last());
    if (!took.ok()) {
      const std::string why = fmt::format(
          "tag {}: the range {}..{} was not used: the fleet floor in {} could not record it ({}); "
          "the tag's buffered IDs are still served",
          tag, seg.first, seg.last(), settings_.fleet->describe(), took.status().message());
      {
        MutexLock state(mu_);
        ++fleet_unrecorded_;
        range_problem_ = why;
      }
      // Every tag's refill fails alike while the registry is out: one line, then counts.
      if (settings_.log) {
        settings_.log(why);
      } else {
        fleet_down_.fail(log::Level::kWarn, "segment.fleet_floor_unavailable",
                         {{"tag", tag},
                          {"store", store_->describe()},
                          {"registry", settings_.fleet->describe()},
                          {"first", seg.first},
                          {"last", seg.last()},
                          {"error", took.status().message()},
                          {"message", why}});
      }
      return Status::Unavailable(why);
    }
    fleet_down_.recover(log::Level::kInfo, "segment.fleet_floor_recovered",
                        {{"registry", settings_.fleet->describe()}});
    if (!took->taken) {
      const uint64_t floor = std::max(took->highest, served);
      const std::string why = fmt::format(
          "tag {}: segment store {} handed out {}..{}, but the fleet has already taken up to {} "
          "of it ({}): refused (the store went back: wiped and recreated, restored, lowered by "
          "hand or failed over); the tag is moved past {} and served again",
          tag, store_->describe(), seg.first, seg.last(), took->highest,
          settings_.fleet->describe(), floor);
      {
        MutexLock state(mu_);
        ++fleet_refused_;
        range_problem_ = why;
      }
      report(log::Level::kError, "segment.range_refused_by_fleet",
             {{"tag", tag},
              {"store", store_->describe()},
              {"place", place_},
              {"first", seg.first},
              {"last", seg.last()},
              {"fleet_highest", took->highest},
              {"registry", settings_.fleet->describe()}},
             why);
      *raised = raise_tag(tag, floor).ok();
      return Status::Unavailable(why);
    }
  }

  Status recorded = settings_.marks->record(place_, tag, seg.last());
  if (!recorded.ok()) {
    return Status::IoError(fmt::format("tag {}: the range {}..{} was not used: {}", tag, seg.first,
                                       seg.last(), recorded.message()));
  }
  {
    MutexLock state(mu_);
    range_problem_.clear();
  }
  return seg;
}

// Striped stores without a fleet floor (static: worker ids): each store records only its
// own place, so two nodes that list the stores in different orders, each started while
// the other's first store did not answer, could record both stores at place 0 and hand
// out the same residue (model/striped.pml, striped.static with stores down at a start).
// So a store is used only once this data directory has seen every place of the set
// confirmed by its store (an identity recorded for it, which check_locked writes after
// claim_place); from then on a store that is down at a start is simply skipped.
Status StoreGuard::check_every_place_confirmed(std::string_view tag) const {
  if (settings_.fleet != nullptr || count_ <= 1) return Status::Ok();
  for (uint32_t j = 0; j < count_; ++j) {
    if (j == index_) continue;
    const std::string other = place_name(j, count_);
    if (settings_.marks->seen_identity(other).empty()) {
      return Status::Unavailable(fmt::format(
          "tag {}: the striped store at place {} has not yet confirmed its place for this data "
          "directory, so {} at place {} is not used: without a fleet floor (static: worker ids) "
          "a node serves from striped stores once each has answered it (another node that "
          "lists them in another order could otherwise record two stores at one place)",
          tag, other, store_->describe(), place_));
    }
  }
  return Status::Ok();
}

GuardStatus StoreGuard::status() const {
  MutexLock state(mu_);
  GuardStatus s;
  s.place = place_;
  s.identity = verified_;
  s.verified = !verified_.empty();
  s.problem = check_problem_.empty() ? range_problem_ : check_problem_;
  s.refused_ranges = refused_;
  s.foreign_ranges = foreign_;
  s.identity_changes = changes_;
  s.identity_changes_seen = changes_seen_;
  s.fleet_refused_ranges = fleet_refused_;
  s.fleet_unrecorded_ranges = fleet_unrecorded_;
  return s;
}

}  // namespace idforge::store
