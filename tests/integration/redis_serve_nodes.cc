#include "integration/redis_serve_nodes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration::redis_ha {
namespace {

using std::chrono::milliseconds;

constexpr size_t kMaxRefusalsKept = 20;
constexpr auto kStatusEvery = milliseconds(100);
constexpr auto kCallTimeout = milliseconds(3000);

int64_t ms_between(Steady::time_point from, Steady::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

struct Answer {
  int status = 0;
  std::string body;
};

// GETs on one keep-alive connection to 127.0.0.1:port, reopened after any error; every
// wait bounded, so a server that hangs fails a call instead of holding the test.
class Http {
 public:
  explicit Http(int port) : port_(port) {}
  ~Http() { close(); }
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  Result<Answer> get(const std::string& target) {
    const auto deadline = Steady::now() + kCallTimeout;
    if (fd_ < 0) IDFORGE_RETURN_IF_ERROR(open(deadline));
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait(POLLOUT, deadline)) return fail("send timed out");
      } else {
        return fail(std::string("send: ") + std::strerror(errno));
      }
    }
    for (;;) {
      const size_t head_end = in_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const std::string head = in_.substr(0, head_end);
        const size_t at = head.find("Content-Length: ");
        if (at == std::string::npos) return fail("an answer without Content-Length");
        const size_t length = std::strtoul(head.c_str() + at + 16, nullptr, 10);
        if (in_.size() >= head_end + 4 + length) {
          Answer a;
          if (head.starts_with("HTTP/1.1 ")) a.status = std::atoi(head.c_str() + 9);
          a.body = in_.substr(head_end + 4, length);
          in_.erase(0, head_end + 4 + length);
          if (head.find("Connection: close") != std::string::npos) close();
          return a;
        }
      }
      char chunk[8192];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n > 0) {
        in_.append(chunk, static_cast<size_t>(n));
      } else if (n == 0) {
        return fail("the server closed the connection");
      } else if (errno == EAGAIN || errno == EINTR) {
        if (!wait(POLLIN, deadline)) return fail("no answer in time");
      } else {
        return fail(std::string("recv: ") + std::strerror(errno));
      }
    }
  }

 private:
  Status open(Steady::time_point deadline) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return fail(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (errno != EINPROGRESS) return fail(std::string("connect: ") + std::strerror(errno));
      if (!wait(POLLOUT, deadline)) return fail("connect timed out");
      int error = 0;
      socklen_t len = sizeof(error);
      ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) return fail(std::string("connect: ") + std::strerror(error));
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return Status::Ok();
  }
  bool wait(short events, Steady::time_point deadline) {
    const int64_t left = ms_between(Steady::now(), deadline);
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0;
  }
  Status fail(const std::string& why) {
    close();
    return Status::IoError(why);
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    in_.clear();
  }

  const int port_;
  int fd_ = -1;
  std::string in_;
};

std::vector<uint64_t> parse_ids(const std::string& text) {
  std::vector<uint64_t> ids;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) ids.push_back(std::strtoull(line.c_str(), nullptr, 10));
  }
  return ids;
}

// The lease's state and slot out of /v1/status (the keys of its "lease" object).
LeaseSample parse_lease(const std::string& body, Steady::time_point at) {
  LeaseSample s;
  s.at = at;
  const size_t lease = body.find("\"lease\":{");
  if (lease == std::string::npos) return s;
  const size_t end = body.find('}', lease);
  const std::string object = body.substr(lease, end - lease);
  if (const size_t slot = object.find("\"slot\":"); slot != std::string::npos) {
    s.slot = std::atoll(object.c_str() + slot + 7);
  }
  if (const size_t state = object.find("\"state\":\""); state != std::string::npos) {
    const size_t from = state + 9;
    s.state = object.substr(from, object.find('"', from) - from);
  }
  return s;
}

}  // namespace

uint64_t slot_of(uint64_t id) { return (id >> 12) & 0x3FF; }

Result<std::unique_ptr<PullingNode>> PullingNode::launch(const std::string& name,
                                                         const std::string& dir,
                                                         const std::vector<std::string>& args) {
  std::unique_ptr<PullingNode> node(new PullingNode());
  node->name_ = name;
  node->out_path_ = dir + "/serve.out";
  node->err_path_ = dir + "/serve.err";
  std::vector<std::string> argv = {idforge_bin(), "serve",       "--http",     "127.0.0.1:0",
                                   "--resp",      "127.0.0.1:0", "--data-dir", dir + "/data"};
  argv.insert(argv.end(), args.begin(), args.end());
  node->pid_ =
      test_support::spawn(argv, {.out_path = node->out_path_, .err_path = node->err_path_}).pid;
  if (node->pid_ < 0) return Status::IoError("cannot start " + idforge_bin());
  return node;
}

Status PullingNode::await(milliseconds limit) {
  const std::string prefix = "idforge serve: http http://127.0.0.1:";
  const auto deadline = Steady::now() + limit;
  for (;;) {
    const std::string out = test_support::read_file(out_path_);
    if (const size_t at = out.find(prefix); at != std::string::npos) {
      port_ = std::atoi(out.c_str() + at + prefix.size());
      return Status::Ok();
    }
    if (auto exit = test_support::try_reap(pid_)) {
      pid_ = -1;
      return Status::Unavailable(name_ + ": idforge serve ended (" + exit->to_string() +
                                 "): " + test_support::tail_of(err_path_, 20));
    }
    if (Steady::now() > deadline) {
      return Status::DeadlineExceeded(name_ + ": idforge serve did not listen in time: " +
                                      test_support::tail_of(err_path_, 20));
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

PullingNode::~PullingNode() {
  stop_pulling();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    test_support::reap(pid_);
  }
}

void PullingNode::start_pulling(const std::string& tag) {
  puller_ = std::thread([this, tag] { pull(tag); });
}

void PullingNode::stop_pulling() {
  stopping_.store(true);
  if (puller_.joinable()) puller_.join();
}

Status PullingNode::stop() {
  stop_pulling();
  if (pid_ <= 0) return Status::Ok();
  ::kill(pid_, SIGTERM);
  std::optional<test_support::ExitInfo> exit =
      test_support::wait_for_exit(pid_, std::chrono::seconds(15));
  if (!exit) {
    ::kill(pid_, SIGKILL);
    exit = test_support::reap(pid_);
  }
  pid_ = -1;
  if (exit->code != 0) {
    return Status::Internal(name_ + ": idforge serve ended with " + exit->to_string() + ": " +
                            test_support::tail_of(err_path_, 20));
  }
  return Status::Ok();
}

void PullingNode::pull(const std::string& tag) {
  Http http(port_);
  auto next_status = Steady::now();
  while (!stopping_.load()) {
    const auto sent = Steady::now();
    Result<Answer> got = http.get("/v1/snowflake?count=20&format=text");
    const auto received = Steady::now();
    bool ok = got.ok() && got->status == 200;
    {
      MutexLock lock(mu_);
      if (ok) {
        batches_.push_back({sent, received, parse_ids(got->body)});
      } else {
        ++refused_;
        const std::string why =
            got.ok() ? std::to_string(got->status) + " " + got->body : got.status().to_string();
        if (refusals_.size() < kMaxRefusalsKept &&
            std::find(refusals_.begin(), refusals_.end(), why) == refusals_.end()) {
          refusals_.push_back(why);
        }
      }
    }
    if (!tag.empty()) {
      Result<Answer> seg = http.get("/v1/segment/" + tag + "?count=10&format=text");
      if (seg.ok() && seg->status == 200) {
        std::vector<uint64_t> ids = parse_ids(seg->body);
        MutexLock lock(mu_);
        segment_ids_.insert(segment_ids_.end(), ids.begin(), ids.end());
      }
    }
    if (Steady::now() >= next_status) {
      next_status = Steady::now() + kStatusEvery;
      Result<Answer> status = http.get("/v1/status");
      if (status.ok() && status->status == 200) {
        LeaseSample s = parse_lease(status->body, Steady::now());
        MutexLock lock(mu_);
        leases_.push_back(std::move(s));
      }
    }
    // A refusing node is asked again soon, not in a tight loop.
    std::this_thread::sleep_for(milliseconds(ok ? 1 : 5));
  }
}

std::vector<Batch> PullingNode::batches() const {
  MutexLock lock(mu_);
  return batches_;
}
std::vector<uint64_t> PullingNode::segment_ids() const {
  MutexLock lock(mu_);
  return segment_ids_;
}
std::vector<LeaseSample> PullingNode::leases() const {
  MutexLock lock(mu_);
  return leases_;
}
std::vector<std::string> PullingNode::refusals() const {
  MutexLock lock(mu_);
  return refusals_;
}
uint64_t PullingNode::refused() const {
  MutexLock lock(mu_);
  return refused_;
}
Steady::time_point PullingNode::last_issued() const {
  MutexLock lock(mu_);
  return batches_.empty() ? Steady::time_point{} : batches_.back().received;
}
std::string PullingNode::stderr_text() const { return test_support::read_file(err_path_); }

Result<std::string> PullingNode::get(const std::string& target) const {
  Http http(port_);
  Result<Answer> a = http.get(target);
  if (!a.ok()) return a.status();
  if (a->status != 200) {
    return Status::Unavailable(name_ + ": GET " + target + ": " + std::to_string(a->status) + " " +
                               a->body);
  }
  return a->body;
}

// The number after "key": in a JSON text, or -1.
int64_t json_number(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\":";
  const size_t at = json.find(quoted);
  return at == std::string::npos ? -1 : std::atoll(json.c_str() + at + quoted.size());
}

// The string after "key": in a JSON text, or "".
std::string json_string(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\":\"";
  const size_t at = json.find(quoted);
  if (at == std::string::npos) return "";
  const size_t from = at + quoted.size();
  return json.substr(from, json.find('"', from) - from);
}

std::string IssueReport::summary() const {
  std::string s = std::to_string(ids) + " IDs, " + std::to_string(repeated) + " repeated; " +
                  std::to_string(handovers) + " slot handovers, shortest gap " +
                  (handovers > 0 ? std::to_string(min_handover_gap_ms) + " ms" : "-") + "; " +
                  std::to_string(overlaps.size()) + " overlaps; " +
                  std::to_string(slot_mismatches) + " batches off their /v1/status slot";
  for (size_t i = 0; i < overlaps.size() && i < 5; ++i) s += "\n  overlap: " + overlaps[i];
  return s;
}

IssueReport check_issued(const std::vector<PullingNode*>& nodes) {
  IssueReport report;
  struct Use {
    size_t node;
    Steady::time_point sent;
    Steady::time_point received;
  };
  std::map<uint64_t, std::vector<Use>> by_slot;
  std::vector<uint64_t> all;
  const auto t0 = Steady::now();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const std::vector<LeaseSample> leases = nodes[n]->leases();
    for (const Batch& b : nodes[n]->batches()) {
      if (b.ids.empty()) continue;
      all.insert(all.end(), b.ids.begin(), b.ids.end());
      const uint64_t slot = slot_of(b.ids.front());
      by_slot[slot].push_back({n, b.sent, b.received});
      // The status just before and just after the batch: one of them names its slot.
      const LeaseSample* before = nullptr;
      const LeaseSample* after = nullptr;
      for (const LeaseSample& s : leases) {
        if (s.at <= b.sent) before = &s;
        if (s.at >= b.received && after == nullptr) after = &s;
      }
      const bool matches = (before != nullptr && before->slot == static_cast<int64_t>(slot)) ||
                           (after != nullptr && after->slot == static_cast<int64_t>(slot)) ||
                           (before == nullptr && after == nullptr);
      if (!matches) ++report.slot_mismatches;
    }
  }
  report.ids = all.size();
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) report.repeated += all[i] == all[i - 1];
  for (auto& [slot, uses] : by_slot) {
    std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.sent < b.sent; });
    size_t holder = uses.front().node;
    Steady::time_point last = uses.front().received;
    for (const Use& u : uses) {
      if (u.node == holder) {
        last = std::max(last, u.received);
        continue;
      }
      // In microseconds: batches that interleave are less than a millisecond apart.
      const int64_t gap_us =
          std::chrono::duration_cast<std::chrono::microseconds>(u.sent - last).count();
      ++report.handovers;
      report.min_handover_gap_ms = std::min(report.min_handover_gap_ms, gap_us / 1000);
      if (gap_us < 0) {
        report.overlaps.push_back("slot " + std::to_string(slot) + ": " + nodes[holder]->name() +
                                  " answered until " + std::to_string(ms_between(t0, last)) +
                                  " ms, " + nodes[u.node]->name() + " asked at " +
                                  std::to_string(ms_between(t0, u.sent)) + " ms (from now)");
      }
      holder = u.node;
      last = u.received;
    }
  }
  return report;
}

bool all_issue_after(const std::vector<PullingNode*>& nodes, Steady::time_point since,
                     milliseconds limit) {
  const auto deadline = Steady::now() + limit;
  while (Steady::now() < deadline) {
    bool all = true;
    for (PullingNode* n : nodes) all = all && n->last_issued() > since;
    if (all) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

}  // namespace idforge::integration::redis_ha
