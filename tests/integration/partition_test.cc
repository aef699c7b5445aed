// A real network partition on one machine, made with Linux network namespaces
// (integration/netns.h): node A, an `idforge serve`, is cut off from its worker registry
// (etcd) and its segment store (Redis) while its clients still reach it. It must stop
// issuing Snowflake IDs before its lease can expire, and say so; a second node B takes
// A's worker slot once the lease has expired; when the link heals A takes a new lease and
// issues again; no ID, Snowflake or segment, of A and B over the whole run repeats
// (docs/architecture.md, invariants 3 and 5; docs/reliability.md, "Network partition").
//
//   namespace client: the test's HTTP clients, node B       namespace node: node A
//     c-a 10.231.1.1/30 ----------------------------------- a-c 10.231.1.2/30
//     c-s 10.231.3.1/30                                     a-s 10.231.2.1/30
//          |                                                     |
//     s-c 10.231.3.2/30       namespace svc: etcd, Redis    s-a 10.231.2.2/30  <- cut here
//                             on 10.231.0.1 (its loopback)
//
// The cut is `ip link set s-a down` in svc: a silent partition for A (its packets to
// 10.231.0.1 vanish, nothing is refused), the client link untouched. The figures go to
// stdout as "[ partition ] ..." lines.
//
// Shown to fail (docs/contributing.md, "Showing that a guard's test fails"), by hand:
// with the fence taken out (SnowflakeGeneratorImpl::fence a no-op) it failed 8 runs of 8,
// A never fenced, though its time high-water mark still stopped it 1.3 to 2.7 s after
// the cut and nothing repeated (B starts above A's stored mark); with the mark's check in
// SnowflakeGeneratorImpl::claim taken out as well it failed 3 of 3, A issuing throughout
// the cut, on the slot B took, with 21,800 to 35,600 repeated Snowflake IDs. Figures in
// docs/reliability.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "integration/netns.h"
#include "integration/serve_node.h"
#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration {
namespace partition_test {

using Steady = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr int64_t kTtlMs = 3000;
constexpr uint64_t kMaxStep = 1000;
constexpr const char* kServices = "10.231.0.1";  // etcd and Redis, in svc
constexpr const char* kNodeA = "10.231.1.2";     // A's listeners, in node
constexpr const char* kNodeB = "127.0.0.1";      // B's listeners, in client

// One answer a load thread got, at `at_ms` after the test's start.
struct Sample {
  int64_t at_ms = 0;
  int status = 0;  // HTTP status; -1: no answer
  size_t ids = 0;
  std::string error;  // a failure's body
};

// A thread in the client namespace asking one node for IDs over and over (one request
// about every millisecond), keeping every answer and every ID.
class Load {
 public:
  Load(const NetnsLab& lab, Steady::time_point epoch, std::string host, int port,
       std::string target)
      : thread_([this, &lab, epoch, host = std::move(host), port, target = std::move(target)] {
          if (!lab.enter("client").ok()) return;
          HttpClient http(port, host);
          while (!done_.load()) {
            Result<HttpReply> r = http.get(target, Ms(3000));
            Sample s;
            s.at_ms = std::chrono::duration_cast<Ms>(Steady::now() - epoch).count();
            s.status = r.ok() ? r->status : -1;
            if (s.status == 200) {
              for (size_t at = 0; at < r->body.size();) {
                const size_t end = r->body.find('\n', at);
                ids.push_back(std::stoull(r->body.substr(at, end - at)));
                ++s.ids;
                at = end == std::string::npos ? r->body.size() : end + 1;
              }
              last_ok_ms.store(s.at_ms);
            } else {
              s.error = r.ok() ? r->body : r.status().to_string();
            }
            samples.push_back(std::move(s));
            std::this_thread::sleep_for(Ms(1));
          }
        }) {}
  ~Load() { stop(); }

  void stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  // The first sample in [from, to) with `ok` (status 200) or not, and a failure's body
  // holding `text`; nullptr if none.
  const Sample* first(int64_t from, int64_t to, bool ok, const std::string& text = "") const {
    for (const Sample& s : samples) {
      if (s.at_ms >= from && s.at_ms < to && (s.status == 200) == ok &&
          s.error.find(text) != std::string::npos) {
        return &s;
      }
    }
    return nullptr;
  }
  // How many of `ids` were received before `at`.
  size_t ids_before(int64_t at) const { return ids_between(INT64_MIN, at); }
  // IDs received in [from, to).
  size_t ids_between(int64_t from, int64_t to) const {
    size_t n = 0;
    for (const Sample& s : samples) n += s.at_ms >= from && s.at_ms < to ? s.ids : 0;
    return n;
  }

  // Written by the thread only; read after stop().
  std::vector<Sample> samples;
  std::vector<uint64_t> ids;
  std::atomic<int64_t> last_ok_ms{-1};  // of the last success, readable any time

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

std::mt19937_64& random_engine() {
  static std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

size_t repeats(std::vector<uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  size_t n = 0;
  for (size_t i = 1; i < ids.size(); ++i) n += ids[i] == ids[i - 1];
  return n;
}

// The twitter layout: 41 bits of time, a 10-bit slot (datacenter and worker), 12 of
// sequence.
uint64_t slot_of(uint64_t id) { return (id >> 12) & 0x3ff; }
uint64_t tick_of(uint64_t id) { return id >> 22; }

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = netns_unusable_reason(); !why.empty()) GTEST_SKIP() << why;
    Result<std::unique_ptr<NetnsLab>> lab = NetnsLab::create({"client", "node", "svc"});
    ASSERT_TRUE(lab.ok()) << lab.status().to_string();
    lab_ = std::move(lab).value();
    const std::string services = std::string(kServices) + "/32";
    Status built = [&]() -> Status {
      NetnsLab& l = *lab_;
      IDFORGE_RETURN_IF_ERROR(
          l.link("client", "c-a", "10.231.1.1/30", "node", "a-c", "10.231.1.2/30"));
      IDFORGE_RETURN_IF_ERROR(
          l.link("node", "a-s", "10.231.2.1/30", "svc", "s-a", "10.231.2.2/30"));
      IDFORGE_RETURN_IF_ERROR(
          l.link("client", "c-s", "10.231.3.1/30", "svc", "s-c", "10.231.3.2/30"));
      IDFORGE_RETURN_IF_ERROR(l.add_address("svc", "lo", services));
      IDFORGE_RETURN_IF_ERROR(l.add_route("node", services, "10.231.2.2"));
      return l.add_route("client", services, "10.231.3.2");
    }();
    ASSERT_TRUE(built.ok()) << built.to_string();
  }

  // `idforge ARGS...` run inside the client namespace.
  test_support::RunResult idforge_in_client(std::vector<std::string> args) {
    std::vector<std::string> argv = lab_->exec_prefix("client");
    argv.push_back(idforge_bin());
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string dir = Services::get().make_dir("part-cli");
    argv.insert(argv.end(), {"--data-dir", dir + "/data"});
    return test_support::run_command(argv, dir + "/run");
  }

  // GET `target` of `node` from the client namespace, as JSON (null when it fails).
  nlohmann::json get_json(const ServeNode& node, const std::string& target) {
    nlohmann::json json;
    Status in = lab_->run_in("client", [&] {
      HttpClient http(node.http_port(), node.host());
      Result<HttpReply> r = http.get(target, Ms(3000));
      if (r.ok()) json = nlohmann::json::parse(r->body, nullptr, false);
    });
    EXPECT_TRUE(in.ok()) << in.to_string();
    return json;
  }

  std::unique_ptr<NetnsLab> lab_;  // first: it outlives the nodes that run inside it
};

TEST_F(PartitionTest, ACutOffNodeIsFencedBeforeItsLeaseCanExpireAndNoIdRepeats) {
  Services& sv = Services::get();
  const std::vector<std::string> host = {"--host", kServices};
  Result<Server> etcd =
      sv.start_private_under(lab_->exec_prefix("svc"), ServerKind::kEtcd, "part-etcd", host);
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Result<Server> redis =
      sv.start_private_under(lab_->exec_prefix("svc"), ServerKind::kRedis, "part-redis", host);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  const std::string registry =
      etcd->url + "?ttl_ms=" + std::to_string(kTtlMs) + "&cluster=" + unique_tag("part");
  const std::string tag = unique_tag("part");
  test_support::RunResult created = idforge_in_client(
      {"tag", "create", tag, "--step", "100", "--store", redis->url, "--registry", registry});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  // A step of at most kMaxStep, so that A's two segment buffers run dry soon after the
  // cut; a short segment wait, so that a refused segment request does not hold its thread.
  auto node_args = [&](const std::string& identity) {
    return std::vector<std::string>{
        "--registry",        registry, "--store",    redis->url,
        "--identity",        identity, "--max-step", std::to_string(kMaxStep),
        "--segment-wait-ms", "200"};
  };
  Result<std::unique_ptr<ServeNode>> a = ServeNode::start(
      sv.make_dir("part-a"), node_args("node-a"), lab_->exec_prefix("node"), kNodeA);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Status ready = Status::Ok();
  ASSERT_TRUE(lab_->run_in("client", [&] { ready = (*a)->await_ready("all", Ms(15000)); }).ok());
  ASSERT_TRUE(ready.ok()) << ready.to_string() << (*a)->stderr_tail();
  nlohmann::json a_before = get_json(**a, "/v1/status");
  ASSERT_TRUE(a_before.is_object()) << "no /v1/status from A";
  const uint64_t slot = a_before["lease"]["slot"].get<uint64_t>();

  const auto epoch = Steady::now();
  auto now_ms = [&] { return std::chrono::duration_cast<Ms>(Steady::now() - epoch).count(); };
  const std::string snowflake = "/v1/snowflake?count=100&format=text";
  const std::string segment = "/v1/segment/" + tag + "?count=10&format=text";
  Load a_snowflake(*lab_, epoch, kNodeA, (*a)->http_port(), snowflake);
  Load a_segment(*lab_, epoch, kNodeA, (*a)->http_port(), segment);
  // The cut falls anywhere in the keeper's renew period (ttl/3), so that runs see it
  // both just after and just before a renew (A fences from 2/3 of the TTL to nearly all
  // of it after the cut).
  std::this_thread::sleep_for(
      Ms(1000 + std::uniform_int_distribution<int64_t>(0, kTtlMs / 3)(random_engine())));

  // The cut. Then wait until the registry shows A's lease gone, as an operator sees it.
  ASSERT_TRUE(lab_->set_up("svc", "s-a", false).ok());
  const int64_t cut_ms = now_ms();
  int64_t freed_ms = -1;
  while (freed_ms < 0 && now_ms() < cut_ms + kTtlMs + 10'000) {
    test_support::RunResult st =
        idforge_in_client({"worker", "status", "--registry", registry, "--json"});
    const nlohmann::json taken = nlohmann::json::parse(st.out, nullptr, false);
    if (st.exit_code == 0 && taken.is_object() && taken["taken"].empty()) freed_ms = now_ms();
    if (freed_ms < 0) std::this_thread::sleep_for(Ms(100));
  }
  ASSERT_GE(freed_ms, 0) << "A's lease never expired in the registry";
  nlohmann::json a_cut = get_json(**a, "/v1/status");

  // B takes a slot now: the first free one, which is A's.
  Result<std::unique_ptr<ServeNode>> b = ServeNode::start(
      sv.make_dir("part-b"), node_args("node-b"), lab_->exec_prefix("client"), kNodeB);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_TRUE(lab_->run_in("client", [&] { ready = (*b)->await_ready("all", Ms(15000)); }).ok());
  ASSERT_TRUE(ready.ok()) << ready.to_string() << (*b)->stderr_tail();
  const int64_t b_ready_ms = now_ms();
  nlohmann::json b_status = get_json(**b, "/v1/status");
  Load b_snowflake(*lab_, epoch, kNodeB, (*b)->http_port(), snowflake);
  Load b_segment(*lab_, epoch, kNodeB, (*b)->http_port(), segment);
  std::this_thread::sleep_for(Ms(1500));

  // The heal; A should find its lease lost, take another and issue again.
  ASSERT_TRUE(lab_->set_up("svc", "s-a", true).ok());
  const int64_t heal_ms = now_ms();
  const auto back_by = Steady::now() + Ms(15'000);
  while (Steady::now() < back_by && a_snowflake.last_ok_ms.load() < heal_ms) {
    std::this_thread::sleep_for(Ms(50));
  }
  std::this_thread::sleep_for(Ms(1000));
  const int64_t end_ms = now_ms();
  for (Load* l : {&a_snowflake, &a_segment, &b_snowflake, &b_segment}) l->stop();
  nlohmann::json a_after = get_json(**a, "/v1/status");
  nlohmann::json b_after = get_json(**b, "/v1/status");

  // Snowflake: A stopped before its lease could expire: its time high-water mark may run
  // out first (it is kept between the fence window less a second and the whole window
  // ahead), then the fence answers, naming how long the lease went without a renew.
  // (A sample at the heal stands for one that never came.)
  const Sample never{heal_ms, 0, 0, "none"};
  const Sample* first_refusal = a_snowflake.first(cut_ms, heal_ms, false);
  const Sample& refused = first_refusal ? *first_refusal : never;
  const int64_t refused_ms = first_refusal ? refused.at_ms - cut_ms : -1;
  const std::string kFence = "not renewed for ";
  const Sample* first_fenced = a_snowflake.first(cut_ms, heal_ms, false, kFence);
  const Sample& fenced = first_fenced ? *first_fenced : never;
  const int64_t fence_ms = first_fenced ? fenced.at_ms - cut_ms : -1;
  const int64_t unrenewed_ms =
      first_fenced ? std::atoll(fenced.error.c_str() + fenced.error.find(kFence) + kFence.size())
                   : -1;
  const Sample* a_back = a_snowflake.first(heal_ms, INT64_MAX, true);
  // Segments: what A still served from its buffers, then refusals.
  const Sample* seg_refused = a_segment.first(cut_ms, heal_ms, false);
  const size_t seg_after_cut =
      a_segment.ids_between(cut_ms, seg_refused ? seg_refused->at_ms : heal_ms);
  const Sample* seg_back = a_segment.first(heal_ms, INT64_MAX, true);

  std::vector<uint64_t> snowflakes = a_snowflake.ids;
  snowflakes.insert(snowflakes.end(), b_snowflake.ids.begin(), b_snowflake.ids.end());
  std::vector<uint64_t> segments = a_segment.ids;
  segments.insert(segments.end(), b_segment.ids.begin(), b_segment.ids.end());
  const size_t snowflake_repeats = repeats(snowflakes);
  const size_t segment_repeats = repeats(segments);
  // The last tick A issued on the slot and the first B issued on it.
  // The last tick A issued on the slot before the heal, and the first B issued on it.
  uint64_t a_last_tick = 0, b_first_tick = UINT64_MAX;
  for (size_t i = 0; i < a_snowflake.ids_before(heal_ms); ++i) {
    const uint64_t id = a_snowflake.ids[i];
    if (slot_of(id) == slot) a_last_tick = std::max(a_last_tick, tick_of(id));
  }
  for (uint64_t id : b_snowflake.ids) {
    if (slot_of(id) == slot) b_first_tick = std::min(b_first_tick, tick_of(id));
  }
  std::printf(
      "[ partition ] ttl %lld ms; A (slot %llu) first refused %lld ms after the cut (%zu "
      "Snowflake IDs after the cut until then), fenced %lld ms after it, its lease not renewed "
      "for %lld ms; lease gone from the registry %lld ms after the cut; B ready %lld ms after "
      "it\n",
      static_cast<long long>(kTtlMs), static_cast<unsigned long long>(slot),
      static_cast<long long>(refused_ms), a_snowflake.ids_between(cut_ms, refused.at_ms),
      static_cast<long long>(fence_ms), static_cast<long long>(unrenewed_ms),
      static_cast<long long>(freed_ms - cut_ms), static_cast<long long>(b_ready_ms - cut_ms));
  std::printf("[ partition ] A's first refusal: %s\n[ partition ] A's fence: %s\n",
              refused.error.c_str(), fenced.error.c_str());
  std::printf(
      "[ partition ] A's segments: %zu IDs after the cut, refused %lld ms after it; healed "
      "%lld ms after the cut; A issued Snowflake IDs again %lld ms and segments %lld ms after "
      "the heal\n",
      seg_after_cut, seg_refused ? static_cast<long long>(seg_refused->at_ms - cut_ms) : -1LL,
      static_cast<long long>(heal_ms - cut_ms),
      a_back ? static_cast<long long>(a_back->at_ms - heal_ms) : -1LL,
      seg_back ? static_cast<long long>(seg_back->at_ms - heal_ms) : -1LL);
  std::printf(
      "[ partition ] %zu Snowflake IDs (A %zu, B %zu), %zu repeated; %zu segment IDs (A %zu, "
      "B %zu), %zu repeated; slot %llu: A's last tick %llu, B's first %llu; %lld ms of load\n",
      snowflakes.size(), a_snowflake.ids.size(), b_snowflake.ids.size(), snowflake_repeats,
      segments.size(), a_segment.ids.size(), b_segment.ids.size(), segment_repeats,
      static_cast<unsigned long long>(slot), static_cast<unsigned long long>(a_last_tick),
      static_cast<unsigned long long>(b_first_tick), static_cast<long long>(end_ms));
  std::printf("[ partition ] at the end: A's lease %s, B's lease %s\n",
              a_after["lease"].dump().c_str(), b_after["lease"].dump().c_str());

  // A stopped issuing, and was fenced, before its lease could expire: the coordinator's
  // TTL runs from a renew's arrival, after the keeper sent it, and the cut came after
  // the last renew that arrived.
  EXPECT_NE(first_refusal, nullptr) << "A issued Snowflake IDs throughout the cut";
  EXPECT_LT(refused_ms, kTtlMs) << "A's first refusal came only after the TTL";
  EXPECT_EQ(refused.status, 503) << refused.error;
  EXPECT_NE(first_fenced, nullptr) << "A was never fenced; its first refusal: " << refused.error;
  EXPECT_LT(fence_ms, kTtlMs) << fenced.error;
  EXPECT_LT(unrenewed_ms, kTtlMs) << fenced.error;
  EXPECT_EQ(a_cut["fenced"], true) << a_cut.dump();
  EXPECT_EQ(a_cut["lease"]["state"], "overdue") << a_cut.dump();
  EXPECT_EQ(a_snowflake.first(refused.at_ms, heal_ms, true), nullptr)
      << "A issued again while still cut off";
  // B took A's slot after it expired; the two never overlapped on it.
  EXPECT_EQ(b_status["lease"]["slot"], slot) << b_status.dump();
  EXPECT_GT(b_snowflake.ids.size(), 0u);
  EXPECT_LT(a_last_tick, b_first_tick)
      << "cut off, A issued on the slot at or after B's first tick";
  // A's segments stopped once its two buffers were used, and came back.
  EXPECT_NE(seg_refused, nullptr) << "A served segment IDs throughout the cut";
  EXPECT_LE(seg_after_cut, 2 * kMaxStep);
  // Healed: A took a new lease and issues again; two nodes that both hold their lease
  // never share a slot (on a loaded machine B may have lost its own lease meanwhile,
  // and A may then get its old slot back, above B's mark).
  EXPECT_NE(a_back, nullptr) << "A never issued Snowflake IDs again: " << a_after.dump();
  EXPECT_NE(seg_back, nullptr) << "A never served segment IDs again";
  EXPECT_GE(a_after["lease"]["leases_taken"], 2) << a_after.dump();
  if (a_after["lease"]["state"] == "held" && b_after["lease"]["state"] == "held") {
    EXPECT_NE(a_after["lease"]["slot"], b_after["lease"]["slot"])
        << a_after.dump() << b_after.dump();
  }
  // No ID repeats.
  EXPECT_EQ(snowflake_repeats, 0u);
  EXPECT_EQ(segment_repeats, 0u);
  EXPECT_GT(a_snowflake.ids_between(0, cut_ms), 0u);
  EXPECT_GT(a_segment.ids_between(0, cut_ms), 0u);

  EXPECT_TRUE((*a)->stop().ok()) << (*a)->stderr_tail();
  EXPECT_TRUE((*b)->stop().ok()) << (*b)->stderr_tail();
  EXPECT_TRUE(sv.stop(*etcd).ok());
  EXPECT_TRUE(sv.stop(*redis).ok());
}

}  // namespace partition_test
}  // namespace idforge::integration
