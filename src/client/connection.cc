#include "client/connection.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "core/socket_error.h"

namespace idforge::client {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

int ms_left(const Deadline& deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.at - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1'000'000 ? 1'000'000 : static_cast<int>(left.count());
}

Status closed_client() { return Status::Unavailable("the client is closed"); }

// fill()'s error at the server's close: read_to_eof() takes it for the end of the answer.
constexpr std::string_view kClosedByServer = "connection closed by the server";

}  // namespace

Status timed_out(const Deadline& deadline) {
  return Status::DeadlineExceeded("timed out after " + std::to_string(deadline.timeout_ms) + " ms");
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& host, uint16_t port,
                                                     const Deadline& deadline, int wake_fd) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (gai != 0) {
    return Status::Unavailable(std::string("cannot resolve host: ") + ::gai_strerror(gai));
  }
  Status last = Status::Unavailable("no address for the host");
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = Status::Unavailable(text::socket_error_text(errno));
      continue;
    }
    std::unique_ptr<Connection> conn(new Connection(fd, wake_fd));
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = Status::Unavailable(text::socket_error_text(errno));
        continue;
      }
      last = conn->wait(POLLOUT, deadline);
      if (!last.ok()) {
        if (last.code() == StatusCode::kDeadlineExceeded) break;  // no time for another
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        last = Status::Unavailable(text::socket_error_text(err));
        continue;
      }
    }
    ::freeaddrinfo(found);
    return conn;
  }
  ::freeaddrinfo(found);
  return last;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

Status Connection::wait(short events, const Deadline& deadline) {
  for (;;) {
    pollfd fds[2] = {{fd_, events, 0}, {wake_fd_, POLLIN, 0}};
    const int timeout = ms_left(deadline);
    if (timeout <= 0) return timed_out(deadline);
    const int ready = ::poll(fds, wake_fd_ >= 0 ? 2 : 1, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(text::socket_error_text(errno));
    }
    if (ready == 0) return timed_out(deadline);
    if (wake_fd_ >= 0 && fds[1].revents != 0) return closed_client();
    // POLLERR / POLLHUP: the call that follows reports what happened.
    if (fds[0].revents != 0) return Status::Ok();
  }
}

Status Connection::send_all(std::string_view data, const Deadline& deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Status::Unavailable(text::socket_error_text(errno));
    IDFORGE_RETURN_IF_ERROR(wait(POLLOUT, deadline));
  }
  return Status::Ok();
}

Status Connection::fill(const Deadline& deadline) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > kReadChunk) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  // An answer is rarely there already when more is needed: wait first, then one recv().
  IDFORGE_RETURN_IF_ERROR(wait(POLLIN, deadline));
  for (;;) {
    const size_t old = buf_.size();
    buf_.resize(old + kReadChunk);
    const ssize_t n = ::recv(fd_, buf_.data() + old, kReadChunk, 0);
    buf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) {
      got_bytes = true;
      return Status::Ok();
    }
    if (n == 0) return Status::Unavailable(std::string(kClosedByServer));
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Status::Unavailable(text::socket_error_text(errno));
    IDFORGE_RETURN_IF_ERROR(wait(POLLIN, deadline));
  }
}

Result<std::string> Connection::read_line(const Deadline& deadline, size_t limit) {
  size_t from = pos_;
  for (;;) {
    const size_t end = buf_.find("\r\n", from);
    if (end != std::string::npos) {
      std::string line = buf_.substr(pos_, end - pos_);
      pos_ = end + 2;
      return line;
    }
    if (buf_.size() - pos_ > limit) return Status::IoError("an answer line is too long");
    from = buf_.size() > pos_ ? buf_.size() - 1 : pos_;
    const size_t before = pos_;
    IDFORGE_RETURN_IF_ERROR(fill(deadline));
    // fill() may have moved the unread bytes to the front.
    from -= before - pos_;
  }
}

Result<std::string> Connection::read_exact(size_t n, const Deadline& deadline) {
  while (buf_.size() - pos_ < n) IDFORGE_RETURN_IF_ERROR(fill(deadline));
  std::string out = buf_.substr(pos_, n);
  pos_ += n;
  return out;
}

Result<std::string> Connection::read_to_eof(const Deadline& deadline, size_t limit) {
  for (;;) {
    if (buf_.size() - pos_ > limit) return Status::IoError("the answer is too large");
    Status status = fill(deadline);
    if (!status.ok()) {
      if (status.message() != kClosedByServer) return status;
      std::string out = buf_.substr(pos_);
      pos_ = buf_.size();
      reusable = false;
      return out;
    }
  }
}

}  // namespace idforge::client
