#include "client_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

namespace idforge::client_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using test_support::read_file;

}  // namespace

ServerProc::ServerProc(std::string bin, std::string root, std::string shared, std::string name)
    : bin_(std::move(bin)),
      name_(name),
      data_dir_(root + "/" + name),
      shared_(std::move(shared)),
      out_path_(root + "/" + name + ".out"),
      err_path_(root + "/" + name + ".err") {}

ServerProc::~ServerProc() { kill9(); }

bool ServerProc::start(std::string* error) {
  // Ports 0 the first time (the kernel picks), the same ones after: the clients under test
  // keep their server list. stdout is truncated, so a previous run's listening lines are
  // not read as this one's; stderr is one file across restarts.
  const Status launched = child_.launch({
      .bin = bin_,
      .http_port = http_port_,
      .resp_port = resp_port_,
      .data_dir = data_dir_,
      .args = {"--registry", "local:" + shared_ + "/workers", "--store",
               "sqlite:" + shared_ + "/segments.db", "--identity", "cpp-client-test-" + name_,
               "--io-threads", "1", "--worker-threads", "2", "--io-spin-us", "0",
               // A loaded machine (make test runs much at once) can delay the thread that
               // renews the time reservation; wait for it rather than answer 503.
               "--max-wait-ms", "250", "--log-level", "warn"},
      .out_path = out_path_,
      .err_path = err_path_,
      .append_err = true,
      // A server outlives nothing: killed with the test process (a ctest timeout).
      .die_with_parent = true,
  });
  stopped_ = false;
  if (!launched.ok()) {
    *error = launched.message();
    return false;
  }
  const Result<test_support::ServePorts> ports =
      child_.await_ports(milliseconds(15'000), /*stderr_lines=*/0);
  if (!ports.ok()) {
    kill9();
    const std::string err = child_.stderr_text();
    *error = "idforge serve " + name_ +
             " did not start: " + err.substr(err.size() > 2000 ? err.size() - 2000 : 0);
    return false;
  }
  http_port_ = static_cast<uint16_t>(ports->http);
  resp_port_ = static_cast<uint16_t>(ports->resp);
  return true;
}

void ServerProc::kill9() {
  if (!child_.running()) return;
  child_.kill();
  stopped_ = false;
}

void ServerProc::sigstop() {
  if (!child_.running()) return;
  child_.send_signal(SIGSTOP);
  stopped_ = true;
  const std::string task_dir = "/proc/" + std::to_string(child_.pid()) + "/task";
  const Clock::time_point deadline = Clock::now() + milliseconds(5'000);
  while (Clock::now() < deadline) {
    bool all = true;
    int threads = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(task_dir, ec)) {
      const std::string stat = read_file(entry.path().string() + "/stat");
      const size_t paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
      ++threads;
      const char state = stat[paren + 2];
      if (state != 'T' && state != 't') all = false;
    }
    if (threads > 0 && all) return;
    std::this_thread::sleep_for(milliseconds(1));
  }
}

void ServerProc::sigcont() {
  child_.send_signal(SIGCONT);
  stopped_ = false;
}

void ServerProc::terminate() {
  if (!child_.running()) return;
  child_.stop(milliseconds(5'000));  // SIGCONT, SIGTERM, SIGKILL after 5 s
  stopped_ = false;
}

std::unique_ptr<Cluster> Cluster::start(const std::string& bin,
                                        const std::vector<std::string>& tags, std::string* error) {
  std::unique_ptr<Cluster> cluster(new Cluster());
  const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = std::string(base) + "/idforge-cppclient-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  cluster->root_ = tmpl;
  const std::string shared = tmpl + "/shared";
  ::mkdir(shared.c_str(), 0700);
  for (const std::string& tag : tags) {
    const test_support::RunResult r = test_support::run_command(
        {bin, "tag", "create", tag, "--step", "100", "--start", "1", "--store",
         "sqlite:" + shared + "/segments.db", "--data-dir", tmpl + "/setup"},
        tmpl + "/setup");
    if (r.exit_code != 0) {
      *error = "idforge tag create " + tag + " failed: " + r.out + r.err;
      return nullptr;
    }
  }
  cluster->a_ = std::make_unique<ServerProc>(bin, tmpl, shared, "a");
  cluster->b_ = std::make_unique<ServerProc>(bin, tmpl, shared, "b");
  if (!cluster->a_->start(error) || !cluster->b_->start(error)) return nullptr;
  return cluster;
}

Cluster::~Cluster() {
  if (a_) a_->terminate();
  if (b_) b_->terminate();
  a_.reset();
  b_.reset();
  if (!root_.empty() && std::getenv("IDFORGE_KEEP_TEST_DIR") == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
}

void Cluster::heal() {
  for (ServerProc* s : {a_.get(), b_.get()}) {
    if (s->stopped()) s->sigcont();
    std::string error;
    if (!s->running() && !s->start(&error)) std::fprintf(stderr, "heal: %s\n", error.c_str());
  }
}

// ---- FakeServer -------------------------------------------------------------------------

struct FakeServer::State {
  std::string answer;
  int listener = -1;
  int stop_pipe[2] = {-1, -1};
  std::atomic<int> requests{0};
  std::mutex mu;  // answer, threads
  std::vector<std::thread> threads;

  void serve(int fd) {
    char buf[65536];
    for (;;) {
      pollfd fds[2] = {{fd, POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
      if (fds[1].revents != 0) break;
      if (fds[0].revents == 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      ++requests;
      std::string reply;
      {
        std::lock_guard<std::mutex> lock(mu);
        reply = answer;
      }
      if (!reply.empty() && ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) break;
    }
    ::close(fd);
  }

  void accept_loop() {
    for (;;) {
      pollfd fds[2] = {{listener, POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0) return;
      if (fds[0].revents == 0) continue;
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu);
      threads.emplace_back([this, fd] { serve(fd); });
    }
  }
};

FakeServer::FakeServer(std::string answer) : state_(std::make_shared<State>()) {
  state_->answer = std::move(answer);
  if (::pipe2(state_->stop_pipe, O_CLOEXEC) != 0) std::abort();
  state_->listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(state_->listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(state_->listener, 16) != 0 ||
      ::getsockname(state_->listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  port_ = ntohs(addr.sin_port);
  std::thread accept([state = state_] { state->accept_loop(); });
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->threads.insert(state_->threads.begin(), std::move(accept));
}

FakeServer::~FakeServer() {
  const char byte = 1;
  if (::write(state_->stop_pipe[1], &byte, 1) < 0) std::abort();
  for (;;) {
    std::thread t;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->threads.empty()) break;
      t = std::move(state_->threads.back());
      state_->threads.pop_back();
    }
    t.join();
  }
  ::close(state_->listener);
  ::close(state_->stop_pipe[0]);
  ::close(state_->stop_pipe[1]);
}

int FakeServer::requests() const { return state_->requests.load(); }

void FakeServer::set_answer(std::string answer) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->answer = std::move(answer);
}

}  // namespace idforge::client_test
