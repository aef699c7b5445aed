// The ZooKeeper WorkerRegistry, Leaf's scheme with the slot's mark kept beside it:
//
//   PATH/<cluster>/slots/<slot>           EPHEMERAL   identity of the holder: the live lock
//   PATH/<cluster>/identities/<identity>  PERSISTENT  "slot high_water_ms": the slot this
//                                                     identity last held, and its mark
//   PATH/<cluster>/marks/<slot>           PERSISTENT  "high_water_ms" of the slot
//
// The identity's mark is Leaf's check that a machine's clock did not go back while it
// was down. The slot's mark is what keeps IDs unique: a slot passes between identities,
// so the next holder must start above every ID issued with it, whoever issued them.
// Acquire hands out max(both). Both only ever grow (read, compare, set with version).
// Neither records the layout it was written under (the Redis and etcd registries do):
// the two are merged by taking the larger, which marks of two layouts do not allow, and
// a cluster runs one layout. A Lease from here has no high_water_layout, so a generator
// reads the mark in its own layout's terms; a layout change needs a new cluster name.
//
// A lease is the ephemeral node, alive exactly as long as the registry's session. The
// client's I/O thread keeps the session alive, so renew() proves the node is still
// ours and stores the mark; it does not extend anything itself. With an ensemble
// (several hosts in the URL) the session moves to another member when the one it is
// connected to dies or is cut off: the node stays, and a renew that finds the
// connection down waits for it to come back (a third of the TTL, 2 s at most) before
// it fails.
//
// Lease::ttl_ms is the session timeout the member granted, and a renew that finds it
// granted less since (the session moved to a member with a lower maxSessionTimeout)
// reports the lease lost: the keeper's fence deadline, ttl_ms less a margin after the
// last renew sent, must end before the session can.
//
// Lease::start_delay_ms is 0: ZooKeeper deletes an ephemeral node only when its
// session has ended, i.e. after the ensemble heard nothing from the old holder for the
// whole session timeout (by which time that holder's LeaseKeeper, which fences a
// margin before the TTL after its last renew, has stopped issuing), or when the holder
// closed it. One exception: a follower tells the leader of its sessions' activity on
// the leader's next ping (every half tick), so if the follower a holder talks to dies
// in between and the holder reaches no other member, the leader may expire the
// session up to a third of the timeout sooner than ttl_ms after the renew that
// follower served, i.e. before the holder fences. The slot's mark covers that: the
// holder issues only below the mark it stored, and the next holder starts above it.
// Sessions and nodes are written to the transaction log before any reply, so a server
// restart keeps them too. Only an operator's force_release (or a wiped data dir) frees
// a live lease.
#include "coord/zookeeper/zookeeper_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coord/zookeeper/zk_session.h"
#include "coord/zookeeper/zookeeper_records.h"
#include "core/text.h"
#include "core/thread_annotations.h"

namespace idforge::coord {
namespace {

constexpr std::string_view kScheme = "zookeeper://";
constexpr std::string_view kDefaultPath = "/idforge";
constexpr std::string_view kDefaultPort = "2181";
// A fresh session gets at least this long to connect (and at most kMaxConnectWaitMs),
// else the session timeout: the client needs about that to try every listed host.
constexpr int64_t kMinConnectWaitMs = 5000;
constexpr int64_t kMaxConnectWaitMs = 15000;
constexpr int kCasAttempts = 16;
// A renew that meets a dropped connection waits up to ttl / kReconnectShare (at most
// kMaxReconnectWaitMs, which bounds how long stopping waits on a renew) for the client
// to reconnect, and tries again, at most kRenewAttempts times in all. Moving to another
// member takes milliseconds, or an election (about a second) when the leader died.
constexpr int64_t kReconnectShare = 3;
constexpr int64_t kMaxReconnectWaitMs = 2000;
constexpr int kRenewAttempts = 3;
constexpr size_t kMaxIdentity = 512;

// A path component ZooKeeper accepts and that means what it says.
bool plain_component(std::string_view c) {
  if (c.empty() || c == "." || c == "..") return false;
  return std::none_of(c.begin(), c.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u < 0x20 || u == 0x7f || ch == '/';
  });
}

// Node name for an identity: bytes outside printable ASCII, '/' and '%' become %XX, so
// any identity maps to one valid name and back.
std::string node_name(std::string_view identity) {
  std::string out;
  for (char ch : identity) {
    const auto u = static_cast<unsigned char>(ch);
    const bool escape = u <= 0x20 || u >= 0x7f || ch == '/' || ch == '%' ||
                        (ch == '.' && (identity == "." || identity == ".."));
    out += escape ? fmt::format("%{:02X}", u) : std::string(1, ch);
  }
  return out;
}

struct Target {
  std::string hosts;  // "h1:p1,h2:p2", as the C client takes it
  std::string path;   // "/idforge"
  std::string shown() const { return std::string(kScheme) + hosts + path; }
};

// zookeeper://HOST[:PORT][,HOST[:PORT]...][/PATH]
Result<Target> parse_target(std::string_view url) {
  if (url.starts_with(kScheme)) url.remove_prefix(kScheme.size());
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("bad ZooKeeper URL '{}{}': {} (expected {}", kScheme,
                                               url, why,
                                               "zookeeper://HOST:PORT[,HOST:PORT]/PATH)"));
  };
  Target t;
  const size_t slash = url.find('/');
  const std::string_view hosts = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : url.substr(slash);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (hosts.empty()) return bad("no host");
  if (hosts.find('@') != std::string_view::npos) return bad("credentials are not supported");
  size_t start = 0;
  while (start <= hosts.size()) {
    const size_t comma = std::min(hosts.find(',', start), hosts.size());
    std::string host(hosts.substr(start, comma - start));
    if (host.empty()) return bad("empty host in the list");
    const size_t colon = host.rfind(':');
    const bool bare_v6 = host.front() == '[' && host.back() == ']';
    if (colon == std::string::npos || bare_v6) {
      host += ":" + std::string(kDefaultPort);
    } else {
      int port = 0;
      if (!text::parse_int(std::string_view(host).substr(colon + 1), &port) || port < 1 ||
          port > 65535) {
        return bad("port of '" + host + "' is not a number from 1 to 65535");
      }
    }
    t.hosts += (t.hosts.empty() ? "" : ",") + host;
    start = comma + 1;
  }
  if (path.empty() || path == "/") path = kDefaultPath;
  for (size_t i = 1; i <= path.size();) {
    const size_t next = std::min(path.find('/', i), path.size());
    if (!plain_component(path.substr(i, next - i))) {
      return bad("path '" + std::string(path) +
                 "' has an empty, '.', '..' or control-character part");
    }
    i = next + 1;
  }
  t.path = path;
  return t;
}

// What an identity node holds: "slot high_water_ms".
struct IdentityRecord {
  bool found = false;
  uint64_t slot = 0;
  int64_t high_water_ms = 0;
};

Result<IdentityRecord> parse_identity(const std::string& path, std::string_view data) {
  IdentityRecord r;
  r.found = true;
  const size_t space = data.find(' ');
  if (space != std::string_view::npos && text::parse_int(data.substr(0, space), &r.slot) &&
      text::parse_int(data.substr(space + 1), &r.high_water_ms) && r.high_water_ms >= 0) {
    return r;
  }
  // Never guessed as 0: starting below a lost mark could repeat IDs.
  return Status::IoError(
      fmt::format("{} holds '{}', not 'slot high_water_ms'; fix or delete it (deleting forgets the "
                  "identity's mark)",
                  path, data));
}

Result<int64_t> parse_mark(const std::string& path, std::string_view data) {
  int64_t mark = 0;
  if (text::parse_int(data, &mark) && mark >= 0) return mark;
  return Status::IoError(fmt::format(
      "{} holds '{}', not a high-water mark in Unix ms; fix it by hand (deleting it could "
      "let the slot's next holder repeat IDs)",
      path, data));
}

class ZookeeperRegistry final : public WorkerRegistry {
 public:
  ZookeeperRegistry(Target target, RegistryOptions options)
      : target_(std::move(target)),
        options_(std::move(options)),
        base_(target_.path + "/" + options_.cluster),
        records_(make_zookeeper_records([this] { return live_session(); }, base_ + "/fleet",
                                        describe())) {}

  Result<Lease> acquire(const std::string& identity) override;
  Status renew(const Lease& lease, int64_t high_water_ms) override;
  Status release(const Lease& lease) override;
  Status release_at_mark(const Lease& lease, int64_t mark_ms) override;
  Result<std::vector<SlotStatus>> status() override;
  Status force_release(uint64_t slot) override;
  std::string describe() const override {
    return fmt::format("{} cluster {}", target_.shown(), options_.cluster);
  }
  FleetRecords* fleet_records() override { return records_.get(); }

 private:
  // Node contents for update_node: the new data, or nullopt when nothing needs writing.
  using NextData = std::function<Result<std::optional<std::string>>(const std::string* current)>;

  std::string slot_path(uint64_t slot) const { return fmt::format("{}/slots/{}", base_, slot); }
  std::string mark_path(uint64_t slot) const { return fmt::format("{}/marks/{}", base_, slot); }
  std::string identity_path(std::string_view identity) const {
    return base_ + "/identities/" + node_name(identity);
  }

  std::shared_ptr<ZkSession> current_session() const {
    MutexLock lock(mu_);
    return session_;
  }
  Result<std::shared_ptr<ZkSession>> live_session();
  Result<IdentityRecord> read_identity(const ZkSession& s, const std::string& identity) const;
  Result<int64_t> read_mark(const ZkSession& s, uint64_t slot) const;
  Status update_node(const ZkSession& s, const std::string& path, const NextData& next) const;
  Status raise_mark(const ZkSession& s, uint64_t slot, int64_t high_water_ms) const;
  Status raise_identity(const ZkSession& s, const std::string& identity, uint64_t slot,
                        int64_t high_water_ms) const;
  void abandon(const ZkSession& s, uint64_t slot, const std::string& identity) const;
  // One try at renew(): the node is still ours, the marks are stored, it is still ours.
  Status renew_once(const ZkSession& s, const Lease& lease, int64_t owner,
                    int64_t high_water_ms) const;
  Status lost(const Lease& lease, std::string_view why) const {
    return Status::LeaseLost(
        fmt::format("lease on slot {} lost: {} ({})", lease.slot, why, describe()));
  }

  const Target target_;
  const RegistryOptions options_;
  const std::string base_;  // PATH/<cluster>
  // Serializes opening a session, so a renew never waits behind a connect.
  Mutex connect_mu_;
  mutable Mutex mu_;
  std::shared_ptr<ZkSession> session_ IDFORGE_GUARDED_BY(mu_);  // the pointer, not the session
  const std::unique_ptr<FleetRecords> records_;
};

Result<std::shared_ptr<ZkSession>> ZookeeperRegistry::live_session() {
  MutexLock connect_lock(connect_mu_);
  const int connect_wait_ms =
      static_cast<int>(std::clamp(options_.ttl_ms, kMinConnectWaitMs, kMaxConnectWaitMs));
  std::shared_ptr<ZkSession> s = current_session();
  if (s && s->state() != ZkState::kExpired && s->state() != ZkState::kAuthFailed) {
    IDFORGE_RETURN_IF_ERROR(s->wait_connected(connect_wait_ms));
    return s;
  }
  IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> fresh,
                           ZkSession::open(target_.hosts, static_cast<int>(options_.ttl_ms),
                                           connect_wait_ms, target_.shown()));
  for (const char* dir : {"/slots", "/identities", "/marks", "/fleet"}) {
    IDFORGE_RETURN_IF_ERROR(fresh->ensure_path(base_ + dir));
  }
  std::shared_ptr<ZkSession> old;
  {
    MutexLock lock(mu_);
    old = std::exchange(session_, fresh);
  }
  return fresh;  // `old` closes here, outside mu_: closing may wait on the network
}

Result<IdentityRecord> ZookeeperRegistry::read_identity(const ZkSession& s,
                                                        const std::string& identity) const {
  const std::string path = identity_path(identity);
  std::string data;
  const ZkReply r = s.get(path, &data, nullptr);
  if (r.code == ZkCode::kNoNode) return IdentityRecord{};
  if (!r.ok()) return r.status;
  return parse_identity(path, data);
}

Result<int64_t> ZookeeperRegistry::read_mark(const ZkSession& s, uint64_t slot) const {
  const std::string path = mark_path(slot);
  std::string data;
  const ZkReply r = s.get(path, &data, nullptr);
  if (r.code == ZkCode::kNoNode) return int64_t{0};
  if (!r.ok()) return r.status;
  return parse_mark(path, data);
}

Status ZookeeperRegistry::update_node(const ZkSession& s, const std::string& path,
                                      const NextData& next) const {
  for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
    std::string data;
    ZkNodeStat stat;
    const ZkReply got = s.get(path, &data, &stat);
    if (!got.ok() && got.code != ZkCode::kNoNode) return got.status;
    const bool exists = got.ok();
    IDFORGE_ASSIGN_OR_RETURN(std::optional<std::string> wanted, next(exists ? &data : nullptr));
    if (!wanted.has_value()) return Status::Ok();
    const ZkReply put =
        exists ? s.set(path, *wanted, stat.version) : s.create(path, *wanted, /*ephemeral=*/false);
    if (put.ok()) return Status::Ok();
    // Someone wrote (or created, or deleted) it between our read and write: read again.
    if (put.code != ZkCode::kBadVersion && put.code != ZkCode::kNodeExists &&
        put.code != ZkCode::kNoNode) {
      return put.status;
    }
  }
  return Status::Unavailable(fmt::format("{}: {} kept changing under {} attempts to update it",
                                         target_.shown(), path, kCasAttempts));
}

Status ZookeeperRegistry::raise_mark(const ZkSession& s, uint64_t slot,
                                     int64_t high_water_ms) const {
  const std::string path = mark_path(slot);
  return update_node(s, path,
                     [&](const std::string* current) -> Result<std::optional<std::string>> {
                       if (current != nullptr) {
                         IDFORGE_ASSIGN_OR_RETURN(int64_t mark, parse_mark(path, *current));
                         if (mark >= high_water_ms) return std::optional<std::string>();
                       }
                       return std::optional<std::string>(std::to_string(high_water_ms));
                     });
}

Status ZookeeperRegistry::raise_identity(const ZkSession& s, const std::string& identity,
                                         uint64_t slot, int64_t high_water_ms) const {
  const std::string path = identity_path(identity);
  return update_node(
      s, path, [&](const std::string* current) -> Result<std::optional<std::string>> {
        int64_t mark = high_water_ms;
        if (current != nullptr) {
          IDFORGE_ASSIGN_OR_RETURN(IdentityRecord old, parse_identity(path, *current));
          if (old.slot == slot && old.high_water_ms >= high_water_ms) {
            return std::optional<std::string>();
          }
          mark = std::max(mark, old.high_water_ms);
        }
        return std::optional<std::string>(fmt::format("{} {}", slot, mark));
      });
}

// Best effort, after an acquire that created the slot's node but then failed (or may
// have created it: a create cut off by a lost connection can still have happened): let
// the slot go now rather than when the session ends.
void ZookeeperRegistry::abandon(const ZkSession& s, uint64_t slot,
                                const std::string& identity) const {
  if (!s.wait_connected(static_cast<int>(kMinConnectWaitMs)).ok()) return;
  std::string holder;
  ZkNodeStat stat;
  if (s.get(slot_path(slot), &holder, &stat).ok() && stat.ephemeral_owner == s.id() &&
      holder == identity) {
    s.remove(slot_path(slot), stat.version).status.ignore_error();
  }
}

Result<Lease> ZookeeperRegistry::acquire(const std::string& identity) {
  if (identity.empty() || identity.size() > kMaxIdentity) {
    return Status::InvalidArgument(
        fmt::format("identity must be 1 to {} bytes, got {}", kMaxIdentity, identity.size()));
  }
  IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> live, live_session());
  const ZkSession& s = *live;
  IDFORGE_ASSIGN_OR_RETURN(IdentityRecord record, read_identity(s, identity));

  // One listing instead of a failed create per taken slot; a slot taken since the
  // listing just fails its create and the next one is tried.
  std::vector<std::string> names;
  const ZkReply listed = s.children(base_ + "/slots", &names);
  if (!listed.ok()) return listed.status;
  std::set<uint64_t> taken;
  for (const std::string& name : names) {
    uint64_t slot = 0;
    if (text::parse_int(std::string_view(name), &slot)) taken.insert(slot);
  }
  const uint64_t slots = options_.space.slots();
  std::optional<uint64_t> preferred;
  if (record.found && record.slot < slots) preferred = record.slot;

  std::optional<uint64_t> got;
  const auto try_slot = [&](uint64_t slot) -> Status {
    if (taken.count(slot) != 0) return Status::Ok();
    const ZkReply r = s.create(slot_path(slot), identity, /*ephemeral=*/true);
    if (r.ok()) got = slot;
    if (r.ok() || r.code == ZkCode::kNodeExists) return Status::Ok();
    if (r.code == ZkCode::kConnectionLoss) abandon(s, slot, identity);
    return r.status;
  };
  if (preferred) IDFORGE_RETURN_IF_ERROR(try_slot(*preferred));
  for (uint64_t slot = 0; !got && slot < slots; ++slot) {
    if (slot != preferred) IDFORGE_RETURN_IF_ERROR(try_slot(slot));
  }
  if (!got) return all_slots_taken(options_.space, options_.layout_name);

  // Read after our create: whatever the previous holder stored before its node went
  // away is ordered before it, so this read sees it.
  Result<int64_t> mark = read_mark(s, *got);
  Status recorded = mark.ok()
                        ? raise_identity(s, identity, *got, std::max(*mark, record.high_water_ms))
                        : mark.status();
  if (!recorded.ok()) {
    abandon(s, *got, identity);
    return recorded;
  }
  Lease lease;
  lease.slot = *got;
  lease.datacenter = options_.space.datacenter_of(*got);
  lease.worker = options_.space.worker_of(*got);
  lease.high_water_ms = std::max(*mark, record.high_water_ms);
  // What the server granted, which may differ from the request: it is how long the
  // node outlives a silent holder, so fencing must be timed by it.
  lease.ttl_ms = s.timeout_ms();
  lease.start_delay_ms = 0;  // see the top of this file
  lease.token = session_hex(s.id());
  return lease;
}

Status ZookeeperRegistry::renew(const Lease& lease, int64_t high_water_ms) {
  IDFORGE_ASSIGN_OR_RETURN(int64_t owner, parse_session_hex(lease.token));
  if (high_water_ms < 0) return Status::InvalidArgument("high-water mark must not be negative");
  const std::shared_ptr<ZkSession> s = current_session();
  if (!s || s->id() != owner) {
    return lost(lease, fmt::format("its ZooKeeper session {} has ended", lease.token));
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::min(
                                           lease.ttl_ms / kReconnectShare, kMaxReconnectWaitMs));
  Status result = Status::Unavailable("not tried");
  for (int attempt = 0; attempt < kRenewAttempts && !result.ok(); ++attempt) {
    if (attempt > 0 && (result.code() != StatusCode::kUnavailable || Clock::now() >= deadline)) {
      break;  // only a connection lost on the way (or a node that kept changing) is retried
    }
    const int64_t left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    // Not lost yet: the session outlives a short disconnection, and in an ensemble the
    // client is connecting to another member. The keeper fences if this lasts too long.
    if (s->state() != ZkState::kConnected && left > 0) s->wait_connected(left).ignore_error();
    const ZkState state = s->state();
    if (state == ZkState::kExpired || state == ZkState::kAuthFailed) {
      return lost(lease, fmt::format("ZooKeeper session {}: {}", lease.token,
                                     ZkSession::state_name(state)));
    }
    if (state != ZkState::kConnected) {
      return Status::Unavailable(
          fmt::format("{}: not connected ({}); cannot renew the lease on slot {}{}",
                      target_.shown(), ZkSession::state_name(state), lease.slot,
                      attempt == 0 ? "" : " (last try: " + std::string(result.message()) + ")"));
    }
    result = renew_once(*s, lease, owner, high_water_ms);
  }
  if (!result.ok()) return result;
  if (const int granted = s->timeout_ms(); granted < lease.ttl_ms) {
    // Let the slot go now rather than when the session ends: whoever takes it next
    // starts above the mark just stored, and acquiring again times the lease by the
    // timeout granted now.
    ZkNodeStat stat;
    const std::string path = slot_path(lease.slot);
    if (s->exists(path, &stat).ok() && stat.ephemeral_owner == owner) {
      s->remove(path, stat.version).status.ignore_error();
    }
    return lost(lease, fmt::format("the session moved to a ZooKeeper member that granted it {} "
                                   "ms, less than the lease's ttl_ms {}, so it could end before "
                                   "this node fences; give every member the same "
                                   "minSessionTimeout and maxSessionTimeout",
                                   granted, lease.ttl_ms));
  }
  return Status::Ok();
}

Status ZookeeperRegistry::renew_once(const ZkSession& s, const Lease& lease, int64_t owner,
                                     int64_t high_water_ms) const {
  const std::string path = slot_path(lease.slot);
  const auto failed = [&](const Status& error) {
    return s.state() == ZkState::kExpired
               ? lost(lease, fmt::format("ZooKeeper session {} expired", lease.token))
               : error;
  };
  const auto still_ours = [&](const ZkReply& r, const ZkNodeStat& stat,
                              const std::string* holder) -> Status {
    if (r.code == ZkCode::kNoNode) {
      return lost(lease, path + " no longer exists (released by an operator?)");
    }
    if (!r.ok()) return failed(r.status);
    if (stat.ephemeral_owner != owner) {
      return lost(lease, fmt::format("{} now belongs to session {}{}", path,
                                     session_hex(stat.ephemeral_owner),
                                     holder ? " (" + *holder + ")" : std::string()));
    }
    return Status::Ok();
  };
  std::string identity;
  ZkNodeStat before;
  IDFORGE_RETURN_IF_ERROR(still_ours(s.get(path, &identity, &before), before, &identity));
  Status stored = raise_mark(s, lease.slot, high_water_ms);
  if (stored.ok()) stored = raise_identity(s, identity, lease.slot, high_water_ms);
  if (!stored.ok()) return failed(stored);
  // Checked again after the writes: if the node is still the one we held, they happened
  // while we held it, so the slot's next holder (who reads after creating it) sees them.
  ZkNodeStat after;
  IDFORGE_RETURN_IF_ERROR(still_ours(s.exists(path, &after), after, nullptr));
  if (after.czxid != before.czxid) return lost(lease, path + " was deleted and created again");
  return Status::Ok();
}

Status ZookeeperRegistry::release(const Lease& lease) {
  IDFORGE_ASSIGN_OR_RETURN(int64_t owner, parse_session_hex(lease.token));
  const std::shared_ptr<ZkSession> s = current_session();
  // A session that ended took its ephemeral nodes with it.
  if (!s || s->id() != owner) return Status::Ok();
  const std::string path = slot_path(lease.slot);
  ZkNodeStat stat;
  const ZkReply r = s->exists(path, &stat);
  if (r.code == ZkCode::kNoNode || r.code == ZkCode::kSessionExpired) return Status::Ok();
  if (!r.ok()) return r.status;
  if (stat.ephemeral_owner != owner) return Status::Ok();  // someone else's by now
  const ZkReply removed = s->remove(path, stat.version);
  if (removed.ok() || removed.code == ZkCode::kNoNode || removed.code == ZkCode::kSessionExpired) {
    return Status::Ok();
  }
  return removed.status;
}

Status ZookeeperRegistry::release_at_mark(const Lease& lease, int64_t mark_ms) {
  if (mark_ms < 0) return Status::InvalidArgument("a high-water mark is never negative");
  IDFORGE_ASSIGN_OR_RETURN(int64_t owner, parse_session_hex(lease.token));
  const std::shared_ptr<ZkSession> s = current_session();
  // A session that ended took its slot node with it: the marks stay as the last renew
  // left them, which covers every ID issued.
  if (!s || s->id() != owner) return Status::Ok();
  const std::string path = slot_path(lease.slot);
  std::string identity;
  ZkNodeStat before;
  const ZkReply got = s->get(path, &identity, &before);
  if (got.code == ZkCode::kNoNode || got.code == ZkCode::kSessionExpired) return Status::Ok();
  if (!got.ok()) return got.status;
  if (before.ephemeral_owner != owner) return Status::Ok();  // someone else's by now
  // Written in our live session, so ZooKeeper orders them before the end of the session
  // and so before the slot's next holder creates its node and reads the marks (as a
  // renew's writes are). They may go down: the last ID, not the reservation.
  const std::string value = std::to_string(mark_ms);
  Status stored = update_node(*s, mark_path(lease.slot),
                              [&](const std::string*) -> Result<std::optional<std::string>> {
                                return std::optional<std::string>(value);
                              });
  if (stored.ok()) {
    const std::string record = fmt::format("{} {}", lease.slot, mark_ms);
    stored =
        update_node(*s, identity_path(identity),
                    [&](const std::string* current) -> Result<std::optional<std::string>> {
                      // Another slot's record (the identity moved on) is left alone.
                      if (current != nullptr) {
                        IDFORGE_ASSIGN_OR_RETURN(IdentityRecord old,
                                                 parse_identity(identity_path(identity), *current));
                        if (old.slot != lease.slot) return std::optional<std::string>();
                      }
                      return std::optional<std::string>(record);
                    });
  }
  Status released = release(lease);
  return stored.ok() ? released : stored;
}

Result<std::vector<SlotStatus>> ZookeeperRegistry::status() {
  IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> live, live_session());
  const ZkSession& s = *live;
  std::vector<std::string> names;
  const ZkReply listed = s.children(base_ + "/slots", &names);
  if (!listed.ok()) return listed.status;
  std::vector<SlotStatus> out;
  for (const std::string& name : names) {
    SlotStatus st;
    if (!text::parse_int(std::string_view(name), &st.slot)) continue;  // not ours
    const ZkReply r = s.get(slot_path(st.slot), &st.holder, nullptr);
    if (r.code == ZkCode::kNoNode) continue;  // released since the listing
    if (!r.ok()) return r.status;
    IDFORGE_ASSIGN_OR_RETURN(int64_t mark, read_mark(s, st.slot));
    st.high_water_ms = mark;
    st.expires_in_ms = -1;  // held as long as the holder's session lives
    out.push_back(std::move(st));
  }
  std::sort(out.begin(), out.end(),
            [](const SlotStatus& a, const SlotStatus& b) { return a.slot < b.slot; });
  return out;
}

Status ZookeeperRegistry::force_release(uint64_t slot) {
  if (slot >= options_.space.slots()) {
    return Status::InvalidArgument(
        fmt::format("slot {} is out of range: this layout has slots 0 to {}", slot,
                    options_.space.slots() - 1));
  }
  IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> live, live_session());
  const ZkReply r = live->remove(slot_path(slot), -1);
  if (r.code == ZkCode::kNoNode) {
    return Status::NotFound(fmt::format("slot {} is not held ({})", slot, describe()));
  }
  return r.status;
}

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_zookeeper_registry(std::string_view target,
                                                                const RegistryOptions& options) {
  IDFORGE_ASSIGN_OR_RETURN(Target t, parse_target(target));
  if (!plain_component(options.cluster)) {
    return Status::InvalidArgument(fmt::format(
        "cluster name '{}' cannot be a ZooKeeper node name (empty, '.', '..', '/' or control "
        "characters)",
        options.cluster));
  }
  if (options.ttl_ms < 1 || options.ttl_ms > std::numeric_limits<int>::max()) {
    return Status::InvalidArgument(fmt::format("ttl_ms must be from 1 to {}, got {}",
                                               std::numeric_limits<int>::max(), options.ttl_ms));
  }
  // Connects lazily, on the first call: opening a registry for `describe` or a bad
  // URL check must not need the server.
  return std::unique_ptr<WorkerRegistry>(new ZookeeperRegistry(std::move(t), options));
}

}  // namespace idforge::coord
