#include "client/connection.h"

#include <string>
#include <utility>

namespace idforge::client {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

// What a wait says when the client is destroyed under it (the wake pipe fired).
constexpr std::string_view kClientClosed = "the client is closed";

// fill()'s error at the server's close: read_to_eof() takes it for the end of the answer.
constexpr std::string_view kClosedByServer = "connection closed by the server";

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const std::string& host, uint16_t port,
                                                     const Deadline& deadline, int wake_fd) {
  IDFORGE_ASSIGN_OR_RETURN(tcp::TcpSocket socket,
                           tcp::TcpSocket::connect(host, std::to_string(port), deadline,
                                                   tcp::Wake{wake_fd, kClientClosed}));
  return std::unique_ptr<Connection>(new Connection(std::move(socket)));
}

Connection::~Connection() = default;

Status Connection::send_all(std::string_view data, const Deadline& deadline) {
  return socket_.send_all(data, deadline);
}

Status Connection::fill(const Deadline& deadline) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > kReadChunk) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const size_t old = buf_.size();
  buf_.resize(old + kReadChunk);
  Result<size_t> n = socket_.recv_some(std::span<char>(buf_.data() + old, kReadChunk), deadline);
  buf_.resize(old + (n.ok() ? *n : 0));
  if (!n.ok()) return n.status();
  if (*n == 0) return Status::Unavailable(std::string(kClosedByServer));
  got_bytes = true;
  return Status::Ok();
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
