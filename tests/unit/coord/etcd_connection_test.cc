// EtcdConnection against a server on 127.0.0.1 that plays etcd: the request it
// writes, a kept-alive connection used twice, and the errors its caller tells apart
// (refused, timed out, closed before any answer, closed within one).
#include "coord/etcd/etcd_connection.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace idforge::coord {
namespace {

using std::chrono::milliseconds;

// A listening socket on 127.0.0.1 and a free port; `listening` false leaves it bound
// only, so that a connection to it is refused.
int bound_socket(bool listening, std::string* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof address;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), len), 0);
  if (listening) {
    EXPECT_EQ(::listen(fd, 4), 0);
  }
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len), 0);
  *port = std::to_string(ntohs(address.sin_port));
  return fd;
}

// Reads one request (head and Content-Length body) from `fd`; empty at the close.
std::string read_request(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const size_t at = in.find("Content-Length: ");
      const size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
      if (in.size() >= head_end + 4 + length) return in;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    in.append(buf, static_cast<size_t>(n));
  }
}

void send_text(int fd, std::string_view text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// One connection accepted on a thread, handed to `serve`, closed after.
class FakeEtcd {
 public:
  explicit FakeEtcd(std::function<void(int)> serve)
      : listener_(bound_socket(true, &port_)), thread_([this, serve = std::move(serve)] {
          const int fd = ::accept(listener_, nullptr, nullptr);
          if (fd < 0) return;
          serve(fd);
          ::close(fd);
        }) {}
  ~FakeEtcd() {
    ::shutdown(listener_, SHUT_RDWR);  // an accept() still waiting returns
    thread_.join();
    ::close(listener_);
  }
  const std::string& port() const { return port_; }

 private:
  std::string port_;
  int listener_;
  std::thread thread_;
};

const EtcdConnection::Request kRequest{
    .host = "127.0.0.1:2379", .path = "/v3/kv/range", .body = "{}"};

struct Exchanged {
  Status status;
  EtcdConnection::Answer answer;
  bool answered = false;
};

// kRequest on `connection`, connected first to `port` on `host` unless open.
Exchanged exchange(EtcdConnection* connection, const std::string& port,
                   milliseconds timeout = milliseconds(5000),
                   const std::string& host = "127.0.0.1") {
  Exchanged out;
  if (!connection->is_open()) out.status = connection->connect(host, port, milliseconds(2000));
  if (out.status.ok()) {
    out.answered = true;  // exchange() must clear it when nothing came
    out.status = connection->exchange(kRequest, &out.answer, timeout, &out.answered);
  }
  return out;
}

TEST(EtcdConnectionTest, WritesThePostAndKeepsTheConnectionForTheNext) {
  std::string first;
  FakeEtcd etcd([&](int fd) {
    first = read_request(fd);
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
    read_request(fd);
    send_text(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  });
  EtcdConnection connection;
  Exchanged one = exchange(&connection, etcd.port());
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  EXPECT_TRUE(one.answered);
  EXPECT_EQ(one.answer.status, 200);
  EXPECT_EQ(one.answer.body, "{\"a\":1}");
  EXPECT_EQ(first,
            "POST /v3/kv/range HTTP/1.1\r\nHost: 127.0.0.1:2379\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n"
            "Connection: keep-alive\r\n\r\n{}");
  ASSERT_TRUE(connection.is_open());
  one = exchange(&connection, "");  // on the same connection
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  EXPECT_EQ(one.answer.body, "{}");
}

TEST(EtcdConnectionTest, ClosesWhenTheServerSaysSo) {
  FakeEtcd etcd([](int fd) {
    read_request(fd);
    send_text(fd, "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
  });
  EtcdConnection connection;
  const Exchanged busy = exchange(&connection, etcd.port(), milliseconds(5000), "localhost");
  ASSERT_TRUE(busy.status.ok()) << busy.status.message();
  EXPECT_EQ(busy.answer.status, 503);
  EXPECT_FALSE(connection.is_open());
}

TEST(EtcdConnectionTest, TellsACloseBeforeTheAnswerFromOneWithinIt) {
  for (const bool some : {false, true}) {
    FakeEtcd etcd([some](int fd) {
      read_request(fd);
      if (some) send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{");
    });
    EtcdConnection connection;
    const Exchanged cut = exchange(&connection, etcd.port());
    EXPECT_EQ(cut.status.code(), StatusCode::kUnavailable) << cut.status.message();
    EXPECT_EQ(cut.answered, some);
    EXPECT_EQ(cut.status.message(), some ? "the connection closed in the middle of the answer"
                                         : "the connection closed before any answer");
    EXPECT_FALSE(connection.is_open());
  }
}

TEST(EtcdConnectionTest, TimesOutWhenNoAnswerComes) {
  FakeEtcd etcd([](int fd) {
    read_request(fd);
    read_request(fd);  // until the client gives up and closes
  });
  EtcdConnection connection;
  const Exchanged late = exchange(&connection, etcd.port(), milliseconds(50));
  EXPECT_EQ(late.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(late.status.message(), "timed out after 50 ms");
  EXPECT_FALSE(late.answered);
  EXPECT_FALSE(connection.is_open());
}

TEST(EtcdConnectionTest, SaysWhoRefused) {
  std::string port;
  const int bound = bound_socket(false, &port);
  EtcdConnection connection;
  Status status = connection.connect("127.0.0.1", port, milliseconds(2000));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "connection refused");
  status = connection.connect("localhost", port, milliseconds(2000));
  EXPECT_NE(status.message().find("connection refused by "), std::string::npos)
      << status.message();  // which of the name's addresses
  EXPECT_FALSE(connection.is_open());
  ::close(bound);
}

TEST(EtcdConnectionTest, RefusesABadHttpAnswer) {
  FakeEtcd etcd([](int fd) {
    read_request(fd);
    send_text(fd, "SSH-2.0-OpenSSH_9.2\r\n");
  });
  EtcdConnection connection;
  const Exchanged bad = exchange(&connection, etcd.port());
  EXPECT_EQ(bad.status.code(), StatusCode::kIoError);
  EXPECT_EQ(bad.status.message(),
            "bad HTTP answer: not an HTTP/1.x status line: 'SSH-2.0-OpenSSH_9.2'");
  EXPECT_TRUE(bad.answered);
}

}  // namespace
}  // namespace idforge::coord
