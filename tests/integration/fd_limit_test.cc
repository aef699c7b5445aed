// Clients cannot take the descriptors the server needs for its own work: `idforge serve`
// under a low open-file limit caps its client connections below it, refuses the ones
// past the cap with Redis's "-ERR max number of clients reached" (HTTP: 503) and counts
// them, and the connections already open go on getting Snowflake IDs, whose high-water
// mark it keeps writing, while the excess connections are held (they used to take every
// descriptor, and Snowflake failed for everyone until they let go).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "integration/serve_node.h"
#include "integration/services.h"

namespace idforge::integration {
namespace {

using Steady = std::chrono::steady_clock;
constexpr int kFdLimit = 300;  // the server's; the cap is this less 128 kept for itself

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the server says within `ms` before it closes the connection ("" for nothing).
std::string said(int fd, int ms) {
  std::string out;
  const auto deadline = Steady::now() + std::chrono::milliseconds(ms);
  while (Steady::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST(FdLimitTest, HeldConnectionsPastTheCapAreRefusedAndOpenOnesKeepGettingIds) {
  Result<std::unique_ptr<ServeNode>> node =
      ServeNode::start(Services::get().make_dir("fd-limit"), {},
                       {"/usr/bin/prlimit", "--nofile=" + std::to_string(kFdLimit)});
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  EXPECT_NE((*node)->stderr_text().find("serve.max_connections_capped"), std::string::npos)
      << (*node)->stderr_tail();
  HttpClient open_one((*node)->http_port());
  ASSERT_TRUE(open_one.get("/v1/snowflake", std::chrono::seconds(5)).ok());

  // More connections than the limit itself: the cap leaves the server its own.
  std::vector<int> held;
  for (int i = 0; i < kFdLimit + 50; ++i) {
    const int fd = connect_to((*node)->resp_port());
    if (fd >= 0) held.push_back(fd);
  }
  // The last one is past the cap: refused in Redis's words.
  const int extra = connect_to((*node)->resp_port());
  ASSERT_GE(extra, 0);
  EXPECT_EQ(said(extra, 2000), "-ERR max number of clients reached\r\n");
  ::close(extra);
  const int extra_http = connect_to((*node)->http_port());
  ASSERT_GE(extra_http, 0);
  EXPECT_EQ(said(extra_http, 2000).rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u);
  ::close(extra_http);

  // Meanwhile the open connection gets IDs for longer than the mark's reserve (1 s), so
  // the mark is written again while the clients hold their connections.
  int failed = 0;
  std::string last;
  const auto until = Steady::now() + std::chrono::seconds(3);
  while (Steady::now() < until) {
    Result<HttpReply> r = open_one.get("/v1/snowflake?count=100", std::chrono::seconds(5));
    if (!r.ok() || r->status != 200) {
      ++failed;
      last = r.ok() ? r->body : r.status().to_string();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(failed, 0) << last;
  Result<HttpReply> metrics = open_one.get("/metrics", std::chrono::seconds(5));
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->body.find("idforge_connections_refused_total 0\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("idforge_connections_refused_total "), std::string::npos);

  for (int fd : held) ::close(fd);
  EXPECT_TRUE((*node)->stop().ok()) << (*node)->stderr_tail();
}

}  // namespace
}  // namespace idforge::integration
