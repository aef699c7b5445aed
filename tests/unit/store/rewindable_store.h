// A SegmentStore in memory whose history a test can rewrite, for the segment guard's
// tests (store_guard_test.cc, fleet_floor_test.cc).
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "idforge/segment_store.h"
#include "store/served_marks.h"

namespace idforge::store {

// A SegmentStore in memory whose history an operator can rewrite: roll a tag back,
// change the identity (a failover), make it unsafe, or record another place.
class RewindableStore final : public SegmentStore {
 public:
  Result<Segment> allocate(std::string_view tag, uint64_t step) override {
    std::lock_guard lock(mu_);
    auto it = max_.find(std::string(tag));
    if (it == max_.end()) return unknown_tag(tag);
    const uint64_t n = step == 0 ? 100 : step;
    Segment seg{it->second + 1, n, 1, current_};
    it->second += n;
    return seg;
  }
  Status create_tag(const TagSpec& spec) override {
    std::lock_guard lock(mu_);
    max_[spec.name] = spec.start - 1;
    return Status::Ok();
  }
  Result<std::vector<TagInfo>> list_tags() override {
    std::lock_guard lock(mu_);
    std::vector<TagInfo> out;
    for (const auto& [name, max_id] : max_) out.push_back(TagInfo{name, max_id, 100, "", "", 0});
    return out;
  }
  Result<TagInfo> get_tag(std::string_view) override { return TagInfo{}; }
  Status set_step(std::string_view, uint64_t) override { return Status::Ok(); }
  std::string describe() const override { return "memory:test"; }
  Result<StoreIdentity> identity() override {
    std::lock_guard lock(mu_);
    return StoreIdentity{current_, recorded_};
  }
  Result<bool> adopt_identity(const IdentityChange& change) override {
    std::lock_guard lock(mu_);
    if (recorded_ != change.expected) return false;
    for (auto& [tag, max_id] : max_) {
      auto floor = change.floors.find(tag);
      if (floor != change.floors.end()) max_id = std::max(max_id, floor->second);
      max_id += change.margin;
    }
    recorded_ = change.adopt;
    ++adoptions_;
    return true;
  }
  Result<Durability> durability() override {
    Durability d;
    d.safe = safe_;
    d.summary = safe_ ? "fsync" : "no fsync";
    d.risk = safe_ ? "" : "a crash loses the last writes";
    return d;
  }
  Status claim_place(uint32_t index, uint32_t count) override {
    std::lock_guard lock(mu_);
    const std::string want = place_name(index, count);
    if (place_.empty()) place_ = want;
    if (place_ != want) return Status::InvalidArgument("recorded as " + place_ + ", not " + want);
    return Status::Ok();
  }

  // What a failover to a replica that missed writes does: the tag is older, and the
  // server is another history.
  void go_back(const std::string& tag, uint64_t max_id, const std::string& new_identity) {
    std::lock_guard lock(mu_);
    max_[tag] = max_id;
    current_ = new_identity;
  }
  uint64_t max_of(const std::string& tag) {
    std::lock_guard lock(mu_);
    return max_[tag];
  }
  int adoptions() {
    std::lock_guard lock(mu_);
    return adoptions_;
  }
  void set_safe(bool safe) { safe_ = safe; }

 private:
  std::mutex mu_;
  std::map<std::string, uint64_t> max_;
  std::string current_ = "h1";
  std::string recorded_;
  std::string place_;
  int adoptions_ = 0;
  bool safe_ = true;
};

}  // namespace idforge::store
