// A 3-member ZooKeeper ensemble under two real `idforge serve` processes: kill -9 the
// member each server's session is connected to, and the leader, while a loader pulls
// Snowflake IDs from each server. The C client moves the session to a member that is
// left, under the same session id (an expired session could not come back), so the
// ephemeral slot node stays, the lease is the same one (never lost and taken again),
// renews go on through the new member, no server fails requests for longer than a short
// window, the two keep distinct worker ids, and no ID repeats.
#include "integration/zookeeper_ensemble.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "integration/services.h"
#include "support/text.h"

namespace idforge::integration::zk {
namespace {

using test::ms_since;

using std::chrono::milliseconds;

// The session timeout asked for, which the lease's TTL is: renews every second, fence
// 2.85 s after the last renew sent.
constexpr int64_t kTtlMs = 3000;
// The longest run of failed requests allowed. The server keeps its time mark a fence
// window ahead, so a session that moves in time fails none at all.
constexpr milliseconds kShortWindow{500};

struct Node {
  std::string name;
  std::unique_ptr<ServeNode> serve;
  std::unique_ptr<HttpClient> http;
  LeaseView lease;
  int64_t session = 0;
  bool moved = false;  // its session had to leave a killed member
  std::unique_ptr<Loader> loader;
};

// Waits until the node holds a lease and issues (not fenced).
::testing::AssertionResult wait_held(Node& node, milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  std::string last;
  while (Steady::now() < deadline) {
    Result<LeaseView> v = lease_view(*node.http);
    if (v.ok() && v->held && v->state == "held" && !v->fenced) {
      node.lease = *v;
      return ::testing::AssertionSuccess();
    }
    last = v.ok() ? "state " + v->state : v.status().to_string();
    std::this_thread::sleep_for(milliseconds(50));
  }
  return ::testing::AssertionFailure() << node.name << " holds no lease: " << last << "\n"
                                       << node.serve->stderr_tail();
}

class ZookeeperEnsembleTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (Node& n : nodes_) {
      if (n.loader) n.loader->stop();
    }
    nodes_.clear();  // SIGKILLs a server still running
    if (ensemble_) {
      EXPECT_TRUE(stop_ensemble(*ensemble_).ok());
    }
  }

  std::string slot_path(const Node& node) const {
    return "/idforge/" + cluster_ + "/slots/" + std::to_string(node.lease.slot);
  }

  // Kills member `victim`, then checks every node: its session shows up again on a
  // member that is left (after an election, when the leader died), under the same id;
  // its keeper renews through it within the TTL; it still holds its first lease on
  // the same slot, unfenced, and the slot's node is still its session's.
  void kill_and_check(size_t victim) {
    const int leader = leader_of(*ensemble_);
    const bool leading = leader == static_cast<int>(victim);
    const std::string what =
        "member " + std::to_string(victim + 1) + (leading ? " (leader)" : " (follower)");
    SCOPED_TRACE("killed " + what);
    std::vector<int> before;
    for (Node& n : nodes_) before.push_back(member_holding(*ensemble_, n.session));
    ASSERT_TRUE(Services::get().kill(ensemble_->members[victim]).ok());
    const auto killed = Steady::now();
    // Counted once the member is gone: a renew counted later went through another.
    std::vector<uint64_t> renewals;
    for (Node& n : nodes_) {
      Result<LeaseView> v = lease_view(*n.http);
      ASSERT_TRUE(v.ok()) << v.status().to_string();
      renewals.push_back(v->renewals);
    }
    leader_killed_ = leader_killed_ || leading;
    std::printf("[zk-ensemble] killed %s; sessions were on members %d and %d\n", what.c_str(),
                before[0] + 1, before[1] + 1);
    if (leading) {
      int next = -1;
      while (ms_since(killed) < kTtlMs && (next = leader_of(*ensemble_)) < 0) {
        std::this_thread::sleep_for(milliseconds(20));
      }
      EXPECT_GE(next, 0) << "no new leader within the TTL";
      std::printf("[zk-ensemble]   member %d leads after %lld ms\n", next + 1,
                  static_cast<long long>(ms_since(killed)));
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      // Each node gets the TTL from the kill, and a second at least after the last
      // node's checks, so that one node's failure does not leave the next no time.
      const auto deadline =
          std::max(killed + milliseconds(kTtlMs), Steady::now() + milliseconds(1000));
      int now = -1;
      while (Steady::now() < deadline) {
        now = member_holding(*ensemble_, n.session);
        if (now >= 0 && now != static_cast<int>(victim)) break;
        std::this_thread::sleep_for(milliseconds(20));
      }
      const int64_t moved_ms = ms_since(killed);
      EXPECT_TRUE(now >= 0 && now != static_cast<int>(victim))
          << n.name << "'s session is on no member that is left";
      n.moved = n.moved || before[i] == static_cast<int>(victim);
      std::optional<LeaseView> renewed;
      while (Steady::now() < deadline) {
        Result<LeaseView> v = lease_view(*n.http);
        ASSERT_TRUE(v.ok()) << v.status().to_string();
        if (v->renewals > renewals[i]) {
          renewed = *v;
          break;
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
      if (!renewed) {
        ADD_FAILURE() << n.name << " renewed nothing within the TTL after the kill";
        Result<LeaseView> v = lease_view(*n.http);
        ASSERT_TRUE(v.ok()) << v.status().to_string();
        renewed = *v;
      }
      EXPECT_EQ(renewed->slot, n.lease.slot) << n.name;
      EXPECT_EQ(renewed->leases_taken, 1u) << n.name << " lost its lease and took another";
      EXPECT_EQ(renewed->state, "held") << n.name;
      EXPECT_FALSE(renewed->fenced) << n.name;
      Result<int64_t> owner = node_owner(*ensemble_, slot_path(n));
      ASSERT_TRUE(owner.ok()) << owner.status().to_string();
      EXPECT_EQ(*owner, n.session) << slot_path(n) << " is no longer " << n.name << "'s session's";
      std::printf(
          "[zk-ensemble]   %s: session on member %d (was %d; 0: none) after %lld ms, renewed "
          "after %lld ms, slot %llu, %llu leases taken, %llu failed renews so far\n",
          n.name.c_str(), now + 1, before[i] + 1, static_cast<long long>(moved_ms),
          static_cast<long long>(ms_since(killed)), static_cast<unsigned long long>(renewed->slot),
          static_cast<unsigned long long>(renewed->leases_taken),
          static_cast<unsigned long long>(renewed->failures));
    }
  }

  void restart(size_t member) {
    const auto restarting = Steady::now();
    ASSERT_TRUE(Services::get().restart(ensemble_->members[member]).ok());
    ASSERT_TRUE(wait_serving(*ensemble_, member, milliseconds(15'000)))
        << "member " << member + 1 << " did not rejoin";
    std::printf("[zk-ensemble] member %zu serving again after %lld ms\n", member + 1,
                static_cast<long long>(ms_since(restarting)));
  }

  std::optional<Ensemble> ensemble_;
  std::string cluster_;
  std::vector<Node> nodes_;
  bool leader_killed_ = false;
};

TEST_F(ZookeeperEnsembleTest, SessionsMoveAndLeasesStayWhenMembersDie) {
  const auto started = Steady::now();
  Result<Ensemble> e = start_ensemble("zk-ensemble");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ensemble_ = *e;
  std::printf("[zk-ensemble] ensemble serving after %lld ms: %s\n",
              static_cast<long long>(ms_since(started)), e->url.c_str());
  cluster_ = unique_tag("ensemble");
  const std::string registry =
      e->url + "/idforge?ttl_ms=" + std::to_string(kTtlMs) + "&cluster=" + cluster_;

  for (const char* name : {"node-a", "node-b"}) {
    Node n;
    n.name = name;
    Result<std::unique_ptr<ServeNode>> serve = ServeNode::start(
        Services::get().make_dir(std::string("zk-ensemble-") + name),
        {"--registry", registry, "--identity", name, "--io-threads", "1", "--worker-threads", "2"});
    ASSERT_TRUE(serve.ok()) << serve.status().to_string();
    n.serve = std::move(*serve);
    n.http = std::make_unique<HttpClient>(n.serve->http_port());
    ASSERT_TRUE(wait_held(n, milliseconds(15'000)));
    nodes_.push_back(std::move(n));
  }
  for (Node& n : nodes_) {
    Result<int64_t> owner = node_owner(*e, slot_path(n));
    ASSERT_TRUE(owner.ok()) << owner.status().to_string();
    ASSERT_NE(*owner, 0) << slot_path(n) << " does not exist";
    n.session = *owner;
    n.loader = std::make_unique<Loader>(n.serve->http_port());
  }
  ASSERT_NE(nodes_[0].lease.slot, nodes_[1].lease.slot);
  std::printf("[zk-ensemble] both nodes issuing after %lld ms\n",
              static_cast<long long>(ms_since(started)));
  std::this_thread::sleep_for(milliseconds(300));

  // The member each node's session is on, then the leader, unless one of those was it.
  // A killed member comes back before the next kill, so that two are always left.
  int down = -1;
  while (true) {
    int target = -1;
    for (const Node& n : nodes_) {
      if (n.moved) continue;  // off a member killed already
      target = member_holding(*e, n.session);
      ASSERT_GE(target, 0) << n.name << "'s session is on no member";
      break;
    }
    if (target < 0 && !leader_killed_) target = leader_of(*e);
    if (target < 0) break;
    if (down >= 0) {
      restart(static_cast<size_t>(down));
      if (HasFatalFailure()) return;
      down = -1;
      continue;  // and look again, with every member up
    }
    kill_and_check(static_cast<size_t>(target));
    if (HasFatalFailure()) return;
    down = target;
  }
  std::this_thread::sleep_for(milliseconds(300));

  std::vector<uint64_t> all;
  for (Node& n : nodes_) {
    n.loader->stop();
    const Loader::Figures f = n.loader->figures();
    std::printf(
        "[zk-ensemble] %s: %zu requests, %zu IDs, %zu failed in %zu runs, longest run %lld ms, "
        "longest request %lld ms%s%s\n",
        n.name.c_str(), f.requests, n.loader->ids().size(), f.failures, f.failure_runs,
        static_cast<long long>(f.longest_run.count()),
        static_cast<long long>(f.longest_request.count()),
        f.first_error.empty() ? "" : "; first: ", f.first_error.c_str());
    EXPECT_GT(n.loader->ids().size(), 0u) << n.name;
    EXPECT_LT(f.longest_run, kShortWindow)
        << n.name << " failed requests for too long; first: " << f.first_error;
    // Twitter layout: datacenter in bits 17..21, worker in bits 12..16.
    for (uint64_t id : n.loader->ids()) {
      if (((id >> 17) & 31) != n.lease.datacenter || ((id >> 12) & 31) != n.lease.worker) {
        ADD_FAILURE() << n.name << " issued " << id << " outside its worker id";
        break;
      }
    }
    all.insert(all.end(), n.loader->ids().begin(), n.loader->ids().end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an ID was issued twice";

  for (Node& n : nodes_) {
    Status stopped = n.serve->stop();
    EXPECT_TRUE(stopped.ok()) << stopped.to_string();
  }
  std::printf("[zk-ensemble] whole test %lld ms\n", static_cast<long long>(ms_since(started)));
}

}  // namespace
}  // namespace idforge::integration::zk
