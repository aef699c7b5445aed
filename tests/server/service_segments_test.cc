// SegmentPart over in-memory stores whose calls can be held at a gate, as a store that
// hangs holds them: a load, an admin call or a probe stuck on one store or one tag must
// hold up nothing else.
#include "server/service/service_segments.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace idforge::server {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Longer than any honest call here takes, even on a loaded machine.
constexpr auto kPrompt = 2s;

// Tags in memory. A call about a name in held() (or any call while hang_all()) waits
// at the gate until it is opened; list_tags is "*list".
class GatedStore final : public SegmentStore {
 public:
  explicit GatedStore(std::string name) : name_(std::move(name)) {}

  void hold(const std::string& what) {
    std::lock_guard lock(mu_);
    held_.insert(what);
  }
  void hang_all(bool on) {
    {
      std::lock_guard lock(mu_);
      hang_all_ = on;
    }
    cv_.notify_all();
  }
  void open_all() {
    {
      std::lock_guard lock(mu_);
      held_.clear();
      hang_all_ = false;
    }
    cv_.notify_all();
  }
  // Until a call is waiting at the gate.
  bool wait_for_waiter() {
    const auto until = Steady::now() + kPrompt;
    while (waiting_.load() == 0 && Steady::now() < until) std::this_thread::sleep_for(1ms);
    return waiting_.load() > 0;
  }

  Result<Segment> allocate(std::string_view tag, uint64_t step) override {
    gate(tag);
    std::lock_guard lock(mu_);
    auto it = tags_.find(tag);
    if (it == tags_.end()) return unknown_tag(tag);
    Segment s;
    s.first = it->second.max_id + 1;
    s.count = step;
    it->second.max_id += step;
    return s;
  }
  Status create_tag(const TagSpec& spec) override {
    gate(spec.name);
    std::lock_guard lock(mu_);
    if (tags_.count(spec.name) != 0) return Status::AlreadyExists(spec.name);
    TagInfo info;
    info.name = spec.name;
    info.max_id = spec.start - 1;
    info.step = spec.step;
    tags_[spec.name] = info;
    return Status::Ok();
  }
  Result<std::vector<TagInfo>> list_tags() override {
    gate("*list");
    std::lock_guard lock(mu_);
    std::vector<TagInfo> out;
    for (const auto& [name, info] : tags_) out.push_back(info);
    return out;
  }
  Result<TagInfo> get_tag(std::string_view name) override {
    gate(name);
    std::lock_guard lock(mu_);
    auto it = tags_.find(name);
    if (it == tags_.end()) return unknown_tag(name);
    return it->second;
  }
  Status set_step(std::string_view name, uint64_t step) override {
    gate(name);
    std::lock_guard lock(mu_);
    auto it = tags_.find(name);
    if (it == tags_.end()) return unknown_tag(name);
    it->second.step = step;
    return Status::Ok();
  }
  std::string describe() const override { return name_; }
  // The failover guard's calls; SegmentPart does not make them (yet).
  Result<StoreIdentity> identity() override { return StoreIdentity{}; }
  Result<bool> adopt_identity(const IdentityChange&) override { return true; }
  Result<Durability> durability() override { return Durability{}; }
  Status claim_place(uint32_t, uint32_t) override { return Status::Ok(); }

 private:
  void gate(std::string_view what) {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.wait(lock, [&] { return !hang_all_ && held_.count(std::string(what)) == 0; });
    --waiting_;
  }

  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> held_;
  bool hang_all_ = false;
  std::atomic<int> waiting_{0};
  std::map<std::string, TagInfo, std::less<>> tags_;
};

struct Fixture {
  explicit Fixture(int stores, SegmentPartOptions options = {}) {
    std::vector<store::OpenedStore> opened;
    for (int i = 0; i < stores; ++i) {
      auto store = std::make_unique<GatedStore>("fake:" + std::to_string(i));
      gated.push_back(store.get());
      store::OpenedStore o;
      o.url = "fake:" + std::to_string(i);
      o.store = std::move(store);
      opened.push_back(std::move(o));
    }
    part = SegmentPart::start(std::move(opened), nullptr, options);
  }
  ~Fixture() {
    for (GatedStore* g : gated) g->open_all();
  }
  void create(const std::string& tag) {
    TagSpec spec;
    spec.name = tag;
    spec.step = 100;
    ASSERT_TRUE(part->create_tag(spec).ok());
  }

  std::vector<GatedStore*> gated;
  std::unique_ptr<SegmentPart> part;
};

// Whether `call` finished within kPrompt. If not, opens every gate, so that what waited
// behind it finishes too and the test fails instead of hanging.
template <class T>
bool prompt(std::future<T>& call, Fixture& f) {
  if (call.wait_for(kPrompt) == std::future_status::ready) return true;
  for (GatedStore* g : f.gated) g->open_all();
  return false;
}

// Runs `call` on its own thread; the future is ready when it returned.
template <class F>
auto run(F call) {
  return std::async(std::launch::async, std::move(call));
}

TEST(SegmentPartTest, ALoadStuckOnOneTagHoldsUpNeitherOtherTagsNorAdmin) {
  Fixture f(1);
  f.create("slow");
  f.create("fast");
  f.create("later");
  f.gated[0]->hold("slow");
  auto stuck = run([&] {
    std::vector<uint64_t> ids(1);
    return f.part->next("slow", ids);
  });
  ASSERT_TRUE(f.gated[0]->wait_for_waiter());

  // Another tag loads (its own store round trips) while "slow" is stuck in its load.
  auto fast = run([&] {
    std::vector<uint64_t> ids(3);
    return f.part->next("fast", ids);
  });
  EXPECT_TRUE(prompt(fast, f)) << "a new tag waited on another";
  EXPECT_TRUE(fast.get().ok());
  // Admin calls and the never-blocking views do not wait for it either.
  auto listed = run([&] { return f.part->list_tags(); });
  EXPECT_TRUE(prompt(listed, f)) << "list_tags waited on a load";
  EXPECT_EQ(listed.get().value().size(), 3u);
  auto created = run([&] {
    TagSpec spec;
    spec.name = "made_meanwhile";
    return f.part->create_tag(spec);
  });
  EXPECT_TRUE(prompt(created, f)) << "create_tag waited on a load";
  EXPECT_TRUE(created.get().ok());
  EXPECT_TRUE(f.part->readiness().ready);
  EXPECT_EQ(f.part->tags().size(), 1u);  // "fast"; "slow" is not published yet

  // A second request for the stuck tag waits for the first load rather than starting
  // its own, and both get IDs once the store answers.
  auto second = run([&] {
    std::vector<uint64_t> ids(1);
    return f.part->next("slow", ids);
  });
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout);
  f.gated[0]->open_all();
  EXPECT_TRUE(stuck.get().ok());
  EXPECT_TRUE(second.get().ok());
  EXPECT_EQ(f.part->tags().size(), 2u);
}

TEST(SegmentPartTest, AnAdminCallStuckOnTheStoreHoldsUpNoRequest) {
  Fixture f(1);
  f.create("order");
  f.create("fresh");
  std::vector<uint64_t> ids(5);
  ASSERT_TRUE(f.part->next("order", ids).ok());
  f.gated[0]->hold("*list");
  auto stuck = run([&] { return f.part->list_tags(); });
  ASSERT_TRUE(f.gated[0]->wait_for_waiter());

  auto loaded = run([&] {
    std::vector<uint64_t> more(5);
    return f.part->next("order", more);
  });
  EXPECT_TRUE(prompt(loaded, f)) << "a request waited on admin";
  EXPECT_TRUE(loaded.get().ok());
  auto fresh = run([&] {
    std::vector<uint64_t> more(1);
    return f.part->next("fresh", more);
  });
  EXPECT_TRUE(prompt(fresh, f)) << "a tag load waited on admin";
  EXPECT_TRUE(fresh.get().ok());
  f.gated[0]->open_all();
  EXPECT_TRUE(stuck.get().ok());
}

TEST(SegmentPartTest, EachStoreIsProbedOnItsOwnSoAHungOneHoldsUpNoOther) {
  SegmentPartOptions options;
  options.probe_every = 20ms;
  options.probe_stuck_after = 200ms;
  Fixture f(2, options);
  ASSERT_TRUE(f.part->readiness().ready);
  for (const StoreStatus& s : f.part->stores()) EXPECT_TRUE(s.up) << s.store << ": " << s.error;

  f.gated[0]->hang_all(true);
  // The hung store is down once its probe has waited probe_stuck_after; the other is
  // still probed every 20 ms and the part stays ready on it.
  std::vector<StoreStatus> seen;
  const auto until = Steady::now() + 5s;
  while (Steady::now() < until) {
    seen = f.part->stores();
    if (!seen[0].up) break;
    std::this_thread::sleep_for(10ms);
  }
  // Long enough for the healthy store to have been probed many times over.
  std::this_thread::sleep_for(600ms);
  seen = f.part->stores();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FALSE(seen[0].up);
  EXPECT_TRUE(seen[0].probing);
  EXPECT_NE(seen[0].error.find("fake:0 has not answered a probe"), std::string::npos)
      << seen[0].error;
  EXPECT_TRUE(seen[1].up);
  EXPECT_GE(seen[1].probed_ms_ago, 0);
  EXPECT_LT(seen[1].probed_ms_ago, 400) << "the healthy store's probes waited on the hung one";
  EXPECT_TRUE(f.part->readiness().ready) << f.part->readiness().why;

  f.gated[1]->hang_all(true);
  const auto both_until = Steady::now() + 5s;
  while (f.part->readiness().ready && Steady::now() < both_until) {
    std::this_thread::sleep_for(10ms);
  }
  const PartReadiness none = f.part->readiness();
  EXPECT_FALSE(none.ready);
  EXPECT_NE(none.why.find("segment store unavailable: "), std::string::npos) << none.why;
  EXPECT_NE(none.why.find("fake:1"), std::string::npos) << none.why;

  f.gated[0]->hang_all(false);
  f.gated[1]->hang_all(false);
  const auto back_until = Steady::now() + 5s;
  while (!f.part->readiness().ready && Steady::now() < back_until) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(f.part->readiness().ready) << f.part->readiness().why;
}

TEST(SegmentPartTest, ANewStepRebuildsTheTagsBuffer) {
  Fixture f(1);
  f.create("order");
  std::vector<uint64_t> ids(3);
  ASSERT_TRUE(f.part->next("order", ids).ok());
  ASSERT_EQ(f.part->tags().at(0).stats.step, 100u);
  Result<TagInfo> changed = f.part->set_step("order", 500);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(f.part->tags().empty()) << "the old buffer is dropped";
  ASSERT_TRUE(f.part->next("order", ids).ok());
  EXPECT_EQ(f.part->tags().at(0).stats.step, 500u);
}

}  // namespace
}  // namespace idforge::server
