// NetServer over real loopback sockets, with a tiny line protocol as the session:
//   PING -> PONG, ECHO x -> x, BIG n -> n 'x's, SLOW -> DONE (a kBlocking job),
//   THROW -> a kBlocking job that throws, QUIT -> BYE and close; on_timeout answers TIMEOUT.
#include "server/net/net_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/line_session.h"

namespace idforge::server {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// A blocking client socket with a receive timeout, so a broken server fails the test
// instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{3, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  void send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Reads until `lines` newlines arrived, the peer closed, or the timeout passed.
  std::string read_lines(int lines) {
    std::string got;
    int seen = 0;
    char c[4096];
    while (seen < lines) {
      const ssize_t n = ::recv(fd_, c, sizeof c, 0);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) seen += c[i] == '\n';
      got.append(c, static_cast<size_t>(n));
    }
    return got;
  }
  // Reads until the peer closes (true) or the timeout passes (false).
  bool wait_closed(std::string* rest = nullptr) {
    char c[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, c, sizeof c, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      if (rest) rest->append(c, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class NetServerTest : public ::testing::Test {
 protected:
  // Starts a server on 127.0.0.1:0 with `options`; port_ is the bound port.
  void start(NetOptions options) {
    server_ = std::make_unique<NetServer>(options);
    Result<Endpoint> bound = server_->listen(
        "127.0.0.1:0", "test", [this] { return std::make_unique<LineSession>(hooks_); });
    ASSERT_TRUE(bound.ok()) << bound.status().to_string();
    port_ = bound->port;
    ASSERT_TRUE(server_->start().ok());
  }
  static NetOptions small(int io_threads = 2) {
    NetOptions o;
    o.io_threads = io_threads;
    o.worker_threads = 2;
    return o;
  }
  // Polls a condition the server reaches asynchronously (counters after a close).
  template <typename Pred>
  static bool eventually(Pred pred, Ms limit = 2s) {
    const auto end = SteadyClock::now() + limit;
    while (!pred()) {
      if (SteadyClock::now() > end) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }

  Hooks hooks_;
  std::unique_ptr<NetServer> server_;
  uint16_t port_ = 0;
};

TEST(ParseEndpointTest, AcceptsIpv4Ipv6AndLocalhost) {
  Result<Endpoint> v4 = parse_endpoint("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8080);
  EXPECT_EQ(v4->to_string(), "127.0.0.1:8080");

  Result<Endpoint> v6 = parse_endpoint("[::1]:6380");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6380);
  EXPECT_EQ(v6->to_string(), "[::1]:6380");

  Result<Endpoint> local = parse_endpoint("localhost:0");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->host, "localhost");
  EXPECT_EQ(local->port, 0);

  Result<Endpoint> any = parse_endpoint("0.0.0.0:65535");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->port, 65535);
}

TEST(ParseEndpointTest, RejectsMalformedTextAndQuotesIt) {
  Result<Endpoint> no_port = parse_endpoint("127.0.0.1");
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(no_port.status().message(), "'127.0.0.1': expected HOST:PORT");

  for (const char* text : {"", "127.0.0.1:", ":80", "127.0.0.1:65536", "127.0.0.1:-1",
                           "127.0.0.1:8x", "127.0.0.1:+80", "example.com:80", "1.2.3:80", "::1:80",
                           "[::1]80", "[::1]", "[::1", "[zz]:80", "[127.0.0.1]:80"}) {
    Result<Endpoint> r = parse_endpoint(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(r.status().message().rfind("'" + std::string(text) + "': ", 0), 0u)
        << r.status().message();
  }
}

TEST_F(NetServerTest, PortZeroBindsARealPort) {
  start(small());
  EXPECT_NE(port_, 0);
  Client c(port_);
  ASSERT_TRUE(c.connected());
  c.send("PING\n");
  EXPECT_EQ(c.read_lines(1), "PONG\n");
}

TEST_F(NetServerTest, ListenRejectsBadEndpointAndBusyPort) {
  start(small());
  NetServer other(small());
  Result<Endpoint> bad = other.listen("127.0.0.1", "http", [] { return nullptr; });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  Result<Endpoint> busy =
      other.listen("127.0.0.1:" + std::to_string(port_), "http", [] { return nullptr; });
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), StatusCode::kIoError);
  EXPECT_NE(busy.status().message().find("http"), std::string::npos);
}

TEST_F(NetServerTest, PipelinedAnswersKeepOrderAroundABlockingJob) {
  start(small());
  Client c(port_);
  c.send("PING\nECHO a\nSLOW\nECHO b\nSLOW\nPING\n");
  EXPECT_EQ(c.read_lines(6), "PONG\na\nDONE\nb\nDONE\nPONG\n");
  // A request split across writes is completed by the next read.
  c.send("ECH");
  std::this_thread::sleep_for(10ms);
  c.send("O c\n");
  EXPECT_EQ(c.read_lines(1), "c\n");
}

TEST_F(NetServerTest, QuitAnswersThenCloses) {
  start(small());
  Client c(port_);
  c.send("PING\nQUIT\nPING\n");
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  EXPECT_EQ(rest, "PONG\nBYE\n");
}

TEST_F(NetServerTest, ManyConnectionsEachGetTheirOwnAnswers) {
  hooks_.job_ms = 2;
  start(small());
  constexpr int kClients = 50;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(port_));
    ASSERT_TRUE(clients.back()->connected());
  }
  for (int i = 0; i < kClients; ++i) {
    clients[i]->send("ECHO " + std::to_string(i) + "\nSLOW\nECHO " + std::to_string(i) + "\n");
  }
  for (int i = 0; i < kClients; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(clients[i]->read_lines(3), n + "\nDONE\n" + n + "\n");
  }
  EXPECT_EQ(server_->stats().connections_total, static_cast<uint64_t>(kClients));
  EXPECT_EQ(server_->stats().connections_open, static_cast<uint64_t>(kClients));
  clients.clear();
  EXPECT_TRUE(eventually([&] { return server_->stats().connections_open == 0; }));
}

// A read that returned less than its buffer leaves the next one to epoll
// (async_read_when_ready, ready_read.h): a client that pauses between requests must
// still be answered, time out, and be seen closing, with several connections on a loop.
TEST_F(NetServerTest, AReadThatDrainedTheSocketWaitsForTheNextRequest) {
  NetOptions o = small(/*io_threads=*/1);
  o.io_spin_us = 0;
  o.idle_timeout_ms = 400;
  start(o);
  Client a(port_);
  Client b(port_);
  auto gone = std::make_unique<Client>(port_);
  for (int i = 0; i < 4; ++i) {
    for (Client* c : {&a, &b, gone.get()}) {
      c->send("ECHO " + std::to_string(i) + "\n");
      ASSERT_EQ(c->read_lines(1), std::to_string(i) + "\n");
    }
    std::this_thread::sleep_for(30ms);  // each connection's read now waits on epoll
  }
  gone.reset();  // its connection is waiting for input: the close must end it
  EXPECT_TRUE(eventually([&] { return server_->stats().connections_open == 2; }));
  // Idle while waiting: the timeout still answers and closes both.
  std::string rest;
  EXPECT_TRUE(a.wait_closed(&rest));
  EXPECT_EQ(rest, "TIMEOUT\n");
  EXPECT_TRUE(b.wait_closed());
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 2; }));
}

// A read that filled its buffer may have left data in the socket, and no new edge comes
// for it while the client waits for answers: the next read must try the socket at once.
TEST_F(NetServerTest, InputLargerThanTheReadBufferIsReadToTheEndWithoutNewData) {
  start(small(/*io_threads=*/1));
  Client c(port_);
  constexpr int kPings = 20'000;  // 100,000 bytes: many times the first 8 KiB buffer
  std::string pings;
  for (int i = 0; i < kPings; ++i) pings += "PING\n";
  c.send(pings);
  std::string want;
  for (int i = 0; i < kPings; ++i) want += "PONG\n";
  EXPECT_EQ(c.read_lines(kPings), want);
}

TEST_F(NetServerTest, BlockingJobDoesNotStallTheLoop) {
  hooks_.job_ms = 400;
  start(small(/*io_threads=*/1));
  Client slow(port_);
  Client fast(port_);
  slow.send("SLOW\n");
  ASSERT_TRUE(eventually([&] { return hooks_.jobs_started.load() == 1; }));
  const auto begin = SteadyClock::now();
  fast.send("PING\n");
  EXPECT_EQ(fast.read_lines(1), "PONG\n");
  EXPECT_LT(SteadyClock::now() - begin, 200ms);
  EXPECT_EQ(hooks_.jobs_done.load(), 0);
  EXPECT_EQ(slow.read_lines(1), "DONE\n");
}

TEST_F(NetServerTest, LargeRequestsAndAnswersPassThrough) {
  start(small());
  Client c(port_);
  // An answer far larger than the socket buffers: written in parts, order kept.
  constexpr size_t kBig = 8 << 20;
  c.send("BIG " + std::to_string(kBig) + "\nPING\n");
  const std::string got = c.read_lines(2);
  ASSERT_EQ(got.size(), kBig + 1 + 5);
  EXPECT_EQ(got.substr(kBig - 2), "xx\nPONG\n");
  // A request larger than the first read buffer grows it.
  const std::string word(100'000, 'w');
  c.send("ECHO " + word + "\nPING\n");
  EXPECT_EQ(c.read_lines(2), word + "\nPONG\n");
}

// Pipelined requests whose answers are far larger than the requests: the session stops
// at kFlushBytes, the runtime writes and feeds the rest without waiting for new bytes,
// so the answers in memory stay bounded and none is lost or reordered.
TEST_F(NetServerTest, AFlushingSessionIsFedAgainWithoutNewInput) {
  start(small());
  Client c(port_);
  constexpr int kRequests = 40;
  constexpr size_t kEach = 100'000;
  std::string pipeline;
  for (int i = 0; i < kRequests; ++i) pipeline += "BIG " + std::to_string(kEach) + "\n";
  pipeline += "PING\n";
  c.send(pipeline);
  const std::string got = c.read_lines(kRequests + 1);
  ASSERT_EQ(got.size(), kRequests * (kEach + 1) + 5);
  EXPECT_EQ(got.substr(got.size() - 8), "xx\nPONG\n");
  EXPECT_GE(hooks_.flushes.load(), kRequests / 3 - 1) << "about three answers per feed";
}

TEST_F(NetServerTest, IdleConnectionTimesOutWithTheSessionsLastAnswer) {
  NetOptions o = small();
  o.idle_timeout_ms = 100;
  start(o);
  Client c(port_);
  c.send("PING\n");
  EXPECT_EQ(c.read_lines(1), "PONG\n");
  const auto begin = SteadyClock::now();
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  const auto waited = SteadyClock::now() - begin;
  EXPECT_EQ(rest, "TIMEOUT\n");
  EXPECT_GE(waited, 90ms);
  EXPECT_LT(waited, 1s);
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 1; }));
}

TEST_F(NetServerTest, RequestNotCompletedInTimeIsClosed) {
  NetOptions o = small();
  o.idle_timeout_ms = 10'000;
  o.request_timeout_ms = 150;
  start(o);
  Client c(port_);
  c.send("PING\nPIN");  // one answered, one started and never finished
  const auto begin = SteadyClock::now();
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  const auto waited = SteadyClock::now() - begin;
  EXPECT_EQ(rest, "PONG\nTIMEOUT\n");
  EXPECT_GE(waited, 140ms);
  EXPECT_LT(waited, 1s);
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 1; }));
}

TEST_F(NetServerTest, DrippingOneRequestDoesNotKeepItAlive) {
  NetOptions o = small();
  o.request_timeout_ms = 150;
  start(o);
  Client c(port_);
  const auto begin = SteadyClock::now();
  c.send("PING\n");
  ASSERT_EQ(c.read_lines(1), "PONG\n");
  // A byte every 20 ms of a line that never ends: the deadline counts from its first byte.
  std::atomic<bool> closed{false};
  std::thread drip([&] {
    for (int i = 0; i < 50 && !closed.load(); ++i) {
      c.send("a");
      std::this_thread::sleep_for(20ms);
    }
  });
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  closed.store(true);
  EXPECT_LT(SteadyClock::now() - begin, 600ms);
  EXPECT_EQ(rest, "TIMEOUT\n");
  drip.join();
}

TEST_F(NetServerTest, SteadyPipelineWithSplitRequestsDoesNotTimeOut) {
  NetOptions o = small();
  o.request_timeout_ms = 100;
  start(o);
  Client c(port_);
  // Every send completes one request and starts the next; the unfinished tail is never
  // older than 40 ms, though the buffer is never empty for 400 ms.
  c.send("PI");
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(40ms);
    c.send("NG\nPI");
    ASSERT_EQ(c.read_lines(1), "PONG\n") << i;
  }
  EXPECT_EQ(server_->stats().timeouts, 0u);
}

TEST_F(NetServerTest, FailingJobOrMissingSessionClosesOnlyThatConnection) {
  start(small());
  Client bystander(port_);
  Client c(port_);
  c.send("PING\nTHROW\nPING\n");
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  EXPECT_EQ(rest, "PONG\n");
  bystander.send("PING\n");
  EXPECT_EQ(bystander.read_lines(1), "PONG\n");

  NetServer other(small());
  Result<Endpoint> bound = other.listen("127.0.0.1:0", "null", [] { return nullptr; });
  ASSERT_TRUE(bound.ok());
  ASSERT_TRUE(other.start().ok());
  Client nobody(bound->port);
  EXPECT_TRUE(nobody.wait_closed());
}

TEST_F(NetServerTest, ClientThatNeverReadsIsClosed) {
  NetOptions o = small();
  o.request_timeout_ms = 150;
  start(o);
  Client c(port_);
  c.send("BIG " + std::to_string(64 << 20) + "\n");  // far beyond the socket buffers
  // Making the 64 MiB answer alone took over 2 s under ThreadSanitizer on a busy 2-core
  // machine: wait longer; what is checked is that the write times out, not how soon.
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 1; }, 20s));
  EXPECT_TRUE(eventually([&] { return server_->stats().connections_open == 0; }, 20s));
}

TEST_F(NetServerTest, TooMuchPendingInputCloses) {
  NetOptions o = small();
  o.max_pending_bytes = 64;
  start(o);
  Client ok(port_);
  ok.send("ECHO " + std::string(50, 'a') + "\n");  // under the limit: answered
  EXPECT_EQ(ok.read_lines(1), std::string(50, 'a') + "\n");

  Client c(port_);
  c.send("PING\n" + std::string(200, 'a'));  // no newline: an unfinished request > 64 bytes
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  EXPECT_EQ(rest, "PONG\n");
  EXPECT_TRUE(eventually([&] { return server_->stats().oversized == 1; }));
}

TEST_F(NetServerTest, ConnectionsOverTheLimitAreClosedAtOnce) {
  NetOptions o = small();
  o.max_connections = 2;
  start(o);
  auto a = std::make_unique<Client>(port_);
  Client b(port_);
  a->send("PING\n");
  b.send("PING\n");
  ASSERT_EQ(a->read_lines(1), "PONG\n");
  ASSERT_EQ(b.read_lines(1), "PONG\n");

  Client over(port_);
  EXPECT_TRUE(over.wait_closed());
  EXPECT_EQ(server_->stats().connections_rejected, 1u);

  a.reset();  // frees a place
  ASSERT_TRUE(eventually([&] { return server_->stats().connections_open == 1; }));
  Client again(port_);
  again.send("PING\n");
  EXPECT_EQ(again.read_lines(1), "PONG\n");
  EXPECT_EQ(server_->stats().connections_total, 3u);
}

TEST_F(NetServerTest, ShutdownFinishesAnInFlightJobThenCloses) {
  hooks_.job_ms = 200;
  start(small());
  Client busy(port_);
  Client idle(port_);
  idle.send("PING\n");
  ASSERT_EQ(idle.read_lines(1), "PONG\n");
  busy.send("SLOW\n");
  ASSERT_TRUE(eventually([&] { return hooks_.jobs_started.load() == 1; }));

  const auto begin = SteadyClock::now();
  server_->shutdown(2s);
  const auto took = SteadyClock::now() - begin;
  EXPECT_GE(took, 100ms);   // waited for the job
  EXPECT_LT(took, 1500ms);  // and not for the whole grace

  std::string rest;
  EXPECT_TRUE(busy.wait_closed(&rest));
  EXPECT_EQ(rest, "DONE\n");
  rest.clear();
  EXPECT_TRUE(idle.wait_closed(&rest));
  EXPECT_EQ(rest, "TIMEOUT\n");  // the session's last word (Session::on_timeout)
  EXPECT_FALSE(Client(port_).connected());
  EXPECT_EQ(server_->stats().connections_open, 0u);

  server_->shutdown(2s);  // idempotent
  server_.reset();
}

TEST_F(NetServerTest, ShutdownPastGraceClosesAndStillWaitsForTheJob) {
  hooks_.job_ms = 300;
  start(small());
  Client busy(port_);
  busy.send("SLOW\n");
  ASSERT_TRUE(eventually([&] { return hooks_.jobs_started.load() == 1; }));
  const auto begin = SteadyClock::now();
  server_->shutdown(20ms);
  // The job writes into the connection's buffer, so shutdown waits for it rather than
  // leave it dangling; its answer is dropped since the socket closed at the grace.
  EXPECT_EQ(hooks_.jobs_done.load(), 1);
  EXPECT_LT(SteadyClock::now() - begin, 2s);
  std::string rest;
  EXPECT_TRUE(busy.wait_closed(&rest));
  EXPECT_EQ(rest, "");
}

TEST_F(NetServerTest, DestructorShutsDownARunningServer) {
  start(small());
  Client c(port_);
  c.send("PING\n");
  ASSERT_EQ(c.read_lines(1), "PONG\n");
  server_.reset();
  EXPECT_TRUE(c.wait_closed());
  EXPECT_FALSE(Client(port_).connected());
}

// CPU time this process has used (every thread).
Ms process_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto us = [](const timeval& t) { return t.tv_sec * 1'000'000LL + t.tv_usec; };
  return std::chrono::duration_cast<Ms>(std::chrono::microseconds(us(u.ru_utime) + us(u.ru_stime)));
}

TEST_F(NetServerTest, SpinningLoopAnswersAndSleepsOnceTrafficStops) {
  NetOptions o = small(/*io_threads=*/1);
  o.io_spin_us = 200'000;  // long, so a loop that spun after each wake-up would show
  start(o);
  Client c(port_);
  for (int i = 0; i < 500; ++i) {  // request-answer turns: each gap is well inside the spin
    c.send("ECHO " + std::to_string(i) + "\n");
    ASSERT_EQ(c.read_lines(1), std::to_string(i) + "\n");
  }
  // Idle now: the loop may poll for one spin time, then must sleep, and not spin again
  // after its timer wakes it (every 250 ms here): that wake-up came after a long sleep.
  // A loop that kept polling, or spun after every wake-up, would use most of the second.
  std::this_thread::sleep_for(300ms);
  const Ms before = process_cpu();
  std::this_thread::sleep_for(1s);
  EXPECT_LT(process_cpu() - before, 300ms);
  // And it still wakes for the next request.
  c.send("PING\n");
  EXPECT_EQ(c.read_lines(1), "PONG\n");
}

TEST_F(NetServerTest, LoopsWithoutSpinningServeAndShutDown) {
  NetOptions o = small();
  o.io_spin_us = 0;
  start(o);
  Client c(port_);
  c.send("PING\nSLOW\nECHO x\n");
  EXPECT_EQ(c.read_lines(3), "PONG\nDONE\nx\n");
  server_->shutdown(1s);
  EXPECT_TRUE(c.wait_closed());
}

TEST(NetServerLifecycleTest, NeverStartedOrStartedTwice) {
  {
    NetServer never(NetOptions{});
    Result<Endpoint> bound = never.listen("localhost:0", "x", [] { return nullptr; });
    ASSERT_TRUE(bound.ok());
    EXPECT_EQ(bound->host, "127.0.0.1");
  }  // destructor without start()
  NetServer twice(NetOptions{});
  ASSERT_TRUE(twice.start().ok());
  EXPECT_FALSE(twice.start().ok());
  twice.shutdown(0ms);
  twice.shutdown(0ms);
  EXPECT_FALSE(twice.start().ok());
}

}  // namespace
}  // namespace idforge::server
