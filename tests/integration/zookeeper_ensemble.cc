#include "integration/zookeeper_ensemble.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <optional>
#include <utility>

#include "coord/zookeeper/zk_session.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration::zk {
namespace {

using test::trim;

using std::chrono::milliseconds;

int ms_left(Steady::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::max<int64_t>(left, 0));
}

// A blocking connect to 127.0.0.1:port (loopback answers or refuses at once); -1 if not.
int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Appends what arrives within `timeout_ms` (one poll + recv): >0 bytes, 0 at EOF, -1 on
// an error or timeout.
ssize_t read_some(int fd, std::string* into, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return -1;
  char buf[16384];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n > 0) into->append(buf, static_cast<size_t>(n));
  return n;
}

std::string hosts_of(const std::string& url) {
  std::string hosts = url.substr(std::string_view("zookeeper://").size());
  return hosts.substr(0, hosts.find('/'));
}

// "sid=0x..." of every session in a `cons` answer.
std::vector<int64_t> sessions_in(std::string_view cons) {
  std::vector<int64_t> out;
  for (size_t at = cons.find("sid=0x"); at != std::string_view::npos;
       at = cons.find("sid=0x", at + 1)) {
    const std::string_view rest = cons.substr(at + 4);
    const std::string_view hex = rest.substr(0, rest.find_first_of(",)"));
    Result<int64_t> id = coord::parse_session_hex(hex);
    if (id.ok()) out.push_back(*id);
  }
  return out;
}

// The number after `"key":` in `json`, if any.
std::optional<uint64_t> json_number(std::string_view json, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  const size_t at = json.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = json.data() + at + needle.size();
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(begin, json.data() + json.size(), value);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return value;
}

std::optional<bool> json_bool(std::string_view json, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  const size_t at = json.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = json.substr(at + needle.size());
  if (rest.starts_with("true")) return true;
  if (rest.starts_with("false")) return false;
  return std::nullopt;
}

std::string json_string(std::string_view json, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":\"";
  const size_t at = json.find(needle);
  if (at == std::string_view::npos) return "";
  const std::string_view rest = json.substr(at + needle.size());
  return std::string(rest.substr(0, rest.find('"')));
}

}  // namespace

// Every member saying leader or follower does not yet mean the quorum takes writes: on
// a loaded machine the first create right after the election can time out. Waits until
// one does, so a test's first server does not fail on the ensemble's start.
namespace {
Status wait_writable(const Ensemble& ensemble, milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  Status last = Status::Unavailable("no try");
  while (Steady::now() < deadline) {
    Result<std::shared_ptr<coord::ZkSession>> s =
        coord::ZkSession::open(hosts_of(ensemble.url), 4000, 5000, "probe " + ensemble.url);
    if (s.ok()) {
      const coord::ZkReply r = (*s)->create("/idforge-ensemble-probe", "", /*ephemeral=*/true);
      if (r.ok() || r.code == coord::ZkCode::kNodeExists) return Status::Ok();
      last = r.status;
    } else {
      last = s.status();
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return Status::Unavailable("the ensemble " + ensemble.url +
                             " took no write within 15 s: " + last.to_string());
}
}  // namespace

Result<Ensemble> start_ensemble(const std::string& name, int members) {
  Ensemble e;
  e.dir = Services::get().make_dir(name);
  if (e.dir.empty()) return Status::IoError("cannot make a directory for the ensemble");
  // Started in a fresh, empty directory the script fills; its stderr goes to the test log.
  const test_support::RunResult r = test_support::run_command(
      {script_path("test-services"), "start", "zookeeper-ensemble", e.dir, "--members",
       std::to_string(members), "--owner", std::to_string(getpid())},
      e.dir + ".start", {.capture_err = false, .timeout = std::nullopt});
  e.url = trim(r.out);
  if (r.exit_code != 0 || e.url.empty()) {
    return Status::Unavailable("scripts/test-services start zookeeper-ensemble failed (exit " +
                               std::to_string(r.exit_code) + "); see its message above and " +
                               e.dir);
  }
  for (int k = 1; k <= members; ++k) {
    Server member;
    member.kind = ServerKind::kZookeeper;
    member.dir = e.dir + "/member-" + std::to_string(k);
    const std::string port = trim(test_support::read_file(member.dir + "/port"));
    member.url = "zookeeper://127.0.0.1:" + port;
    e.members.push_back(member);
    e.ports.push_back(std::atoi(port.c_str()));
  }
  IDFORGE_RETURN_IF_ERROR(wait_writable(e, milliseconds(15'000)));
  return e;
}

Status stop_ensemble(const Ensemble& ensemble) {
  const test_support::RunResult r =
      test_support::run_command({script_path("test-services"), "stop", ensemble.dir},
                                ensemble.dir + ".stop", {.capture_err = false});
  if (r.exit_code != 0)
    return Status::IoError("scripts/test-services stop " + ensemble.dir + " failed");
  return Status::Ok();
}

std::string four_letter_word(int port, std::string_view word, milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  std::string answer;
  if (send_all(fd, word)) {
    while (read_some(fd, &answer, ms_left(deadline)) > 0) {
    }
  }
  ::close(fd);
  return answer;
}

std::string member_mode(int port) {
  const std::string srvr = four_letter_word(port, "srvr");
  const size_t at = srvr.find("Mode: ");
  if (at == std::string::npos) return "";
  return srvr.substr(at + 6, srvr.find('\n', at) - at - 6);
}

int leader_of(const Ensemble& ensemble) {
  for (size_t i = 0; i < ensemble.ports.size(); ++i) {
    if (member_mode(ensemble.ports[i]) == "leader") return static_cast<int>(i);
  }
  return -1;
}

int member_holding(const Ensemble& ensemble, int64_t session) {
  for (size_t i = 0; i < ensemble.ports.size(); ++i) {
    const std::vector<int64_t> ids = sessions_in(four_letter_word(ensemble.ports[i], "cons"));
    if (std::find(ids.begin(), ids.end(), session) != ids.end()) return static_cast<int>(i);
  }
  return -1;
}

bool wait_serving(const Ensemble& ensemble, size_t index, milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  while (Steady::now() < deadline) {
    const std::string mode = member_mode(ensemble.ports[index]);
    if (mode == "leader" || mode == "follower") return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

Result<int64_t> node_owner(const Ensemble& ensemble, const std::string& path) {
  Result<std::shared_ptr<coord::ZkSession>> s =
      coord::ZkSession::open(hosts_of(ensemble.url), 4000, 5000, "test " + ensemble.url);
  if (!s.ok()) return s.status();
  coord::ZkNodeStat stat;
  const coord::ZkReply r = (*s)->exists(path, &stat);
  if (r.code == coord::ZkCode::kNoNode) return int64_t{0};
  if (!r.ok()) return r.status;
  return stat.ephemeral_owner;
}

Result<LeaseView> lease_view(HttpClient& client) {
  Result<HttpReply> r = client.get("/v1/status", milliseconds(5000));
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status::IoError("GET /v1/status answered " + r->body);
  const std::string& body = r->body;
  const size_t at = body.find("\"lease\":{");
  if (at == std::string::npos) return Status::IoError("no lease in /v1/status: " + body);
  const std::string_view lease = std::string_view(body).substr(at, body.find('}', at) - at);
  LeaseView v;
  v.held = json_bool(lease, "held").value_or(false);
  v.state = json_string(lease, "state");
  v.slot = json_number(lease, "slot").value_or(0);
  v.datacenter = json_number(lease, "datacenter").value_or(0);
  v.worker = json_number(lease, "worker").value_or(0);
  v.leases_taken = json_number(lease, "leases_taken").value_or(0);
  v.renewals = json_number(lease, "renewals").value_or(0);
  v.failures = json_number(lease, "failures").value_or(0);
  v.fenced = json_bool(body, "fenced").value_or(true);
  return v;
}

Loader::Loader(int port) : port_(port) {
  thread_ = std::thread([this] { run(); });
}

Loader::~Loader() { stop(); }

void Loader::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  MutexLock lock(mu_);
  close_run();
}

Loader::Figures Loader::figures() const {
  MutexLock lock(mu_);
  return figures_;
}

void Loader::close_run() {
  if (!in_run_) return;
  in_run_ = false;
  figures_.longest_run = std::max(figures_.longest_run,
                                  std::chrono::duration_cast<milliseconds>(run_end_ - run_start_));
}

void Loader::note_failure(Steady::time_point start, Steady::time_point end,
                          const std::string& why) {
  MutexLock lock(mu_);
  ++figures_.failures;
  if (figures_.first_error.empty()) figures_.first_error = why;
  if (!in_run_) {
    in_run_ = true;
    ++figures_.failure_runs;
    run_start_ = start;
  }
  run_end_ = end;
}

void Loader::run() {
  HttpClient client(port_);
  while (!stop_.load()) {
    const auto start = Steady::now();
    Result<HttpReply> r = client.get("/v1/snowflake?count=100&format=text", milliseconds(3000));
    const auto end = Steady::now();
    {
      MutexLock lock(mu_);
      ++figures_.requests;
      figures_.longest_request =
          std::max(figures_.longest_request, std::chrono::duration_cast<milliseconds>(end - start));
    }
    if (!r.ok()) {
      note_failure(start, end, r.status().to_string());
    } else if (r->status != 200) {
      note_failure(start, end, std::to_string(r->status) + " " + r->body);
    } else {
      size_t got = 0;
      for (size_t at = 0; at < r->body.size();) {
        const size_t nl = std::min(r->body.find('\n', at), r->body.size());
        uint64_t id = 0;
        const auto [p, ec] = std::from_chars(r->body.data() + at, r->body.data() + nl, id);
        if (ec == std::errc() && p == r->body.data() + nl) {
          ids_.push_back(id);
          ++got;
        }
        at = nl + 1;
      }
      if (got != 100) {
        note_failure(start, end, "200 with " + std::to_string(got) + " IDs: " + r->body);
      } else {
        MutexLock lock(mu_);
        close_run();
      }
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
}

}  // namespace idforge::integration::zk
