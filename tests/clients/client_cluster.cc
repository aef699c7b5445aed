#include "client_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>
#include <utility>

namespace idforge::client_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs argv with stdout and stderr to `log`; its exit status, or -1.
int run(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

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
  const std::vector<std::string> argv = {
      bin_, "serve", "--http", "127.0.0.1:" + std::to_string(http_port_), "--resp",
      "127.0.0.1:" + std::to_string(resp_port_), "--data-dir", data_dir_, "--registry",
      "local:" + shared_ + "/workers", "--store", "sqlite:" + shared_ + "/segments.db",
      "--identity", "cpp-client-test-" + name_, "--io-threads", "1", "--worker-threads", "2",
      "--io-spin-us", "0",
      // A loaded machine (make test runs much at once) can delay the thread that renews
      // the time reservation; wait for it rather than answer 503.
      "--max-wait-ms", "250", "--log-level", "warn"};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The listening lines of a previous run must not be read as this one's.
  ::unlink(out_path_.c_str());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid == 0) {
    // A server outlives nothing: killed with the test process (a ctest timeout).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(125);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  pid_ = pid;
  stopped_ = false;
  static const std::regex http_line(R"(idforge serve: http http://127\.0\.0\.1:(\d+)/)");
  static const std::regex resp_line(R"(idforge serve: resp redis://127\.0\.0\.1:(\d+))");
  const Clock::time_point deadline = Clock::now() + milliseconds(15'000);
  for (;;) {
    const std::string out = slurp(out_path_);
    std::smatch h;
    std::smatch r;
    if (std::regex_search(out, h, http_line) && std::regex_search(out, r, resp_line)) {
      http_port_ = static_cast<uint16_t>(std::stoi(h[1]));
      resp_port_ = static_cast<uint16_t>(std::stoi(r[1]));
      return true;
    }
    int status = 0;
    const bool ended = ::waitpid(pid_, &status, WNOHANG) == pid_;
    if (ended) pid_ = -1;
    if (ended || Clock::now() > deadline) {
      kill9();
      const std::string err = slurp(err_path_);
      *error = "idforge serve " + name_ +
               " did not start: " + err.substr(err.size() > 2000 ? err.size() - 2000 : 0);
      return false;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

void ServerProc::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  stopped_ = false;
}

void ServerProc::sigstop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  stopped_ = true;
  const std::string task_dir = "/proc/" + std::to_string(pid_) + "/task";
  const Clock::time_point deadline = Clock::now() + milliseconds(5'000);
  while (Clock::now() < deadline) {
    bool all = true;
    int threads = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(task_dir, ec)) {
      const std::string stat = slurp(entry.path().string() + "/stat");
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
  if (pid_ > 0) ::kill(pid_, SIGCONT);
  stopped_ = false;
}

void ServerProc::terminate() {
  if (pid_ <= 0) return;
  sigcont();
  ::kill(pid_, SIGTERM);
  const Clock::time_point deadline = Clock::now() + milliseconds(5'000);
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  kill9();
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
    const int status = run({bin, "tag", "create", tag, "--step", "100", "--start", "1", "--store",
                            "sqlite:" + shared + "/segments.db", "--data-dir", tmpl + "/setup"},
                           tmpl + "/setup.log");
    if (status != 0) {
      *error = "idforge tag create " + tag + " failed: " + slurp(tmpl + "/setup.log");
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
