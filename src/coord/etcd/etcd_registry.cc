// The etcd WorkerRegistry (docs/operations.md, "Worker ids"), through etcd's v3 JSON gateway. Keys,
// for cluster C:
//
//   /idforge/C/workers/<slot>        the live lock: the holder's identity, attached to
//                                    its lease, so it goes when the lease does
//   /idforge/C/identities/<identity> the slot an identity last held; no lease
//   /idforge/C/hw/<slot>             the slot's time high-water mark, Unix ms; no lease
//   /idforge/C/hwlayout/<slot>       the layout that mark was written under; no lease
//                                    (a key of its own, so older versions still read
//                                    the mark; both are written in one transaction)
//
// acquire grants a lease of ttl_ms rounded up to whole seconds (etcd counts seconds and
// raises a TTL below its minimum, 2 s with default settings; Lease::ttl_ms is what it
// granted), reads which slots are taken in one range read, and takes a free one with a
// transaction "create if absent" (create_revision == 0), trying the identity's previous
// slot first. The same transaction records the identity's slot and reads the mark, so a
// slot is never taken without its mark. renew refreshes the lease (keep-alive) and
// stores the mark with a compare-and-swap on the mark key's mod_revision, conditioned on
// the worker key still being attached to this lease: the mark never goes down, and a
// holder whose slot was taken away (force_release) finds out and cannot touch it.
//
// Why Lease::start_delay_ms is 0 here: etcd removes a worker key only when its lease is
// revoked or expires, and a lease expires only after ttl without a keep-alive reaching
// the leader. A holder that cannot renew (etcd down, partitioned, paused) fences at ttl
// less a margin after sending its last successful keep-alive (LeaseKeeper,
// default_fence_after_ms), so it has stopped before anyone else can create the key. A
// restarted etcd gives its leases a full TTL again, which only delays the next holder.
// What this does not cover, by design: an etcd that loses acknowledged writes (a member
// wiped or restored from an old snapshot, --force-new-cluster over lost data). Run etcd
// as the durable, quorum-replicated store it is meant to be.
//
// The URL may name every member of the etcd cluster (etcd://A:1,B:2,C:3): the client
// moves a call on to the next member when one is down, frozen or without a leader, so
// losing a member (or the leader: etcd elects a new one within one to two election
// timeouts) does not fence a holder while a quorum answers. Every transaction here may be sent
// twice (its first answer lost with a member): try_take's compares make a second run find the slot
// its own, renew's find the mark already moved and read it again, and the rest only read or write
// the same values again; so all are EtcdRepeat::kSafe.
//
// force_release deletes the worker key at once. The old holder learns it on its next
// renew; until then it may still issue, but only below the mark it stored, and the new
// holder starts above that mark.
#include "coord/etcd/etcd_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coord/etcd/etcd_client.h"
#include "coord/etcd/etcd_records.h"
#include "core/text.h"
#include "log/log.h"

namespace idforge::coord {
namespace {

namespace txn = etcd_txn;

// Timeouts follow the TTL. The keeper renews every ttl/3 and fences at ttl less a
// margin (at most ttl/20), so a renew sent through a frozen member (its port accepts,
// nothing answers) must time out there and succeed on another member well inside the
// two thirds left: a request gets ttl/5 (at most 2 s: a healthy etcd answers in
// milliseconds, a leader election takes about the election timeout), a connection half
// of that, and a call on all members together ttl/2, after which the keeper tries again
// ttl/10 later.
constexpr int64_t kMinRequestTimeoutMs = 100;
constexpr int64_t kMaxRequestTimeoutMs = 2000;
constexpr int64_t kMinConnectTimeoutMs = 50;
constexpr int64_t kMaxConnectTimeoutMs = 1000;
// A member that failed is tried first again only after this: long enough not to wait on
// a frozen member at every call, short enough to spread over the members again soon.
constexpr int kMemberBackoffMs = 2000;
// Only the holder writes its slot's mark (its keeper's renews and its generator's
// stores), so a compare-and-swap loses only to a concurrent renew of its own; this many
// losses in a row mean something else is writing the key.
constexpr int kMarkAttempts = 16;
constexpr int kMaxSlotBits = 32;

class EtcdRegistry final : public WorkerRegistry {
 public:
  EtcdRegistry(std::unique_ptr<EtcdClient> client, const RegistryOptions& options)
      : options_(options),
        client_(std::move(client)),
        prefix_(fmt::format("/idforge/{}/", options.cluster)),
        described_(fmt::format("{} cluster {}", client_->shown(), options.cluster)),
        records_(make_etcd_records(*client_, prefix_, described_)) {}

  // Fails unless a member answers, or when the members belong to different clusters.
  Status open() { return client_->check_members(); }

  Result<Lease> acquire(const std::string& identity) override;
  // One grant and one walk over the slots; NotFound when the grant expired during the
  // walk (etcd: "requested lease not found").
  Result<Lease> acquire_with_new_grant(const std::string& identity);
  Status renew(const Lease& lease, int64_t high_water_ms) override;
  Status release(const Lease& lease) override;
  Status release_at_mark(const Lease& lease, int64_t mark_ms) override;
  Result<std::vector<SlotStatus>> status() override;
  Status force_release(uint64_t slot) override;
  std::string describe() const override { return described_; }
  FleetRecords* fleet_records() override { return records_.get(); }

 private:
  std::string workers_prefix() const { return prefix_ + "workers/"; }
  std::string hw_prefix() const { return prefix_ + "hw/"; }
  std::string worker_key(uint64_t slot) const {
    return fmt::format("{}{}", workers_prefix(), slot);
  }
  std::string hw_key(uint64_t slot) const { return fmt::format("{}{}", hw_prefix(), slot); }
  std::string hw_layout_key(uint64_t slot) const {
    return fmt::format("{}hwlayout/{}", prefix_, slot);
  }
  std::string identity_key(std::string_view identity) const {
    return fmt::format("{}identities/{}", prefix_, identity);
  }

  Status check_slot(uint64_t slot) const;
  Result<int64_t> lease_id(const Lease& lease) const;
  // The slot a key under `prefix` names; false for a key that is not ours (a longer
  // cluster name's, or a slot outside this layout's space).
  bool slot_of(std::string_view key, std::string_view prefix, uint64_t* slot) const;
  Result<int64_t> read_mark(uint64_t slot, const std::vector<EtcdKeyValue>& kvs) const;
  Result<std::vector<uint64_t>> taken_slots();
  // Takes `slot` for `lease` and fills *out: true; false when someone else holds it.
  Result<bool> try_take(uint64_t slot, const std::string& identity, int64_t lease, Lease* out);
  Status lost(uint64_t slot, const std::vector<EtcdKeyValue>& worker) const;

  const RegistryOptions options_;
  const std::unique_ptr<EtcdClient> client_;
  const std::string prefix_;
  const std::string described_;
  const std::unique_ptr<FleetRecords> records_;
};

Status EtcdRegistry::check_slot(uint64_t slot) const {
  return idforge::check_slot(options_.space, slot, options_.layout_name);
}

Result<int64_t> EtcdRegistry::lease_id(const Lease& lease) const {
  int64_t id = 0;
  if (!text::parse_int(lease.token, &id) || id == 0) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not an etcd lease id (a lease from another registry?)", lease.token));
  }
  return id;
}

bool EtcdRegistry::slot_of(std::string_view key, std::string_view prefix, uint64_t* slot) const {
  if (!key.starts_with(prefix)) return false;
  return text::parse_int(key.substr(prefix.size()), slot) && *slot < options_.space.slots();
}

Result<int64_t> EtcdRegistry::read_mark(uint64_t slot, const std::vector<EtcdKeyValue>& kvs) const {
  if (kvs.empty()) return int64_t{0};
  int64_t mark = 0;
  if (!text::parse_int(kvs.front().value, &mark) || mark < 0) {
    // Guessing low could repeat IDs.
    return Status::IoError(fmt::format("{}: {} holds '{}', not a time in Unix ms (edited by hand?)",
                                       described_, hw_key(slot), kvs.front().value.substr(0, 64)));
  }
  return mark;
}

Result<std::vector<uint64_t>> EtcdRegistry::taken_slots() {
  const std::string prefix = workers_prefix();
  IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs,
                           client_->range(prefix, prefix_range_end(prefix), /*keys_only=*/true));
  std::vector<uint64_t> taken;
  taken.reserve(kvs.size());
  for (const EtcdKeyValue& kv : kvs) {
    uint64_t slot = 0;
    if (slot_of(kv.key, prefix, &slot)) taken.push_back(slot);
  }
  std::sort(taken.begin(), taken.end());
  return taken;
}

Result<bool> EtcdRegistry::try_take(uint64_t slot, const std::string& identity, int64_t lease,
                                    Lease* out) {
  const std::string worker = worker_key(slot);
  IDFORGE_ASSIGN_OR_RETURN(EtcdTxnResult got,
                           client_->txn({txn::create_revision_is(worker, 0)},
                                        {txn::put(worker, identity, lease),
                                         txn::put(identity_key(identity), std::to_string(slot)),
                                         txn::get(hw_key(slot)), txn::get(hw_layout_key(slot))},
                                        {txn::get(worker)}, EtcdRepeat::kSafe));
  std::vector<EtcdKeyValue> mark_kvs;
  std::vector<EtcdKeyValue> layout_kvs;
  if (got.succeeded) {
    if (got.ranges.size() != 4) return Status::IoError(described_ + ": unexpected txn answer");
    mark_kvs = std::move(got.ranges[2]);
    layout_kvs = std::move(got.ranges[3]);
  } else {
    // Ours already when the client sent this transaction twice (its first answer lost
    // with a dropped connection); then the identity and mark steps are still to do.
    if (got.ranges.size() != 1 || got.ranges[0].empty() || got.ranges[0][0].lease != lease) {
      return false;
    }
    IDFORGE_ASSIGN_OR_RETURN(EtcdTxnResult rest,
                             client_->txn({},
                                          {txn::put(identity_key(identity), std::to_string(slot)),
                                           txn::get(hw_key(slot)), txn::get(hw_layout_key(slot))},
                                          {}, EtcdRepeat::kSafe));
    if (rest.ranges.size() != 3) return Status::IoError(described_ + ": unexpected txn answer");
    mark_kvs = std::move(rest.ranges[1]);
    layout_kvs = std::move(rest.ranges[2]);
  }
  IDFORGE_ASSIGN_OR_RETURN(int64_t mark, read_mark(slot, mark_kvs));
  out->slot = slot;
  out->datacenter = options_.space.datacenter_of(slot);
  out->worker = options_.space.worker_of(slot);
  out->high_water_ms = mark;
  out->high_water_layout = layout_kvs.empty() ? std::string() : layout_kvs.front().value;
  return true;
}

Result<Lease> EtcdRegistry::acquire(const std::string& identity) {
  if (identity.empty()) return Status::InvalidArgument("the worker identity is empty");
  // A walk that loses many races on a slow etcd may outlive its grant (a TTL of one or
  // two seconds): its next transaction then fails whole, so nothing is held under the
  // expired lease, and a new grant and a new walk are safe. Bounded: an etcd that keeps
  // expiring fresh grants is not one to hold a lease on.
  constexpr int kGrantAttempts = 3;
  Result<Lease> lease = acquire_with_new_grant(identity);
  for (int attempt = 1; attempt < kGrantAttempts && lease.status().code() == StatusCode::kNotFound;
       ++attempt) {
    log::warn("etcd.lease_expired_while_acquiring",
              {{"registry", described_}, {"attempt", attempt}});
    lease = acquire_with_new_grant(identity);
  }
  return lease;
}

Result<Lease> EtcdRegistry::acquire_with_new_grant(const std::string& identity) {
  const int64_t ttl_s = std::max<int64_t>(1, (options_.ttl_ms + 999) / 1000);
  IDFORGE_ASSIGN_OR_RETURN(EtcdLeaseGrant grant, client_->lease_grant(ttl_s));
  Lease lease;
  lease.ttl_ms = grant.ttl_s * 1000;
  lease.start_delay_ms = 0;  // see the top of this file
  lease.token = std::to_string(grant.id);

  // Every way out but success gives the lease back, which frees anything it holds.
  const auto give_back = [&](Status why) {
    client_->lease_revoke(grant.id).ignore_error();
    return why;
  };

  Result<std::vector<uint64_t>> taken = taken_slots();
  if (!taken.ok()) return give_back(taken.status());
  const auto is_taken = [&](uint64_t slot) {
    return std::binary_search(taken->begin(), taken->end(), slot);
  };
  // The identity's previous slot first, if it looks free.
  Result<std::vector<EtcdKeyValue>> previous = client_->range(identity_key(identity));
  if (!previous.ok()) return give_back(previous.status());
  uint64_t previous_slot = 0;
  const bool has_previous = !previous->empty() &&
                            text::parse_int(previous->front().value, &previous_slot) &&
                            previous_slot < options_.space.slots() && !is_taken(previous_slot);
  if (has_previous) {
    Result<bool> got = try_take(previous_slot, identity, grant.id, &lease);
    if (!got.ok()) return give_back(got.status());
    if (*got) return lease;
  }

  // Free slots in order, skipping the taken ones. A slot taken since the range read just
  // loses its transaction; the walk stops at the first slot won, so it costs one
  // transaction per race lost, not one per slot.
  const uint64_t slots = options_.space.slots();
  if (taken->size() < slots) {
    auto next_taken = taken->begin();
    for (uint64_t slot = 0; slot < slots; ++slot) {
      while (next_taken != taken->end() && *next_taken < slot) ++next_taken;
      if ((next_taken != taken->end() && *next_taken == slot) ||
          (has_previous && slot == previous_slot)) {
        continue;
      }
      Result<bool> got = try_take(slot, identity, grant.id, &lease);
      if (!got.ok()) return give_back(got.status());
      if (*got) return lease;
    }
  }
  return give_back(all_slots_taken(options_.space, options_.layout_name));
}

Status EtcdRegistry::lost(uint64_t slot, const std::vector<EtcdKeyValue>& worker) const {
  return Status::LeaseLost(fmt::format(
      "lease on slot {} lost: {} in {}", slot,
      worker.empty() ? std::string("it expired or was released")
                     : fmt::format("'{}' holds it now", worker.front().value.substr(0, 200)),
      described_));
}

Status EtcdRegistry::renew(const Lease& lease, int64_t high_water_ms) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  IDFORGE_ASSIGN_OR_RETURN(int64_t id, lease_id(lease));
  Result<int64_t> ttl = client_->lease_keep_alive(id);
  if (!ttl.ok()) {
    return Status(ttl.status().code(), fmt::format("renewing the lease on slot {}: {}", lease.slot,
                                                   ttl.status().message()));
  }
  if (*ttl <= 0) return lost(lease.slot, {});

  const std::string worker = worker_key(lease.slot);
  const std::string mark_key = hw_key(lease.slot);
  const std::string layout_key = hw_layout_key(lease.slot);
  for (int attempt = 0; attempt < kMarkAttempts; ++attempt) {
    IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> old, client_->range(mark_key));
    IDFORGE_ASSIGN_OR_RETURN(int64_t old_mark, read_mark(lease.slot, old));
    IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> old_layout, client_->range(layout_key));
    const bool relayout =
        !lease.high_water_layout.empty() &&
        (old_layout.empty() || old_layout.front().value != lease.high_water_layout);
    const bool raise = high_water_ms > old_mark;
    // The mark moves only while the worker key is this lease's, and only from the value
    // just read: never down, never by a holder that lost the slot. The layout is the
    // writer's and goes with it.
    std::vector<nlohmann::json> compares = {txn::lease_is(worker, id)};
    std::vector<nlohmann::json> success;
    if (raise || relayout) {
      compares.push_back(
          txn::mod_revision_is(mark_key, old.empty() ? 0 : old.front().mod_revision));
      success.push_back(txn::put(mark_key, std::to_string(std::max(high_water_ms, old_mark))));
      if (!lease.high_water_layout.empty()) {
        success.push_back(txn::put(layout_key, lease.high_water_layout));
      }
    }
    IDFORGE_ASSIGN_OR_RETURN(
        EtcdTxnResult got, client_->txn(compares, success, {txn::get(worker)}, EtcdRepeat::kSafe));
    if (got.succeeded) return Status::Ok();
    if (got.ranges.size() != 1) return Status::IoError(described_ + ": unexpected txn answer");
    const std::vector<EtcdKeyValue>& holder = got.ranges[0];
    if (holder.empty() || holder.front().lease != id) return lost(lease.slot, holder);
  }
  return Status::Internal(
      fmt::format("{}: {} keeps changing under its holder; is another process writing it?",
                  described_, mark_key));
}

Status EtcdRegistry::release(const Lease& lease) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  IDFORGE_ASSIGN_OR_RETURN(int64_t id, lease_id(lease));
  // Revoking deletes only the keys attached to this lease: if the slot went to someone
  // else meanwhile, their key stays.
  Status revoked = client_->lease_revoke(id);
  if (revoked.code() == StatusCode::kNotFound) return Status::Ok();  // expired already
  return revoked;
}

Status EtcdRegistry::release_at_mark(const Lease& lease, int64_t mark_ms) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  IDFORGE_ASSIGN_OR_RETURN(int64_t id, lease_id(lease));
  if (mark_ms < 0) return Status::InvalidArgument("a high-water mark is never negative");
  const std::string worker = worker_key(lease.slot);
  // Only while the worker key is still this lease's: a holder that lost the slot must
  // never lower what its next holder started above.
  std::vector<nlohmann::json> success = {txn::put(hw_key(lease.slot), std::to_string(mark_ms))};
  if (!lease.high_water_layout.empty()) {
    success.push_back(txn::put(hw_layout_key(lease.slot), lease.high_water_layout));
  }
  IDFORGE_ASSIGN_OR_RETURN(EtcdTxnResult got, client_->txn({txn::lease_is(worker, id)}, success,
                                                           {txn::get(worker)}, EtcdRepeat::kSafe));
  if (!got.succeeded) {
    if (got.ranges.size() != 1) return Status::IoError(described_ + ": unexpected txn answer");
    return lost(lease.slot, got.ranges[0]);
  }
  return release(lease);
}

Result<std::vector<SlotStatus>> EtcdRegistry::status() {
  const std::string workers = workers_prefix();
  IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> held,
                           client_->range(workers, prefix_range_end(workers)));
  const std::string marks_prefix = hw_prefix();
  IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> marks,
                           client_->range(marks_prefix, prefix_range_end(marks_prefix)));
  std::map<uint64_t, int64_t> mark_of;
  for (const EtcdKeyValue& kv : marks) {
    uint64_t slot = 0;
    int64_t mark = 0;
    if (slot_of(kv.key, marks_prefix, &slot) && text::parse_int(kv.value, &mark))
      mark_of[slot] = mark;
  }

  std::map<int64_t, int64_t> ttl_of;  // lease id -> seconds left, asked once per lease
  std::vector<SlotStatus> out;
  for (const EtcdKeyValue& kv : held) {
    SlotStatus s;
    if (!slot_of(kv.key, workers, &s.slot)) continue;
    s.holder = kv.value;
    if (const auto it = mark_of.find(s.slot); it != mark_of.end()) s.high_water_ms = it->second;
    if (kv.lease != 0) {
      auto it = ttl_of.find(kv.lease);
      if (it == ttl_of.end()) {
        IDFORGE_ASSIGN_OR_RETURN(int64_t ttl, client_->lease_time_to_live(kv.lease));
        it = ttl_of.emplace(kv.lease, ttl).first;
      }
      if (it->second < 0) continue;  // expired since the range read: free now
      s.expires_in_ms = it->second * 1000;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const SlotStatus& a, const SlotStatus& b) { return a.slot < b.slot; });
  return out;
}

Status EtcdRegistry::force_release(uint64_t slot) {
  IDFORGE_RETURN_IF_ERROR(check_slot(slot));
  IDFORGE_ASSIGN_OR_RETURN(int64_t deleted, client_->delete_key(worker_key(slot)));
  if (deleted == 0) {
    return Status::NotFound(fmt::format("slot {} is not taken in {}", slot, described_));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_etcd_registry(std::string_view target,
                                                           const RegistryOptions& options) {
  const int bits = options.space.datacenter_bits + options.space.worker_bits;
  if (options.space.datacenter_bits < 0 || options.space.worker_bits < 0 || bits > kMaxSlotBits) {
    return Status::InvalidArgument(
        fmt::format("the etcd registry takes 0 to {} node bits, got datacenter {} + worker {}",
                    kMaxSlotBits, options.space.datacenter_bits, options.space.worker_bits));
  }
  if (options.ttl_ms < 1) {
    return Status::InvalidArgument(fmt::format("ttl_ms must be positive, got {}", options.ttl_ms));
  }
  if (options.cluster.empty() || options.cluster.find('/') != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("the cluster name '{}' is empty or holds a '/'", options.cluster));
  }
  // From the TTL acquire asks for (whole seconds); etcd may grant more, which only
  // leaves more room.
  const int64_t ttl_ms = std::max<int64_t>(1, (options.ttl_ms + 999) / 1000) * 1000;
  EtcdClient::Timeouts timeouts;
  timeouts.request_ms =
      static_cast<int>(std::clamp<int64_t>(ttl_ms / 5, kMinRequestTimeoutMs, kMaxRequestTimeoutMs));
  timeouts.connect_ms = static_cast<int>(
      std::clamp<int64_t>(timeouts.request_ms / 2, kMinConnectTimeoutMs, kMaxConnectTimeoutMs));
  timeouts.call_ms = static_cast<int>(std::max<int64_t>(ttl_ms / 2, timeouts.request_ms));
  timeouts.backoff_ms = kMemberBackoffMs;
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::open(target, timeouts));
  auto registry = std::make_unique<EtcdRegistry>(std::move(client), options);
  IDFORGE_RETURN_IF_ERROR(registry->open());
  return std::unique_ptr<WorkerRegistry>(std::move(registry));
}

}  // namespace idforge::coord
