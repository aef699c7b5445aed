#include "support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <random>

namespace idforge::test_support {
namespace {

// Binds a fresh socket to 127.0.0.1:port (0: the kernel picks); the bound port, or 0
// when binding failed. The socket is closed before returning.
int bind_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  ::close(fd);
  return bound;
}

}  // namespace

int unused_loopback_port() {
  const int port = bind_loopback(0);
  return port > 0 ? port : 1;
}

bool loopback_port_is_free(int port) { return port > 0 && bind_loopback(port) == port; }

int port_below_ephemeral_range() {
  // One generator for the process, drawn from under a lock: callers may be on any thread.
  static std::mutex mu;
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> dist(32000, 32700);
  for (int i = 0; i < 500; ++i) {
    int port = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      port = dist(rng);
    }
    if (loopback_port_is_free(port)) return port;
  }
  return 0;
}

}  // namespace idforge::test_support
