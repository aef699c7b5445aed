#include "coord/etcd/etcd_connection.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "coord/etcd/http_answer.h"

namespace idforge::coord {
namespace {

using std::chrono::milliseconds;

// A status() over a large slot space reads every taken slot in one answer; anything
// past this is not an etcd we understand.
constexpr uint64_t kMaxAnswerBytes = 256u << 20;

constexpr size_t kReadChunk = 64 * 1024;

}  // namespace

Status EtcdConnection::connect(const std::string& host, const std::string& port,
                               milliseconds timeout) {
  close();
  IDFORGE_ASSIGN_OR_RETURN(socket_,
                           tcp::TcpSocket::connect(host, port, tcp::Deadline::after(timeout)));
  return Status::Ok();
}

Status EtcdConnection::exchange(const Request& request, Answer* answer, milliseconds timeout,
                                bool* answered) {
  *answered = false;
  if (!socket_.is_open()) return Status::Unavailable("not connected");
  const tcp::Deadline deadline = tcp::Deadline::after(timeout);  // for the write and the read
  std::string bytes = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nConnection: keep-alive\r\n\r\n",
      request.path, request.host, request.body.size());
  bytes += request.body;
  if (Status sent = socket_.send_all(bytes, deadline); !sent.ok()) return fail(std::move(sent));

  HttpAnswerParser parser(kMaxAnswerBytes);
  bytes.resize(kReadChunk);
  HttpAnswerParser::Step step = HttpAnswerParser::Step::kMore;
  while (step == HttpAnswerParser::Step::kMore) {
    Result<size_t> n = socket_.recv_some(bytes, deadline);
    if (!n.ok()) return fail(n.status());
    step = *n == 0 ? parser.close() : parser.feed(std::string_view(bytes.data(), *n));
    *answered = parser.got_some();
    if (step == HttpAnswerParser::Step::kBad) {
      // A close before or within the answer is the connection's failure, not etcd's words.
      return fail(*n == 0 ? Status::Unavailable(parser.error())
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

void EtcdConnection::close() { socket_.close(); }

Status EtcdConnection::fail(Status status) {
  close();
  return status;
}

}  // namespace idforge::coord
