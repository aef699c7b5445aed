// Linux network namespaces of a test's own, for real network partitions on one machine:
// a few namespaces joined by veth pairs with private addresses, whose links a test cuts
// and heals with `ip link set DEV down|up`. Nothing is added to the host's own namespace:
// every address, route and link lives inside the namespaces the lab creates.
//
//   if (std::string why = netns_unusable_reason(); !why.empty()) GTEST_SKIP() << why;
//   Result<std::unique_ptr<NetnsLab>> lab = NetnsLab::create({"svc", "node"});
//   (*lab)->link("node", "n-s", "10.231.2.1/30", "svc", "s-n", "10.231.2.2/30");
//   ServeNode::start(dir, args, (*lab)->exec_prefix("node"), "10.231.2.1");
//   (*lab)->set_up("svc", "s-n", false);                // the cut
//   (*lab)->run_in("svc", [&] { /* sockets made here live in svc */ });
//
// The namespaces are named idf-<pid>-<n>-<role>, so a leftover never clashes with a later
// run. The destructor kills every process still inside them and deletes them (a veth
// goes with its namespace, and its peer with it); if the test binary dies first, a
// watchdog process does the same, after giving scripts/test-services' own watchdogs a
// moment to stop their servers cleanly. A lab also deletes the namespaces of earlier runs
// whose process is gone. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2.
//
// Not thread-safe: one thread sets the lab up and cuts; run_in and enter may be called
// from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "idforge/status.h"

namespace idforge::integration {

// Why this process cannot make network namespaces (not root, no `ip`, `ip netns add`
// refused), or "" when it can. Tries once with a throwaway namespace.
std::string netns_unusable_reason();

class NetnsLab {
 public:
  // One namespace per role, each with its loopback up.
  static Result<std::unique_ptr<NetnsLab>> create(const std::vector<std::string>& roles);
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  // The namespace's name ("idf-<pid>-<n>-<role>").
  const std::string& name(const std::string& role) const;

  // A veth pair: `dev_a` in role a with address `cidr_a` ("10.231.2.1/30"), `dev_b` in
  // role b with `cidr_b`, both up. It is created inside the namespaces (never in the
  // host's), so the names only need to be unique within each namespace.
  Status link(const std::string& a, const std::string& dev_a, const std::string& cidr_a,
              const std::string& b, const std::string& dev_b, const std::string& cidr_b);
  Status add_address(const std::string& role, const std::string& dev, const std::string& cidr);
  Status add_route(const std::string& role, const std::string& destination, const std::string& via);
  // `ip link set DEV up|down` in the role's namespace. Down on one end of a veth pair is
  // a silent partition for the other end: its packets are dropped, nothing is refused.
  Status set_up(const std::string& role, const std::string& dev, bool up);

  // {"/usr/sbin/ip", "netns", "exec", NAME}: what runs a command inside the namespace
  // (as the ServeNode or Services prefix).
  std::vector<std::string> exec_prefix(const std::string& role) const;
  // Moves the calling thread (only it) into the namespace: sockets it makes from then on
  // live there. For a thread of the test's own that ends there; see run_in.
  Status enter(const std::string& role) const;
  // Runs `fn` on a new thread inside the namespace and waits for it.
  Status run_in(const std::string& role, const std::function<void()>& fn) const;

  // The processes inside the namespace (`ip netns pids`).
  std::vector<int> pids(const std::string& role) const;

 private:
  NetnsLab() = default;
  Status ip(const std::vector<std::string>& args) const;
  void kill_and_delete();

  std::map<std::string, std::string> names_;  // role -> namespace
  int watchdog_pid_ = -1;
  std::string scratch_;  // where `ip` writes its output
};

}  // namespace idforge::integration
