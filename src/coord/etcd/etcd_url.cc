#include "coord/etcd/etcd_url.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "core/text.h"

namespace idforge::coord {
namespace {

// `host` as an IP address in its one spelling ("0::1" as "::1"; an IPv6 zone,
// "%eth0", kept as written); empty when it is not an address. `*v6` tells which.
std::string address_spelling(std::string_view host, bool* v6) {
  const size_t zone = host.find('%');
  const std::string bare(host.substr(0, zone));
  std::array<unsigned char, sizeof(in6_addr)> binary{};
  std::array<char, INET6_ADDRSTRLEN> spelled{};
  *v6 = bare.find(':') != std::string::npos;
  const int family = *v6 ? AF_INET6 : AF_INET;
  if ((zone != std::string_view::npos && (!*v6 || zone + 1 == host.size())) ||
      ::inet_pton(family, bare.c_str(), binary.data()) != 1 ||
      ::inet_ntop(family, binary.data(), spelled.data(), spelled.size()) == nullptr) {
    return "";
  }
  return std::string(spelled.data()) +
         std::string(zone == std::string_view::npos ? "" : host.substr(zone));
}

// `entry` ("HOST:PORT" or "[ADDR]:PORT") as a member; false with `why` otherwise.
bool parse_member(std::string_view entry, EtcdMember* member, std::string* why) {
  std::string_view host;
  std::string_view port;
  bool bracketed = false;
  if (!entry.empty() && entry.front() == '[') {  // [::1]:2379
    const size_t close = entry.find(']');
    if (close == std::string_view::npos) return *why = "'[' without ']'", false;
    host = entry.substr(1, close - 1);
    if (entry.substr(close + 1, 1) != ":") return *why = "no port after the address", false;
    port = entry.substr(close + 2);
    bracketed = true;
  } else {
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) {
      return *why = "no port (etcd listens on 2379 by default)", false;
    }
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
  }
  if (host.empty()) return *why = "no host", false;
  bool v6 = false;
  if (address_spelling(host, &v6).empty() || (bracketed && !v6)) {
    // A name: what DNS allows (letters, digits, '-', '.'), and '_' as /etc/hosts does;
    // not digits and dots alone, which the resolver would read as an address in some
    // other spelling (10.0.0.01), so a member named twice would go unnoticed.
    const auto in_name = [](char c) {
      return text::is_alnum(c) || c == '-' || c == '.' || c == '_';
    };
    const auto in_number = [](char c) { return text::is_digit(c) || c == '.'; };
    const bool name = !bracketed && std::all_of(host.begin(), host.end(), in_name) &&
                      !std::all_of(host.begin(), host.end(), in_number);
    if (!name) {
      return *why = fmt::format("'{}' is neither a host name nor an IP{} address", host,
                                bracketed ? "v6" : ""),
             false;
    }
  }
  int number = 0;
  const auto [end, pec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (pec != std::errc() || end != port.data() + port.size() || number < 1 || number > 65535) {
    return *why = fmt::format("port '{}' is not a number from 1 to 65535", port), false;
  }
  member->host = std::string(host);
  member->port = std::to_string(number);
  member->shown = member->host.find(':') == std::string::npos
                      ? fmt::format("etcd://{}:{}", member->host, member->port)
                      : fmt::format("etcd://[{}]:{}", member->host, member->port);
  return true;
}

// The same member however it is written: a host name in any letter case, an address
// in any of its spellings.
std::string member_key(const EtcdMember& member) {
  bool v6 = false;
  const std::string address = address_spelling(member.host, &v6);
  const std::string host = text::ascii_lower(address.empty() ? member.host : address);
  return host + " " + member.port;
}

}  // namespace

Result<std::vector<EtcdMember>> parse_etcd_target(std::string_view target) {
  constexpr std::string_view kScheme = "etcd://";
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("invalid etcd address '{}': {} (use {})", target, why, kEtcdTargetForm));
  };
  if (!target.starts_with(kScheme)) return bad("it does not start with etcd://");
  std::string_view rest = target.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("it has a path");
  if (rest.find('@') != std::string_view::npos) return bad("user names are not supported");
  const bool several = rest.find(',') != std::string_view::npos;
  std::vector<EtcdMember> members;
  std::vector<std::string> keys;
  for (size_t number = 1;; ++number) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    if (entry.empty() && several) {
      return bad(fmt::format("member {} is empty (a comma too many?)", number));
    }
    EtcdMember member;
    std::string why;
    if (!parse_member(entry, &member, &why)) {
      return bad(several ? fmt::format("member '{}': {}", entry, why) : why);
    }
    std::string key = member_key(member);
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      return bad(fmt::format("member '{}' is named twice", entry));
    }
    if (members.size() == kMaxEtcdMembers) {
      return bad(fmt::format("more than {} members", kMaxEtcdMembers));
    }
    keys.push_back(std::move(key));
    members.push_back(std::move(member));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return members;
}

std::string etcd_target_shown(const std::vector<EtcdMember>& members) {
  std::string out = "etcd://";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    out += std::string_view(members[i].shown).substr(7);  // without "etcd://"
  }
  return out;
}

}  // namespace idforge::coord
