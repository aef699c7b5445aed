// async_read_when_ready on a loopback TCP pair, one io_context, no server around it.
// This file is built twice: into idforge_server_tests as the server is built (on Debian
// 12, Boost 1.74 with epoll: the read that waits on epoll after a drained read), and into
// idforge_net_portable_tests with IDFORGE_READ_WHEN_READY=0 (Asio's async_read_some, what
// other Boost versions get), so both paths keep their promises.
#include "server/net/ready_read.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#if IDFORGE_READ_WHEN_READY
#define READ_SUITE ReadWhenReadyTest
#else
#define READ_SUITE ReadFallbackTest
#endif

namespace idforge::server::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// A connected pair on 127.0.0.1: `server` non-blocking, as StreamConnection::start leaves
// it; `client` blocking, written to directly.
struct Pair {
  asio::io_context ctx{1};
  tcp::socket server{ctx};
  tcp::socket client{ctx};

  Pair() {
    tcp::acceptor acceptor(ctx, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    server.non_blocking(true);
  }
  void send(std::string_view data) { asio::write(client, asio::buffer(data)); }
};

// What one read delivered; `done` stays false while it waits.
struct Got {
  bool done = false;
  boost::system::error_code ec;
  std::string data;
};

void read(Pair& p, char* buf, size_t size, Got& got) {
  async_read_when_ready(p.server, asio::buffer(buf, size),
                        [&got, buf](const boost::system::error_code& ec, size_t n) {
                          got.done = true;
                          got.ec = ec;
                          got.data.assign(buf, n);
                        });
}

// Runs the loop until `got` is done or two seconds pass (a read that waits forever
// fails the test instead of hanging it).
bool run_until(Pair& p, const Got& got) {
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!got.done && std::chrono::steady_clock::now() < deadline) {
    p.ctx.restart();
    p.ctx.run_for(10ms);
  }
  return got.done;
}

// Runs the loop for a while with nothing but a timer, so its epoll_wait takes the edge
// of whatever arrived: in a server the loop is always running, and an edge a read could
// still wake up on would hide a read that waits for nothing.
void let_epoll_take_the_edge(Pair& p) {
  asio::steady_timer wait(p.ctx, 20ms);
  wait.async_wait([](const boost::system::error_code&) {});
  p.ctx.restart();
  p.ctx.run();
}

TEST(READ_SUITE, DataAlreadyThereIsRead) {
  Pair p;
  p.send("PING\r\n");
  let_epoll_take_the_edge(p);
  char buf[64];
  Got got;
  read(p, buf, sizeof buf, got);
  ASSERT_TRUE(run_until(p, got));
  EXPECT_FALSE(got.ec) << got.ec.message();
  EXPECT_EQ(got.data, "PING\r\n");
}

// A read that returned less than its buffer leaves the next one waiting on epoll; data
// written later must still wake it.
TEST(READ_SUITE, AReadAfterADrainedOneGetsDataThatComesLater) {
  Pair p;
  p.send("first");
  char buf[64];
  Got first;
  read(p, buf, sizeof buf, first);
  ASSERT_TRUE(run_until(p, first));
  ASSERT_EQ(first.data, "first");

  Got second;
  read(p, buf, sizeof buf, second);
  asio::steady_timer later(p.ctx, 30ms);
  later.async_wait([&p](const boost::system::error_code&) { p.send("second"); });
  ASSERT_TRUE(run_until(p, second)) << "the read after a drained one never saw new data";
  EXPECT_FALSE(second.ec) << second.ec.message();
  EXPECT_EQ(second.data, "second");
}

// A read that filled its buffer may have left data behind, and no new edge will come for
// it: the next read must try the socket at once.
TEST(READ_SUITE, AReadAfterAFullOneGetsTheRestWithoutNewData) {
  Pair p;
  const std::string sent(100, 'x');
  p.send(sent);
  let_epoll_take_the_edge(p);
  char buf[64];
  Got first;
  read(p, buf, sizeof buf, first);
  ASSERT_TRUE(run_until(p, first));
  ASSERT_EQ(first.data.size(), sizeof buf);

  Got rest;
  read(p, buf, sizeof buf, rest);
  ASSERT_TRUE(run_until(p, rest)) << "the bytes left after a full read were not read";
  EXPECT_EQ(first.data + rest.data, sent);
}

TEST(READ_SUITE, TheClientsShutdownIsEndOfStream) {
  Pair p;
  char buf[64];
  Got got;
  read(p, buf, sizeof buf, got);
  p.client.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(run_until(p, got));
  EXPECT_EQ(got.ec, asio::error::eof);
  EXPECT_TRUE(got.data.empty());
}

TEST(READ_SUITE, ClosingTheSocketCancelsAWaitingRead) {
  Pair p;
  char buf[64];
  Got got;
  read(p, buf, sizeof buf, got);
  p.ctx.restart();
  p.ctx.run_for(20ms);
  ASSERT_FALSE(got.done) << "nothing was sent, yet the read finished";
  p.server.close();
  ASSERT_TRUE(run_until(p, got));
  EXPECT_EQ(got.ec, asio::error::operation_aborted);
}

// A connection's read holds the connection (a shared_ptr in its handler): when the loop
// is torn down with the read queued, the handler is destroyed without running and what it
// held is freed (LeakSanitizer sees the rest).
TEST(READ_SUITE, ALoopTornDownWithAReadQueuedDestroysTheHandlerWithoutRunningIt) {
  auto held = std::make_shared<int>(0);
  bool ran = false;
  {
    Pair p;
    char buf[64];
    async_read_when_ready(p.server, asio::buffer(buf, sizeof buf),
                          [&ran, held](const boost::system::error_code&, size_t) { ran = true; });
    p.ctx.run_for(10ms);
    EXPECT_EQ(held.use_count(), 2);
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(held.use_count(), 1);
}

}  // namespace
}  // namespace idforge::server::net
