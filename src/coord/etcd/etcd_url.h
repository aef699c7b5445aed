// The etcd target of a registry URL: etcd://HOST:PORT[,HOST:PORT...], every member of
// one etcd cluster (docs/operations.md, "Worker ids").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge::coord {

// One member as the URL names it.
struct EtcdMember {
  std::string host;   // an IPv6 address without its brackets
  std::string port;   // 1 to 65535, without leading zeros
  std::string shown;  // "etcd://HOST:PORT", IPv6 in brackets, for messages
};

// The accepted form, for messages.
inline constexpr std::string_view kEtcdTargetForm = "etcd://HOST:PORT[,HOST:PORT...]";
// The most members one URL may name: etcd advises 3, 5 or 7, and a call may try each.
inline constexpr size_t kMaxEtcdMembers = 16;

// Parses "etcd://HOST:PORT[,HOST:PORT...]" (no path, no query; IPv6 as [ADDR]:PORT; a
// trailing '/' is allowed). InvalidArgument naming the problem and the accepted form
// for anything else: an empty entry, a member named twice (also as [::1] and [0::1], or
// in another letter case), a host that is neither a name nor an address, a bad port.
Result<std::vector<EtcdMember>> parse_etcd_target(std::string_view target);

// "etcd://A:1,B:2" for `members` (shown without "etcd://", joined by commas).
std::string etcd_target_shown(const std::vector<EtcdMember>& members);

}  // namespace idforge::coord
