#include "coord/etcd/etcd_connection.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>

#include "coord/etcd/http_answer.h"
#include "core/socket_error.h"

namespace idforge::coord {
namespace {

using std::chrono::milliseconds;

// A status() over a large slot space reads every taken slot in one answer; anything
// past this is not an etcd we understand.
constexpr uint64_t kMaxAnswerBytes = 256u << 20;

constexpr size_t kReadChunk = 64 * 1024;

Status timed_out(milliseconds timeout) {
  return Status::DeadlineExceeded(fmt::format("timed out after {} ms", timeout.count()));
}

// "127.0.0.1:2379", "[::1]:2379": where a host name led.
std::string address_of(const addrinfo& ai) {
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> port{};
  if (::getnameinfo(ai.ai_addr, ai.ai_addrlen, host.data(), host.size(), port.data(), port.size(),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return ai.ai_family == AF_INET6 ? fmt::format("[{}]:{}", host.data(), port.data())
                                  : fmt::format("{}:{}", host.data(), port.data());
}

}  // namespace

Status EtcdConnection::connect(const std::string& host, const std::string& port,
                               milliseconds timeout) {
  close();
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;  // an address: no lookup
  addrinfo* found = nullptr;
  int gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  const bool named = gai == EAI_NONAME;
  if (named) {
    // Not bounded by the timeout: use an address in the URL where that matters.
    hints.ai_flags = AI_NUMERICSERV;
    gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  }
  if (gai != 0) {
    return Status::Unavailable(fmt::format("cannot look up '{}': {}", host, ::gai_strerror(gai)));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  Status last = Status::Unavailable(fmt::format("no address for '{}'", host));
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    // A name's addresses are named in the error: which of them refused.
    const auto failed = [&](int err) {
      return Status::Unavailable(
          named ? fmt::format("{} by {}", text::socket_error_text(err), address_of(*ai))
                : text::socket_error_text(err));
    };
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd_ < 0) {
      last = failed(errno);
      continue;
    }
    if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) != 0) {
      int err = errno;
      if (err == EINPROGRESS) {
        last = wait(POLLOUT, deadline, timeout);
        if (last.code() == StatusCode::kDeadlineExceeded) return fail(std::move(last));
        socklen_t len = sizeof err;
        if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      if (err != 0) {
        last = failed(err);
        close();
        continue;
      }
    }
    const int one = 1;  // small requests, each answered before the next
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return Status::Ok();
  }
  return last;
}

Status EtcdConnection::exchange(const Request& request, Answer* answer, milliseconds timeout,
                                bool* answered) {
  *answered = false;
  if (fd_ < 0) return Status::Unavailable("not connected");
  const auto deadline = Clock::now() + timeout;  // one deadline for the write and the read
  std::string bytes = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nConnection: keep-alive\r\n\r\n",
      request.path, request.host, request.body.size());
  bytes += request.body;
  if (Status sent = send_all(bytes, deadline, timeout); !sent.ok()) return fail(std::move(sent));

  HttpAnswerParser parser(kMaxAnswerBytes);
  bytes.resize(kReadChunk);
  HttpAnswerParser::Step step = HttpAnswerParser::Step::kMore;
  while (step == HttpAnswerParser::Step::kMore) {
    // The answer is rarely there already: wait first, then read what came.
    if (Status ready = wait(POLLIN, deadline, timeout); !ready.ok()) return fail(std::move(ready));
    const ssize_t n = ::recv(fd_, bytes.data(), bytes.size(), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return fail(Status::Unavailable(text::socket_error_text(errno)));
    }
    step = n == 0 ? parser.close()
                  : parser.feed(std::string_view(bytes.data(), static_cast<size_t>(n)));
    *answered = parser.got_some();
    if (step == HttpAnswerParser::Step::kBad) {
      // A close before or within the answer is the connection's failure, not etcd's words.
      return fail(n == 0 ? Status::Unavailable(parser.error())
                         : Status::IoError("bad HTTP answer: " + parser.error()));
    }
  }
  HttpAnswer& whole = parser.answer();
  answer->status = whole.status;
  answer->body = std::move(whole.body);
  // Bytes after the answer were not asked for: the connection is not trusted further.
  if (!whole.keep_alive || parser.extra() > 0) close();
  return Status::Ok();
}

void EtcdConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status EtcdConnection::wait(short events, Clock::time_point deadline, milliseconds timeout) {
  for (;;) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return timed_out(timeout);
    pollfd p{fd_, events, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1'000'000)));
    if (ready > 0) return Status::Ok();  // POLLERR, POLLHUP: the next call says what
    if (ready == 0) return timed_out(timeout);
    if (errno != EINTR) return Status::Unavailable(text::socket_error_text(errno));
  }
}

Status EtcdConnection::send_all(std::string_view bytes, Clock::time_point deadline,
                                milliseconds timeout) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);  // no SIGPIPE
    if (n >= 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IDFORGE_RETURN_IF_ERROR(wait(POLLOUT, deadline, timeout));
    } else if (errno != EINTR) {
      return Status::Unavailable(text::socket_error_text(errno));
    }
  }
  return Status::Ok();
}

Status EtcdConnection::fail(Status status) {
  close();
  return status;
}

}  // namespace idforge::coord
