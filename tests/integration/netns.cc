#include "integration/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

using std::chrono::milliseconds;

constexpr const char* kPrefix = "idf-";

// iproute2's `ip`, wherever Debian put it.
std::string ip_path() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

test_support::RunResult run_ip(const std::vector<std::string>& args, const std::string& scratch) {
  std::vector<std::string> argv = {ip_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::run_command(argv, scratch, {.timeout = milliseconds(15'000)});
}

std::vector<int> pids_in(const std::string& ns, const std::string& scratch) {
  std::vector<int> pids;
  std::istringstream in(run_ip({"netns", "pids", ns}, scratch).out);
  for (int pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

// SIGKILLs every process in `ns`, waits (up to 5 s) until none is left, deletes `ns`.
void kill_and_delete_ns(const std::string& ns, const std::string& scratch) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (std::vector<int> left = pids_in(ns, scratch); !left.empty(); left = pids_in(ns, scratch)) {
    for (int pid : left) ::kill(pid, SIGKILL);
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  run_ip({"netns", "delete", ns}, scratch);
}

// Namespaces of earlier runs (idf-<pid>-...) whose process is gone: a run that died
// together with its watchdog (a SIGKILLed process group, a reboot keeps none).
void delete_leftovers(const std::string& scratch) {
  std::istringstream in(run_ip({"netns", "list"}, scratch).out);
  for (std::string line; std::getline(in, line);) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(kPrefix, 0) != 0) continue;
    const int pid = std::atoi(ns.c_str() + std::strlen(kPrefix));
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) kill_and_delete_ns(ns, scratch);
  }
}

// The watchdog: once the owner has died, it gives the servers' own watchdogs
// (scripts/test-services, which poll once a second) up to 30 s to stop them and remove
// their directories, killing everything else in the namespaces at once, then kills what
// is left and deletes the namespaces. setsid: it must outlive the owner's process group.
constexpr const char* kWatchdog = R"sh(
owner=$1 ip=$2
shift 2
alive() {
  local s
  s=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) && [ -n "$s" ] && [ "$s" != Z ]
}
while alive "$owner"; do sleep 0.5; done
for ns; do
  for p in $("$ip" netns pids "$ns" 2>/dev/null); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in
    bash | sleep) ;;
    *) kill -KILL "$p" 2>/dev/null ;;
    esac
  done
done
for _ in $(seq 1 60); do
  left=""
  for ns; do left="$left$("$ip" netns pids "$ns" 2>/dev/null)"; done
  [ -z "$left" ] && break
  sleep 0.5
done
for ns; do
  for p in $("$ip" netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  "$ip" netns delete "$ns" 2>/dev/null
done
)sh";

}  // namespace

std::string netns_unusable_reason() {
  if (::geteuid() != 0) return "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  if (ip_path().empty()) return "no `ip` (iproute2) in /usr/sbin, /sbin, /usr/bin or /bin";
  const std::string scratch = Services::get().make_dir("netns-probe") + "/ip";
  const std::string probe = std::string(kPrefix) + std::to_string(::getpid()) + "-probe";
  test_support::RunResult added = run_ip({"netns", "add", probe}, scratch);
  if (added.exit_code != 0) return "`ip netns add` failed: " + added.err;
  run_ip({"netns", "delete", probe}, scratch);
  return "";
}

Result<std::unique_ptr<NetnsLab>> NetnsLab::create(const std::vector<std::string>& roles) {
  static std::atomic<int> labs{0};
  std::unique_ptr<NetnsLab> lab(new NetnsLab());
  lab->scratch_ = Services::get().make_dir("netns") + "/ip";
  delete_leftovers(lab->scratch_);
  const std::string base =
      std::string(kPrefix) + std::to_string(::getpid()) + "-" + std::to_string(labs++) + "-";
  std::vector<std::string> argv = {"/usr/bin/setsid", "bash",           "-c",
                                   kWatchdog,         "netns-watchdog", std::to_string(::getpid()),
                                   ip_path()};
  for (const std::string& role : roles) {
    lab->names_[role] = base + role;
    argv.push_back(base + role);
  }
  // The watchdog first, so that no namespace is ever without one.
  lab->watchdog_pid_ = test_support::spawn(argv).pid;
  if (lab->watchdog_pid_ < 0) return Status::IoError("cannot start the namespace watchdog");
  for (const auto& [role, ns] : lab->names_) {
    IDFORGE_RETURN_IF_ERROR(lab->ip({"netns", "add", ns}));
    IDFORGE_RETURN_IF_ERROR(lab->ip({"-n", ns, "link", "set", "lo", "up"}));
  }
  return lab;
}

NetnsLab::~NetnsLab() {
  for (const auto& [role, ns] : names_) kill_and_delete_ns(ns, scratch_);
  if (watchdog_pid_ > 0) {
    ::kill(-watchdog_pid_, SIGKILL);  // its process group: the shell and its sleep
    test_support::reap(watchdog_pid_);
  }
}

const std::string& NetnsLab::name(const std::string& role) const { return names_.at(role); }

Status NetnsLab::ip(const std::vector<std::string>& args) const {
  test_support::RunResult r = run_ip(args, scratch_);
  if (r.exit_code == 0) return Status::Ok();
  std::string command = "ip";
  for (const std::string& a : args) command += " " + a;
  return Status::IoError(command + " failed (" + std::to_string(r.exit_code) + "): " + r.err);
}

Status NetnsLab::link(const std::string& a, const std::string& dev_a, const std::string& cidr_a,
                      const std::string& b, const std::string& dev_b, const std::string& cidr_b) {
  IDFORGE_RETURN_IF_ERROR(ip({"-n", name(a), "link", "add", dev_a, "type", "veth", "peer", "name",
                              dev_b, "netns", name(b)}));
  IDFORGE_RETURN_IF_ERROR(add_address(a, dev_a, cidr_a));
  IDFORGE_RETURN_IF_ERROR(add_address(b, dev_b, cidr_b));
  IDFORGE_RETURN_IF_ERROR(set_up(a, dev_a, true));
  return set_up(b, dev_b, true);
}

Status NetnsLab::add_address(const std::string& role, const std::string& dev,
                             const std::string& cidr) {
  return ip({"-n", name(role), "address", "add", cidr, "dev", dev});
}

Status NetnsLab::add_route(const std::string& role, const std::string& destination,
                           const std::string& via) {
  return ip({"-n", name(role), "route", "add", destination, "via", via});
}

Status NetnsLab::set_up(const std::string& role, const std::string& dev, bool up) {
  return ip({"-n", name(role), "link", "set", dev, up ? "up" : "down"});
}

std::vector<std::string> NetnsLab::exec_prefix(const std::string& role) const {
  return {ip_path(), "netns", "exec", name(role)};
}

Status NetnsLab::enter(const std::string& role) const {
  const std::string path = "/run/netns/" + name(role);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  const int entered = ::setns(fd, CLONE_NEWNET);
  const int error = errno;
  ::close(fd);
  if (entered != 0) return Status::IoError("setns " + path + ": " + std::strerror(error));
  return Status::Ok();
}

Status NetnsLab::run_in(const std::string& role, const std::function<void()>& fn) const {
  Status entered = Status::Ok();
  std::thread t([&] {
    entered = enter(role);
    if (entered.ok()) fn();
  });
  t.join();
  return entered;
}

std::vector<int> NetnsLab::pids(const std::string& role) const {
  return pids_in(name(role), scratch_);
}

}  // namespace idforge::integration
