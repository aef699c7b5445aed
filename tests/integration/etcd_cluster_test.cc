// The etcd registry with every member of a real 3-member etcd cluster in its URL
// (etcd://A,B,C): two real `idforge serve` processes keep issuing Snowflake IDs while
// each member in turn is killed (-9, the leader among them) and restarted, and the
// leader is frozen (SIGSTOP) and resumed. Neither server may fence, errors may last no
// longer than one request timeout, and no ID may repeat across the two. Also the URLs
// the client refuses once it reaches the members.
#include "integration/etcd_cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/etcd/etcd_registry.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "support/ports.h"

namespace idforge::integration {
namespace etcd_cluster_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// 5 s: the keeper fences 4750 ms after the last renew it sent, and a leader lost
// (election timeout 1000 ms in the test cluster) is replaced within about 2 s, which
// must fit between the renews (every ttl/3) and the fence. etcd_registry.cc gives a
// request ttl/5 on one member.
constexpr int64_t kTtlMs = 5000;
constexpr int64_t kRequestTimeoutMs = kTtlMs / 5;
// Longer than the fence window: a client that knew only this member would fence.
constexpr int64_t kLongOutageMs = kTtlMs;
constexpr int64_t kShortOutageMs = 600;
// Longer than an election (etcd waits 1 to 2 election timeouts): a new leader meanwhile.
constexpr int64_t kFreezeMs = 2200;
// At least half the renew period (ttl/3), so that the two servers, renewing at their
// own moments, are both that recent at some point of every period.
constexpr int64_t kRenewedWithinMs = 900;

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

// Pulls Snowflake IDs from one server as fast as a small pause allows, keeping every
// ID, and measures runs of failed requests: from the first failure sent to the next
// success sent.
class Loader {
 public:
  Loader(int port, Clock::time_point origin) : port_(port), origin_(origin) {}
  ~Loader() { finish(); }  // a failed ASSERT leaves the test early
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void finish() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

  std::vector<uint64_t> ids;
  int64_t requests = 0;
  int64_t failures = 0;
  int64_t runs = 0;
  int64_t longest_run_ms = 0;
  std::string run_list;             // "+OFFSET ms: LENGTH ms" of each run, from the origin
  std::vector<std::string> errors;  // the first few

 private:
  void run() {
    HttpClient http(port_);
    bool failing = false;
    Clock::time_point run_start{};  // the first failure of the run under way
    while (!done_) {
      const auto sent = Clock::now();
      Result<HttpReply> reply = http.get("/v1/snowflake?count=20&format=text", milliseconds(2000));
      ++requests;
      if (reply.ok() && reply->status == 200) {
        size_t pos = 0;
        const std::string& body = reply->body;
        while (pos < body.size()) {
          const size_t end = body.find('\n', pos);
          ids.push_back(std::stoull(body.substr(pos, end - pos)));
          pos = end == std::string::npos ? body.size() : end + 1;
        }
        if (failing) end_run(run_start, sent);
        failing = false;
      } else {
        ++failures;
        if (!failing) {
          failing = true;
          run_start = sent;
          ++runs;
        }
        if (errors.size() < 5) {
          errors.push_back(reply.ok() ? std::to_string(reply->status) + " " + reply->body
                                      : reply.status().to_string());
        }
      }
      std::this_thread::sleep_for(milliseconds(3));
    }
    if (failing) end_run(run_start, Clock::now());
  }

  void end_run(Clock::time_point start, Clock::time_point end) {
    longest_run_ms = std::max(longest_run_ms, ms_between(start, end));
    run_list += " +" + std::to_string(ms_between(origin_, start)) + ": " +
                std::to_string(ms_between(start, end)) + " ms;";
  }

  int port_;
  Clock::time_point origin_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Polls each server's /v1/status: the lease must stay `held` and the generator unfenced.
class LeaseWatcher {
 public:
  explicit LeaseWatcher(std::vector<int> ports) : ports_(std::move(ports)) {}
  ~LeaseWatcher() { finish(); }
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void finish() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

  int64_t polls = 0;
  int64_t not_held = 0;              // polls that saw another state, or fenced
  std::vector<std::string> seen;     // the first few of those
  std::vector<nlohmann::json> last;  // per server, its last lease object

 private:
  void run() {
    std::vector<std::unique_ptr<HttpClient>> http;
    for (int port : ports_) http.push_back(std::make_unique<HttpClient>(port));
    last.resize(ports_.size());
    while (!done_) {
      for (size_t i = 0; i < ports_.size(); ++i) {
        Result<HttpReply> reply = http[i]->get("/v1/status", milliseconds(2000));
        if (!reply.ok() || reply->status != 200) continue;
        nlohmann::json status = nlohmann::json::parse(reply->body, nullptr, false);
        if (!status.is_object() || !status.contains("lease")) continue;
        ++polls;
        last[i] = status["lease"];
        if (status["lease"]["state"] != "held" || status["fenced"] != false) {
          ++not_held;
          if (seen.size() < 5) {
            seen.push_back("server " + std::to_string(i) + ": " + status["lease"].dump() +
                           " fenced " + status["fenced"].dump());
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  }

  std::vector<int> ports_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Waits until every server renewed its lease within the last `within_ms` (as its
// /v1/status says), so that the next fault starts with most of the fence window ahead:
// one fault at a time is what the test asks the servers to ride out (two leader losses
// within one renew period can use up a short TTL on elections alone).
void wait_renewed(const std::vector<int>& ports, int64_t within_ms) {
  std::vector<std::unique_ptr<HttpClient>> http;
  for (int port : ports) http.push_back(std::make_unique<HttpClient>(port));
  const auto start = Clock::now();
  std::string last;
  while (ms_since(start) < 5000) {
    bool all = true;
    for (auto& h : http) {
      Result<HttpReply> reply = h->get("/v1/status", milliseconds(2000));
      nlohmann::json status =
          reply.ok() ? nlohmann::json::parse(reply->body, nullptr, false) : nlohmann::json();
      if (!status.is_object() || !status.contains("lease")) {
        all = false;
        continue;
      }
      const nlohmann::json& lease = status["lease"];
      last = lease.dump();
      const double since_ms =
          lease["ttl_ms"].get<double>() - lease["seconds_left"].get<double>() * 1000.0;
      all = all && since_ms <= static_cast<double>(within_ms);
    }
    if (all) return;
    sleep_ms(20);
  }
  ADD_FAILURE() << "no renew within " << within_ms << " ms for 5 s: " << last;
}

// Records when each fault began and ended, for the figures.
struct Timeline {
  Clock::time_point origin;
  std::string text;
  void mark(const std::string& what) {
    text += " +" + std::to_string(ms_between(origin, Clock::now())) + " " + what + ";";
  }
};

// One member down for `down_ms` (SIGKILL), then started again with its data.
void kill_for(const Server& member, size_t index, int64_t down_ms, Timeline* timeline) {
  auto& sv = Services::get();
  timeline->mark("kill member " + std::to_string(index));
  ASSERT_TRUE(sv.kill(member).ok()) << member.dir;
  sleep_ms(down_ms);
  ASSERT_TRUE(sv.restart(member).ok()) << member.dir;
  timeline->mark("restarted");
}

TEST(EtcdClusterTest, ServersKeepIssuingWhileEachMemberIsKilledRestartedOrFrozen) {
  const auto test_start = Clock::now();
  Result<EtcdCluster> cluster = start_etcd_cluster("etcd-cluster");
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  const std::string registry =
      cluster->url + "?ttl_ms=" + std::to_string(kTtlMs) + "&cluster=" + unique_tag("ec");
  std::vector<std::unique_ptr<ServeNode>> servers;
  for (const char* name : {"ec-node-a", "ec-node-b"}) {
    Result<std::unique_ptr<ServeNode>> node =
        ServeNode::start(Services::get().make_dir(name),
                         {"--registry", registry, "--identity", std::string(name) + ":1"});
    ASSERT_TRUE(node.ok()) << node.status().to_string();
    servers.push_back(std::move(node).value());
  }
  const std::vector<int> ports = {servers[0]->http_port(), servers[1]->http_port()};
  Timeline timeline{Clock::now(), ""};
  std::vector<std::unique_ptr<Loader>> loaders;
  for (int port : ports) {
    loaders.push_back(std::make_unique<Loader>(port, timeline.origin));
    loaders.back()->start();
  }
  LeaseWatcher watcher(ports);
  watcher.start();

  // The first member (which both servers use first) stays down longer than a lease's
  // fence window; then the leader and the member not killed yet go down briefly.
  auto& sv = Services::get();
  std::vector<bool> killed(cluster->members.size(), false);
  wait_renewed(ports, kRenewedWithinMs);
  kill_for(cluster->members[0], 0, kLongOutageMs, &timeline);
  killed[0] = true;
  wait_renewed(ports, kRenewedWithinMs);
  Result<size_t> leader = etcd_leader(*cluster);
  ASSERT_TRUE(leader.ok()) << leader.status().to_string();
  kill_for(cluster->members[*leader], *leader, kShortOutageMs, &timeline);
  killed[*leader] = true;
  for (size_t m = 0; m < killed.size(); ++m) {
    if (killed[m]) continue;
    wait_renewed(ports, kRenewedWithinMs);
    kill_for(cluster->members[m], m, kShortOutageMs, &timeline);
  }
  // The leader frozen: its port accepts connections that are never answered, and the
  // others elect a new leader only after the election timeout.
  wait_renewed(ports, kRenewedWithinMs);
  leader = etcd_leader(*cluster);
  ASSERT_TRUE(leader.ok()) << leader.status().to_string();
  timeline.mark("freeze member " + std::to_string(*leader) + " (the leader)");
  ASSERT_TRUE(sv.pause(cluster->members[*leader]).ok());
  sleep_ms(kFreezeMs);
  ASSERT_TRUE(sv.resume(cluster->members[*leader]).ok());
  timeline.mark("resumed");
  sleep_ms(500);

  watcher.finish();
  for (auto& loader : loaders) loader->finish();

  std::vector<uint64_t> all;
  for (size_t i = 0; i < loaders.size(); ++i) {
    const Loader& l = *loaders[i];
    std::string errors;
    for (const std::string& e : l.errors) errors += "\n  " + e;
    // The figures docs/reliability.md quotes.
    std::printf(
        "server %zu: %lld requests, %lld failed in %lld runs (%s), the longest %lld ms; "
        "lease %s%s\n",
        i, static_cast<long long>(l.requests), static_cast<long long>(l.failures),
        static_cast<long long>(l.runs), l.run_list.c_str(),
        static_cast<long long>(l.longest_run_ms), watcher.last[i].dump().c_str(), errors.c_str());
    EXPECT_GT(l.ids.size(), 1000u) << "server " << i;
    EXPECT_LT(l.longest_run_ms, kRequestTimeoutMs)
        << "server " << i << " failed requests for " << l.longest_run_ms << " ms:" << errors;
    all.insert(all.end(), l.ids.begin(), l.ids.end());
  }
  std::printf("faults:%s\n", timeline.text.c_str());
  std::string seen;
  for (const std::string& s : watcher.seen) seen += "\n  " + s;
  EXPECT_GT(watcher.polls, 100);
  EXPECT_EQ(watcher.not_held, 0) << "a lease was not held, or a server fenced:" << seen;
  ASSERT_EQ(watcher.last.size(), 2u);
  EXPECT_NE(watcher.last[0]["slot"], watcher.last[1]["slot"]) << "two servers, one worker id";
  for (const nlohmann::json& lease : watcher.last) {
    EXPECT_EQ(lease["leases_taken"], 1) << lease.dump();  // the first lease, kept throughout
  }
  const size_t issued = all.size();
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), issued) << "an ID was issued twice";

  for (auto& server : servers) EXPECT_TRUE(server->stop().ok()) << server->stderr_tail();
  EXPECT_TRUE(sv.stop(Server{ServerKind::kEtcd, cluster->dir, cluster->url}).ok());
  std::printf("wall time %lld ms\n", static_cast<long long>(ms_since(test_start)));
}

// What the client refuses or reports only once it reaches the members: a URL naming
// members of two different etcd clusters (a call moving on to the other would find
// every slot free again), and members none of which answers.
TEST(EtcdClusterTest, MembersOfTwoClustersAreRefusedAndNoMemberAnsweringNamesEach) {
  RegistryOptions options = registry_options(unique_tag("ec-two"), kTtlMs);
  Result<std::string> shared = Services::get().etcd_url();
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  Result<Server> other = Services::get().start_private(ServerKind::kEtcd, "ec-other");
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  const std::string mixed = *shared + "," + other->url.substr(7);
  auto refused = coord::open_etcd_registry(mixed, options);
  ASSERT_FALSE(refused.ok()) << mixed;
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().to_string();
  for (const std::string& url : {*shared, other->url}) {
    EXPECT_NE(refused.status().message().find(url), std::string::npos)
        << refused.status().message();
  }
  EXPECT_NE(refused.status().message().find("one cluster"), std::string::npos);
  EXPECT_TRUE(Services::get().stop(*other).ok());

  std::vector<std::string> nobody;
  while (nobody.size() < 3) {
    const std::string member = "127.0.0.1:" + std::to_string(test_support::unused_loopback_port());
    if (std::find(nobody.begin(), nobody.end(), member) == nobody.end()) nobody.push_back(member);
  }
  const auto started = Clock::now();
  auto none =
      coord::open_etcd_registry("etcd://" + nobody[0] + "," + nobody[1] + "," + nobody[2], options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status().to_string();
  for (const std::string& member : nobody) {
    EXPECT_NE(none.status().message().find("etcd://" + member + ": cannot connect"),
              std::string::npos)
        << none.status().message();
  }
  EXPECT_LT(ms_since(started), 2000);
}

}  // namespace etcd_cluster_test
}  // namespace idforge::integration
