// The systemd watchdog of `idforge serve` (server/app/systemd_notify.h): it pings every half
// interval while its checks pass and stops, saying why once, when one fails; the
// server's checks see a stuck event loop (NetServer::loops_responsive) and are wired to
// the lease keeper's rounds (whose staleness is tested in
// tests/unit/coord/lease_keeper_round_test.cc). tests/e2e/serve_systemd_test.cc runs the real
// binary against a notify socket.
//
// Seen to fail with the guard taken out: with the ping made unconditional in
// Watchdog::run, AFailingCheckStopsThePingsUntilItPassesAgain and
// AStuckEventLoopStopsTheServersWatchdogPings fail ("pinged ... while"); with
// loops_responsive answering true without waiting for the loops, the NetServerWatchdogTest
// and both ServerWatchdogTest tests fail.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/app/systemd_notify.h"
#include "server/net/net_server.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

template <typename Pred>
bool eventually(Pred pred, Ms limit = 3s) {
  const auto end = Steady::now() + limit;
  while (!pred()) {
    if (Steady::now() > end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// What a Watchdog reported through on_change, in order ("" = resumed).
class Changes {
 public:
  void add(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(why);
  }
  std::vector<std::string> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
};

WatchdogOptions counting(std::chrono::microseconds interval, std::atomic<int>& pings,
                         Changes& changes) {
  WatchdogOptions o;
  o.interval = interval;
  o.ping = [&pings] { pings.fetch_add(1); };
  o.on_change = [&changes](const std::string& why) { changes.add(why); };
  return o;
}

TEST(WatchdogTest, PingsEveryHalfIntervalWhileEveryCheckPasses) {
  std::atomic<int> pings{0};
  Changes changes;
  WatchdogOptions o = counting(40ms, pings, changes);
  o.checks = {[] { return std::string(); }, [] { return std::string(); }};
  {
    Watchdog dog(std::move(o));
    std::this_thread::sleep_for(500ms);
    // Every 20 ms: about 25; a loaded machine may lose some rounds, never most.
    EXPECT_GE(pings.load(), 10);
    EXPECT_LE(pings.load(), 30);
  }
  EXPECT_TRUE(changes.seen().empty());
}

TEST(WatchdogTest, AFailingCheckStopsThePingsUntilItPassesAgain) {
  std::atomic<int> pings{0};
  std::atomic<bool> loop_ok{true};
  Changes changes;
  WatchdogOptions o = counting(40ms, pings, changes);
  std::atomic<int> second_check_runs{0};
  o.checks = {[&loop_ok] { return loop_ok ? std::string() : std::string("loop 1 is stuck"); },
              [&second_check_runs] {
                second_check_runs.fetch_add(1);
                return std::string();
              }};
  Watchdog dog(std::move(o));
  ASSERT_TRUE(eventually([&] { return pings.load() >= 3; }));

  loop_ok = false;
  ASSERT_TRUE(eventually([&] { return !changes.seen().empty(); }));
  const int pings_when_stopped = pings.load();
  const int second_runs = second_check_runs.load();
  std::this_thread::sleep_for(300ms);  // about 15 rounds
  EXPECT_EQ(pings.load(), pings_when_stopped) << "pinged while a check failed";
  EXPECT_EQ(second_check_runs.load(), second_runs) << "checks after the failing one ran";
  EXPECT_EQ(changes.seen(), std::vector<std::string>{"loop 1 is stuck"}) << "said more than once";

  loop_ok = true;
  EXPECT_TRUE(eventually([&] { return pings.load() > pings_when_stopped + 2; }));
  EXPECT_EQ(changes.seen(), (std::vector<std::string>{"loop 1 is stuck", ""}));
}

TEST(WatchdogTest, StopsAtOnceWhenDestroyed) {
  std::atomic<int> pings{0};
  Changes changes;
  auto dog = std::make_unique<Watchdog>(counting(std::chrono::hours(1), pings, changes));
  ASSERT_TRUE(eventually([&] { return pings.load() == 1; }));  // the first round is at once
  const Steady::time_point before = Steady::now();
  dog.reset();
  EXPECT_LT(Steady::now() - before, 1s);
}

// A session that blocks its event loop's thread on its first bytes until released: a
// handler stuck as a bug (or a backend call that should have been kBlocking) would.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool open = false;

  void block() {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
  }
  bool wait_entered(Ms limit) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, limit, [this] { return entered; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

class BlockingSession : public Session {
 public:
  explicit BlockingSession(Gate& gate) : gate_(gate) {}
  Step feed(std::string_view in, std::string&) override {
    gate_.block();
    Step step;
    step.consumed = in.size();
    step.next = Next::kClose;
    return step;
  }

 private:
  Gate& gate_;
};

// Connects to 127.0.0.1:port and sends one byte; the descriptor, or -1.
int connect_and_send(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::send(fd, "x", 1, MSG_NOSIGNAL) != 1) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A running NetServer whose sessions block on `gate`; released before the shutdown,
// which would otherwise wait for the stuck loop forever.
class ServedNet {
 public:
  ServedNet() {
    NetOptions o;
    o.io_threads = 2;
    o.worker_threads = 1;
    net = std::make_unique<NetServer>(o);
    Result<Endpoint> bound = net->listen(
        "127.0.0.1:0", "test", [this] { return std::make_unique<BlockingSession>(gate); });
    EXPECT_TRUE(bound.ok()) << bound.status().to_string();
    if (bound.ok()) port = bound->port;
    EXPECT_TRUE(net->start().ok());
  }
  ~ServedNet() {
    gate.release();
    if (fd >= 0) ::close(fd);
    net->shutdown(0ms);
  }
  // Wedges the loop that takes the connection; false if it did not get there.
  bool wedge_a_loop() {
    fd = connect_and_send(port);
    return fd >= 0 && gate.wait_entered(5s);
  }

  Gate gate;
  std::unique_ptr<NetServer> net;
  uint16_t port = 0;
  int fd = -1;
};

TEST(NetServerWatchdogTest, AStuckEventLoopFailsTheResponsivenessCheck) {
  ServedNet served;
  EXPECT_TRUE(served.net->loops_responsive(2s));

  ASSERT_TRUE(served.wedge_a_loop());
  const Steady::time_point before = Steady::now();
  EXPECT_FALSE(served.net->loops_responsive(100ms));
  EXPECT_LT(Steady::now() - before, 2s) << "waited far past its bound";

  served.gate.release();
  EXPECT_TRUE(served.net->loops_responsive(2s));  // the queued no-ops have run by now
}

class ServerWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-watchdog-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ServiceConfig c;
    c.data_dir = dir_ + "/data";
    c.identity = "test:watchdog";
    Result<std::unique_ptr<IdService>> s = IdService::start(std::move(c));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    service_ = std::move(s).value();
  }
  void TearDown() override {
    if (service_) {
      EXPECT_TRUE(service_->stop().ok());
    }
    service_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<IdService> service_;
};

TEST_F(ServerWatchdogTest, TheServersChecksPassWhileItServesAndNameWhatIsStuck) {
  ServedNet served;
  // A 400 ms watchdog: a loop must answer within 100 ms.
  std::vector<std::function<std::string()>> checks =
      server_watchdog_checks(*served.net, *service_, 400ms);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0](), "");
  EXPECT_EQ(checks[1](), "");  // the keeper came round within kKeeperStuckAfter

  // The keeper check reads the real keeper: with a limit shorter than any round, it fails.
  std::vector<std::function<std::string()>> strict =
      server_watchdog_checks(*served.net, *service_, 400ms, std::chrono::nanoseconds(0));
  EXPECT_NE(strict[1]().find("lease keeper's renew thread has not come round"), std::string::npos)
      << strict[1]();

  ASSERT_TRUE(served.wedge_a_loop());
  EXPECT_EQ(checks[0](), "an event loop did not run a posted no-op within 100 ms");
  EXPECT_EQ(checks[1](), "");
  served.gate.release();
}

TEST_F(ServerWatchdogTest, AStuckEventLoopStopsTheServersWatchdogPings) {
  ServedNet served;
  std::atomic<int> pings{0};
  Changes changes;
  WatchdogOptions o = counting(200ms, pings, changes);
  o.checks = server_watchdog_checks(*served.net, *service_, o.interval);
  Watchdog dog(std::move(o));
  ASSERT_TRUE(eventually([&] { return pings.load() >= 3; })) << pings.load();

  ASSERT_TRUE(served.wedge_a_loop());
  ASSERT_TRUE(eventually([&] { return !changes.seen().empty(); }));
  const int pings_when_stopped = pings.load();
  std::this_thread::sleep_for(600ms);  // 6 rounds
  EXPECT_EQ(pings.load(), pings_when_stopped) << "pinged systemd with an event loop stuck";
  EXPECT_EQ(changes.seen(),
            std::vector<std::string>{"an event loop did not run a posted no-op within 50 ms"});

  served.gate.release();
  EXPECT_TRUE(eventually([&] { return pings.load() > pings_when_stopped; }));
}

}  // namespace
}  // namespace idforge::server
