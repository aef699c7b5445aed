#include "support/wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace idforge::test_support {
namespace {

int millis_until(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1'000'000));
}

std::string errno_text(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused";
    case ECONNRESET:
      return "connection reset";
    case EPIPE:
      return "broken pipe";
    case ETIMEDOUT:
      return "timed out";
    default:
      return std::strerror(err);
  }
}

bool parse_u64(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool Connection::connect(int port, Clock::time_point deadline, std::string* error,
                         const ConnectOptions& options) {
  close();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, options.host.c_str(), &addr.sin_addr) != 1) {
    *error = "not an IPv4 address: " + options.host;
    return false;
  }
  addr.sin_port = htons(static_cast<uint16_t>(port));
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = "socket: " + errno_text(errno);
    return false;
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (options.receive_buffer > 0) {
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &options.receive_buffer, sizeof(options.receive_buffer));
  }
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno_text(errno);
      close();
      return false;
    }
    pollfd p{fd_, POLLOUT, 0};
    const int n = ::poll(&p, 1, millis_until(deadline));
    int err = 0;
    socklen_t len = sizeof(err);
    if (n <= 0) {
      *error = "connect timed out";
      close();
      return false;
    }
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      *error = errno_text(err);
      close();
      return false;
    }
  }
  buffer_.clear();
  return true;
}

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
  peer_closed_ = false;
  peer_reset_ = false;
}

bool Connection::send_all(std::string_view data, Clock::time_point deadline, std::string* error) {
  if (fd_ < 0) {
    *error = "not connected";
    return false;
  }
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, millis_until(deadline)) <= 0) {
        *error = "timed out";
        return false;
      }
      continue;
    }
    *error = errno_text(errno);
    return false;
  }
  return true;
}

bool Connection::read_more(Clock::time_point deadline, std::string* error) {
  if (fd_ < 0) {
    *error = "not connected";
    return false;
  }
  char chunk[65536];
  while (true) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) {
      *error = "connection closed";
      peer_closed_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      const int err = errno;
      peer_closed_ = true;
      peer_reset_ = err == ECONNRESET;
      *error = errno_text(err);
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, millis_until(deadline));
    if (ready == 0) {
      *error = "timed out";
      return false;
    }
  }
}

ParseResult parse_http_reply(std::string& buffer, HttpReply* reply) {
  const size_t end = buffer.find("\r\n\r\n");
  if (end == std::string::npos)
    return buffer.size() > 65536 ? ParseResult::kBad : ParseResult::kIncomplete;
  std::string_view head(buffer.data(), end);
  // "HTTP/1.1 200 OK"
  if (head.size() < 12 || !head.starts_with("HTTP/1.")) return ParseResult::kBad;
  uint64_t status = 0;
  if (!parse_u64(head.substr(9, 3), &status)) return ParseResult::kBad;
  bool have_length = false;
  uint64_t length = 0;
  bool close = false;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos < head.size()) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string_view line =
        head.substr(pos + 2, (next == std::string_view::npos ? head.size() : next) - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (iequals(name, "content-length")) {
        if (!parse_u64(value, &length)) return ParseResult::kBad;
        have_length = true;
      } else if (iequals(name, "connection") && iequals(value, "close")) {
        close = true;
      } else if (iequals(name, "transfer-encoding")) {
        return ParseResult::kBad;  // the server never chunks its small answers
      }
    }
    pos = next;
  }
  if (!have_length) return ParseResult::kBad;
  if (buffer.size() < end + 4 + length) return ParseResult::kIncomplete;
  reply->status = static_cast<int>(status);
  reply->body.assign(buffer, end + 4, length);
  reply->close = close;
  buffer.erase(0, end + 4 + length);
  return ParseResult::kDone;
}

ParseResult parse_resp_reply(std::string& buffer, RespReply* reply) {
  const size_t first_end = buffer.find("\r\n");
  if (first_end == std::string::npos) return ParseResult::kIncomplete;
  const char type = buffer[0];
  const std::string_view first(buffer.data() + 1, first_end - 1);
  reply->ints.clear();
  reply->error.clear();
  reply->is_error = false;
  if (type == '-') {
    reply->is_error = true;
    reply->error = std::string(first);
    buffer.erase(0, first_end + 2);
    return ParseResult::kDone;
  }
  if (type == ':') {
    uint64_t v = 0;
    if (!parse_u64(first, &v)) return ParseResult::kBad;
    reply->ints.push_back(v);
    buffer.erase(0, first_end + 2);
    return ParseResult::kDone;
  }
  if (type != '*') return ParseResult::kBad;
  uint64_t count = 0;
  if (!parse_u64(first, &count)) return ParseResult::kBad;
  size_t pos = first_end + 2;
  reply->ints.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const size_t line_end = buffer.find("\r\n", pos);
    if (line_end == std::string::npos) return ParseResult::kIncomplete;
    if (buffer[pos] != ':') return ParseResult::kBad;
    uint64_t v = 0;
    if (!parse_u64(std::string_view(buffer.data() + pos + 1, line_end - pos - 1), &v)) {
      return ParseResult::kBad;
    }
    reply->ints.push_back(v);
    pos = line_end + 2;
  }
  buffer.erase(0, pos);
  return ParseResult::kDone;
}

bool parse_id_lines(std::string_view body, std::vector<uint64_t>* out) {
  while (!body.empty()) {
    size_t nl = body.find('\n');
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) {
      uint64_t v = 0;
      if (!parse_u64(line, &v)) return false;
      out->push_back(v);
    }
    body.remove_prefix(std::min(body.size(), nl + 1));
  }
  return true;
}

std::string resp_command(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return out;
}

}  // namespace idforge::test_support
