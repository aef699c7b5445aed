#include "integration/serve_node.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Writing to a socket the server closed must fail with EPIPE, not end the test binary.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

// Waits until `fd` is ready for `events`; false on timeout or error.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

// The value of header `name` in `head` (the lines after the status line), or empty.
std::string header_value(const std::string& head, const char* name) {
  size_t pos = head.find("\r\n");
  const size_t name_len = std::strlen(name);
  while (pos != std::string::npos && pos + 2 < head.size()) {
    const size_t begin = pos + 2;
    const size_t end = head.find("\r\n", begin);
    const std::string line = head.substr(begin, end - begin);
    if (line.size() > name_len && line[name_len] == ':' &&
        ::strncasecmp(line.c_str(), name, name_len) == 0) {
      size_t v = name_len + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      return line.substr(v);
    }
    pos = end;
  }
  return "";
}

}  // namespace

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

Result<HttpReply> HttpClient::get(const std::string& target, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const auto fail = [&](const std::string& why) {
    close();
    return Status::IoError(why);
  };
  if (fd_ < 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return fail(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1) {
      return fail("not an IPv4 address: " + host_);
    }
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (errno != EINPROGRESS) return fail(std::string("connect: ") + std::strerror(errno));
      if (!wait_fd(fd_, POLLOUT, deadline)) return fail("connect: timed out");
      int error = 0;
      socklen_t len = sizeof(error);
      ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) return fail(std::string("connect: ") + std::strerror(error));
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: " + host_ + "\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_fd(fd_, POLLOUT, deadline)) return fail("send: timed out");
    } else {
      return fail(std::string("send: ") + std::strerror(errno));
    }
  }
  for (;;) {
    const size_t head_end = buffer_.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const std::string head = buffer_.substr(0, head_end);
      const std::string length = header_value(head, "Content-Length");
      const size_t body_size = std::strtoul(length.c_str(), nullptr, 10);
      if (length.empty()) return fail("a reply without Content-Length: " + head);
      if (buffer_.size() >= head_end + 4 + body_size) {
        HttpReply reply;
        if (head.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::atoi(head.c_str() + 9);
        reply.body = buffer_.substr(head_end + 4, body_size);
        buffer_.erase(0, head_end + 4 + body_size);
        if (header_value(head, "Connection") == "close") close();
        return reply;
      }
    }
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return fail("the server closed the connection");
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!wait_fd(fd_, POLLIN, deadline)) return fail("no reply in time");
    } else {
      return fail(std::string("recv: ") + std::strerror(errno));
    }
  }
}

Result<std::unique_ptr<ServeNode>> ServeNode::start(const std::string& dir,
                                                    const std::vector<std::string>& args,
                                                    const std::vector<std::string>& prefix,
                                                    const std::string& host) {
  Result<std::unique_ptr<ServeNode>> node = launch(dir, args, prefix, host);
  if (!node.ok()) return node.status();
  IDFORGE_RETURN_IF_ERROR((*node)->await(std::chrono::seconds(20)));
  return node;
}

Result<std::unique_ptr<ServeNode>> ServeNode::launch(const std::string& dir,
                                                     const std::vector<std::string>& args,
                                                     const std::vector<std::string>& prefix,
                                                     const std::string& host) {
  std::unique_ptr<ServeNode> node(new ServeNode());
  node->host_ = host;
  IDFORGE_RETURN_IF_ERROR(node->child_.launch({.bin = idforge_bin(),
                                               .prefix = prefix,
                                               .host = host,
                                               .data_dir = dir + "/data",
                                               .args = args,
                                               .out_path = dir + "/serve.out",
                                               .err_path = dir + "/serve.err"}));
  return node;
}

Status ServeNode::await(milliseconds limit) {
  const Result<test_support::ServePorts> ports = child_.await_ports(limit);
  if (!ports.ok()) return ports.status();
  http_port_ = ports->http;
  resp_port_ = ports->resp;
  return Status::Ok();
}

Status ServeNode::await_ready(const std::string& part, milliseconds limit) {
  HttpClient http(http_port_, host_);
  const auto deadline = Clock::now() + limit;
  std::string last;
  while (Clock::now() < deadline) {
    Result<HttpReply> r = http.get("/readyz?part=" + part, std::chrono::seconds(2));
    if (r.ok() && r->status == 200) return Status::Ok();
    last = r.ok() ? r->body : r.status().to_string();
    std::this_thread::sleep_for(milliseconds(20));
  }
  return Status::DeadlineExceeded("idforge serve: " + part + " not ready within " +
                                  std::to_string(limit.count()) + " ms: " + last);
}

// The server is killed with child_.
ServeNode::~ServeNode() = default;

Status ServeNode::stop() {
  if (!child_.running()) return Status::Ok();
  std::optional<test_support::ExitInfo> exit = child_.stop(std::chrono::seconds(15));
  if (!exit) exit = child_.last_exit();  // killed after the wait
  if (!exit || exit->code != 0) {
    return Status::Internal("idforge serve ended with " +
                            (exit ? exit->to_string() : std::string("an unknown status")) + ": " +
                            stderr_tail());
  }
  return Status::Ok();
}

std::string ServeNode::stderr_tail(int lines) const { return child_.stderr_tail(lines); }

std::string ServeNode::stderr_text() const { return child_.stderr_text(); }

}  // namespace idforge::integration
