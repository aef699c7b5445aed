#include "integration/serve_node.h"

#include <signal.h>
#include <unistd.h>

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

}  // namespace

Result<HttpReply> HttpClient::get(const std::string& target, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string error;
  const auto fail = [&](const std::string& step) {
    conn_.close();
    return Status::IoError(step + ": " + error);
  };
  if (!conn_.is_open() && !conn_.connect(port_, deadline, &error, {.host = host_})) {
    return fail("connect");
  }
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: " + host_ + "\r\n\r\n";
  if (!conn_.send_all(request, deadline, &error)) return fail("send");
  for (;;) {
    HttpReply reply;
    const test_support::ParseResult parsed = test_support::parse_http_reply(conn_.buffer(), &reply);
    if (parsed == test_support::ParseResult::kDone) {
      if (reply.close) conn_.close();
      return reply;
    }
    if (parsed == test_support::ParseResult::kBad) {
      error = "not an HTTP/1.1 answer with Content-Length: " + conn_.buffer().substr(0, 200);
      return fail("reply");
    }
    if (!conn_.read_more(deadline, &error)) return fail("reply");
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
