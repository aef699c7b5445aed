// The Redis WorkerRegistry (docs/operations.md, "Worker ids"). Keys, for cluster C:
//
//   idforge:C:worker:<slot>      the lease: "<identity>#<32 hex>" (the token), PX ttl
//   idforge:C:identity:<id>      the slot an identity last held; no TTL
//   idforge:C:hw:<slot>          the slot's time high-water mark, Unix ms; no TTL
//   idforge:C:hwlayout:<slot>    the layout that mark was written under; no TTL
//   idforge:C:history            "<master_replid>/<run_id>" of the server that granted
//                                the last lease; no TTL
//   idforge:C:quarantine         set when that history changed; PX 2 x ttl
//
// acquire, renew and release are one Lua script each, so no other client's command
// falls between a check and the write that depends on it. There is no counter (a
// GET/INCR/SET machine-id counter wraps onto live ids and never frees one): acquire looks
// for a free slot in [0, 2^(datacenter+worker bits)), so it can never hand out a number
// past the field's maximum, and an expired or released slot is free again.
//
// Cost: acquire tries the identity's previous slot, then slots from 0 up, and stops at
// the first free one. Leases cluster at the low end, so that is O(live holders), not
// O(slots); only a space with every slot taken is scanned whole (2^10 slots: well under
// a millisecond; baidu's 2^22: seconds of a blocked Redis, but that needs four million
// live holders). status() walks the keys with SCAN, which does not block the server.
//
// A Redis that loses its data (FLUSHALL, a restart without persistence, a failover to a
// replica that missed the last writes) forgets leases and marks while their holders
// still issue. Each such holder's next renew finds its key gone (or another token) and
// fails as lost; its LeaseKeeper has fenced it anyway by its fence deadline (ttl less a
// margin, less max_drift_ms: see may_lose_marks) after its last good renew was sent,
// which was before the loss. When the loss happened nothing here can tell, but THAT
// the server's history changed it can: every acquire compares idforge:C:history with
// the server's replication id and run id (both new at every start of a server and at
// every promotion) inside its script. Missing (a flush, an empty restart, a brand-new
// registry) or different (a restart, a failover): any free slot may still be used by a
// live node that does not know yet. The script records the new history and sets the
// quarantine key for 2 x ttl, and every slot taken while it lasts gets
// Lease::start_delay_ms = what is left of it. The first acquire after a loss comes at
// or after it, so a new holder issues no earlier than a whole TTL (plus the margin)
// after every forgotten holder stopped; the forgotten holder's mark went with the data,
// so IDs stay unique while the two hosts' clocks differ by less than that TTL. On an
// unchanged history the slot's mark survived: its next holder starts above every ID
// issued under it and needs no wait (start_delay_ms = 0). Assumed: every node of a
// cluster name uses the same ttl_ms (the quarantine is counted in the TTL of whichever
// node saw the change first), and Redis's clock runs the quarantine as it runs the TTLs.
//
// With ?min_replicas=N each acquire and renew WAITs for N replicas, and fewer within
// replica_wait_ms fails it: a primary cut off from its replicas (the losing side of a
// Sentinel failover) then renews no lease, so its holders fence.
//
// The layout sits in a key of its own so that an older version, which knows only the
// mark key, keeps working beside this one (it leaves the layout as it was; a cluster
// name runs one layout anyway). Both keys go together in one script.
//
// Needs one Redis (standalone or behind Sentinel: redis-sentinel://), not Redis
// Cluster: the acquire script computes key names as it scans, which Cluster forbids.
// Every node of a cluster name must use the same layout: slot numbers of different
// node-bit splits mean different (datacenter, worker) pairs, so nothing here could
// keep them apart.
#include "coord/redis/redis_registry.h"

#include <fmt/format.h>
#include <hiredis.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coord/redis/redis_records.h"
#include "core/random.h"
#include "core/text.h"
#include "core/thread_annotations.h"
#include "log/log.h"
#include "redis/redis_connection.h"
#include "url/url_options.h"

namespace idforge::coord {
namespace {

using redis::RedisClient;
using redis::RedisConnection;
using redis::RedisReplyPtr;
using redis::reply_text;

constexpr size_t kMaxConnections = 2;
// A renew slower than half the TTL is of little use: the keeper renews every third of
// it and fences before its end. So the command timeout follows the TTL, within these
// bounds.
constexpr int kMinCommandTimeoutMs = 200;
constexpr int kMaxCommandTimeoutMs = 5000;
constexpr int kMaxConnectTimeoutMs = 3000;
// Lua counts in doubles: slot numbers stay exact up to 2^53.
constexpr int kMaxSlotBits = 52;
constexpr int kTokenRandomBytes = 16;
// A changed history quarantines the slots taken for this many TTLs (see the top).
constexpr int64_t kQuarantineTtls = 2;
constexpr int64_t kScanCount = 1000;

// ARGV: key prefix "idforge:C:", identity, token, ttl ms, number of slots, quarantine ms.
// Returns {slot, stored high-water mark ("0" when none), its layout ("" when unknown),
// ms left of the quarantine (0: none), why it was set ("<was> <now> <token of the acquire
// that noticed>", "" when none)}, or nil when all are taken. The history is checked
// first, so a quarantine set now covers this slot too.
constexpr const char* kAcquireLua = R"lua(
if redis.replicate_commands then pcall(redis.replicate_commands) end
local prefix, token, ttl = ARGV[1], ARGV[3], ARGV[4]
local slots = tonumber(ARGV[5])
local identity_key = prefix .. 'identity:' .. ARGV[2]
local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or '?'
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '?'
local history = replid .. '/' .. run_id
local recorded = redis.call('GET', prefix .. 'history')
local wait
if recorded ~= history then
  redis.call('SET', prefix .. 'history', history)
  redis.call('SET', prefix .. 'quarantine', (recorded or 'none') .. ' ' .. history .. ' ' .. token,
             'PX', ARGV[6])
  -- Set just now: all of it. Redis 7.0 reads its clock anew for PTTL inside a script, so
  -- a millisecond may already be gone.
  wait = tonumber(ARGV[6])
else
  wait = redis.call('PTTL', prefix .. 'quarantine')
end
local why = ''
if wait > 0 then why = redis.call('GET', prefix .. 'quarantine') or '' else wait = 0 end
local function take(slot)
  local name = string.format('%d', slot)
  if not redis.call('SET', prefix .. 'worker:' .. name, token, 'NX', 'PX', ttl) then
    return nil
  end
  redis.call('SET', identity_key, name)
  return {slot, redis.call('GET', prefix .. 'hw:' .. name) or '0',
          redis.call('GET', prefix .. 'hwlayout:' .. name) or '', wait, why}
end
local previous = redis.call('GET', identity_key)
if previous and string.match(previous, '^%d+$') and tonumber(previous) < slots then
  local got = take(tonumber(previous))
  if got then return got end
end
for slot = 0, slots - 1 do
  local got = take(slot)
  if got then return got end
end
return false
)lua";

// KEYS: the lease, the slot's mark, its layout. ARGV: token, ttl ms, mark (digits;
// "0" = none), the mark's layout ("" = leave it).
// Returns {1, ''} when renewed, else {0, the key's holder or ''} and changes nothing:
// a lease that is gone is never re-created here, since someone else may hold it by now.
constexpr const char* kRenewLua = R"lua(
local holder = redis.call('GET', KEYS[1])
if holder ~= ARGV[1] then return {0, holder or ''} end
local old = redis.call('GET', KEYS[2])
if old and not string.match(old, '^%d+$') then
  return redis.error_reply('IDFORGE_BADHW ' .. old)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] ~= '0' and (not old or tonumber(ARGV[3]) > tonumber(old)) then
  redis.call('SET', KEYS[2], ARGV[3])
end
if ARGV[4] ~= '' then redis.call('SET', KEYS[3], ARGV[4]) end
return {1, ''}
)lua";

// KEYS: the lease. ARGV: token. Returns {1, ''} when deleted, else {0, holder or ''}.
constexpr const char* kReleaseLua = R"lua(
local holder = redis.call('GET', KEYS[1])
if holder ~= ARGV[1] then return {0, holder or ''} end
redis.call('DEL', KEYS[1])
return {1, ''}
)lua";

// KEYS: the lease, its mark, its mark's layout. ARGV: token, the final mark, its layout
// ('' to leave it). A clean stop: the mark is set as given (it may go down: the holder's
// last ID, not the reservation it kept ahead) and the lease deleted, in one step, only
// while the token holds it. Returns as kReleaseLua.
constexpr const char* kReleaseAtMarkLua = R"lua(
local holder = redis.call('GET', KEYS[1])
if holder ~= ARGV[1] then return {0, holder or ''} end
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then redis.call('SET', KEYS[3], ARGV[3]) end
redis.call('DEL', KEYS[1])
return {1, ''}
)lua";

// ARGV: key prefix "idforge:C:", its glob pattern. A brand-new registry: records the
// server's history as the acquire script would, without the quarantine, so the first
// leases need not wait. Returns {1, history}, or {0, a key of the cluster} when the
// cluster holds any key at all (it is not new: it may have lost leases, whose holders
// the quarantine is for).
constexpr const char* kRecordNewLua = R"lua(
if redis.replicate_commands then pcall(redis.replicate_commands) end
local found = redis.call('KEYS', ARGV[2])
if #found > 0 then return {0, found[1]} end
local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or '?'
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '?'
local history = replid .. '/' .. run_id
redis.call('SET', ARGV[1] .. 'history', history)
return {1, history}
)lua";

enum Script : size_t {
  kAcquire,
  kRenew,
  kRelease,
  kReleaseAtMark,
  kReplaceRecord,
  kRecordNew,
  kScriptCount
};
const char* const kScripts[kScriptCount] = {kAcquireLua,       kRenewLua,        kReleaseLua,
                                            kReleaseAtMarkLua, kRedisReplaceLua, kRecordNewLua};

std::string random_hex(int bytes) {
  std::vector<uint8_t> raw(static_cast<size_t>(bytes));
  random_bytes(raw);
  std::string out;
  out.reserve(raw.size() * 2);
  for (uint8_t b : raw) out += fmt::format("{:02x}", b);
  return out;
}

// The identity part of a token; the random part is after the last '#'.
std::string holder_of(std::string_view token) {
  const size_t hash = token.rfind('#');
  return std::string(hash == std::string_view::npos ? token : token.substr(0, hash));
}

// SCAN's MATCH is a glob: a cluster name holding *, ?, [ or \ must match only itself.
std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Why a lease waits, for the log. `why` is the quarantine key's "<was> <now> <token>"
// (was: "none" when no history had been recorded).
std::string quarantine_line(const std::string& described, const Lease& lease,
                            std::string_view why) {
  std::string_view fields[3];
  for (std::string_view& f : fields) {
    const size_t space = why.find(' ');
    f = why.substr(0, space);
    why = space == std::string_view::npos ? std::string_view() : why.substr(space + 1);
  }
  const auto& [was, now, token] = fields;
  return fmt::format(
      "{}: slot {} waits {} ms before issuing: {} (noticed by '{}'), so Redis may have "
      "forgotten leases whose holders still issue (a flush, a restart without its data, a "
      "failover to a replica that missed writes); every slot taken within {} TTLs of that "
      "waits until those holders have fenced",
      described, lease.slot, lease.start_delay_ms,
      was == "none"
          ? fmt::format("no server history was recorded (a new registry, or its data is gone), "
                        "now {}",
                        now)
          : fmt::format("the server's history changed from {} to {}", was, now),
      holder_of(token), kQuarantineTtls);
}

// A {code, text} reply of the renew and release scripts.
bool read_pair(const redisReply* r, long long* code, std::string* text) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_STRING) {
    return false;
  }
  *code = r->element[0]->integer;
  *text = std::string(reply_text(r->element[1]));
  return true;
}

class RedisRegistry final : public WorkerRegistry {
 public:
  RedisRegistry(redis::RedisTarget target, const RegistryOptions& options,
                redis::RedisTimeouts timeouts, RedisLeaseWrites writes)
      : options_(options),
        writes_(writes),
        client_(std::move(target), kScripts, timeouts, kMaxConnections),
        prefix_(fmt::format("idforge:{}:", options.cluster)),
        described_(fmt::format("{} cluster {}", client_.shown(), options.cluster)),
        records_(make_redis_records(client_, kReplaceRecord, prefix_, described_,
                                    [this](RedisConnection& c) {
                                      return wait_for_replicas(c, "a fleet record's write");
                                    })) {}

  Status open() { return client_.ping(); }

  Result<Lease> acquire(const std::string& identity) override;
  Status renew(const Lease& lease, int64_t high_water_ms) override;
  Status release(const Lease& lease) override { return release_with(lease, nullptr); }
  Status release_at_mark(const Lease& lease, int64_t mark_ms) override {
    if (mark_ms < 0) return Status::InvalidArgument("a high-water mark is never negative");
    return release_with(lease, &mark_ms);
  }
  Result<std::vector<SlotStatus>> status() override;
  Status force_release(uint64_t slot) override;
  std::string describe() const override { return described_; }
  FleetRecords* fleet_records() override { return records_.get(); }
  Status record_new() override;

 private:
  std::string worker_key(uint64_t slot) const { return fmt::format("{}worker:{}", prefix_, slot); }
  std::string hw_key(uint64_t slot) const { return fmt::format("{}hw:{}", prefix_, slot); }
  std::string hw_layout_key(uint64_t slot) const {
    return fmt::format("{}hwlayout:{}", prefix_, slot);
  }
  Status check_slot(uint64_t slot) const;
  // Releases `lease`, storing *mark (and the lease's layout) first when given.
  Status release_with(const Lease& lease, const int64_t* mark);
  Status reply_error(const redisReply* r, std::string_view doing) const {
    return redis::redis_error_status(client_.shown(), r, doing);
  }
  Status unexpected(std::string_view doing) const {
    return Status::Internal(fmt::format("{}: {}: unexpected reply", described_, doing));
  }
  // With min_replicas: WAITs for them after a write `what` ("the renew of slot 3").
  Status wait_for_replicas(RedisConnection& c, const std::string& what);
  // Logs once (as `event`, warn) why a lease must wait, or why replicas refused a write;
  // `key` tells the events apart, so each is said once however often it repeats.
  void tell_once(const std::string& key, std::string_view event, const std::string& line);

  const RegistryOptions options_;
  const RedisLeaseWrites writes_;
  RedisClient client_;
  const std::string prefix_;
  const std::string described_;
  Mutex told_mu_;
  std::string told_ IDFORGE_GUARDED_BY(told_mu_);  // the key of the last line written
  const std::unique_ptr<FleetRecords> records_;    // declared last: its callback uses the rest
};

Status RedisRegistry::check_slot(uint64_t slot) const {
  return idforge::check_slot(options_.space, slot, options_.layout_name);
}

void RedisRegistry::tell_once(const std::string& key, std::string_view event,
                              const std::string& line) {
  {
    MutexLock lock(told_mu_);
    if (told_ == key) return;
    told_ = key;
  }
  log::warn(event, {{"registry", described_}, {"message", line}});
}

Status RedisRegistry::wait_for_replicas(RedisConnection& c, const std::string& what) {
  if (writes_.min_replicas == 0) return Status::Ok();
  IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got,
                           c.command({"WAIT", std::to_string(writes_.min_replicas),
                                      std::to_string(writes_.replica_wait_ms)}));
  const redisReply* r = got.get();
  if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "waiting for replicas");
  if (r->type != REDIS_REPLY_INTEGER) return unexpected("waiting for replicas");
  if (r->integer >= static_cast<long long>(writes_.min_replicas)) {
    MutexLock lock(told_mu_);
    if (told_.starts_with("wait:")) told_.clear();  // said again if it happens again
    return Status::Ok();
  }
  // Written on the primary only: a failover now could lose it, so it does not count.
  const std::string line = fmt::format(
      "{}: {} reached {} of the {} replicas min_replicas asks for within {} ms; it counts as "
      "failed (a primary cut off from its replicas, or replicas lagging)",
      described_, what, r->integer, writes_.min_replicas, writes_.replica_wait_ms);
  tell_once("wait:", "registry.replicas_behind", line);
  return Status::Unavailable(line);
}

Result<Lease> RedisRegistry::acquire(const std::string& identity) {
  if (identity.empty()) return Status::InvalidArgument("the worker identity is empty");
  const std::string token = identity + "#" + random_hex(kTokenRandomBytes);
  const std::vector<std::string> args = {prefix_,
                                         identity,
                                         token,
                                         std::to_string(options_.ttl_ms),
                                         std::to_string(options_.space.slots()),
                                         std::to_string(kQuarantineTtls * options_.ttl_ms)};
  return client_.with_connection([&](RedisConnection& c) -> Result<Lease> {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kAcquire, {}, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "acquiring a worker slot");
    if (r->type == REDIS_REPLY_NIL) return all_slots_taken(options_.space, options_.layout_name);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[2]->type != REDIS_REPLY_STRING || r->element[3]->type != REDIS_REPLY_INTEGER ||
        r->element[4]->type != REDIS_REPLY_STRING || r->element[0]->integer < 0 ||
        static_cast<uint64_t>(r->element[0]->integer) >= options_.space.slots() ||
        r->element[3]->integer < 0 || r->element[3]->integer > kQuarantineTtls * options_.ttl_ms) {
      return unexpected("acquiring a worker slot");
    }
    Lease lease;
    lease.slot = static_cast<uint64_t>(r->element[0]->integer);
    if (!text::parse_int(reply_text(r->element[1]), &lease.high_water_ms) ||
        lease.high_water_ms < 0) {
      // Guessing low could repeat IDs; the slot stays taken until its TTL runs out.
      return Status::IoError(
          fmt::format("{}: {} holds '{}', not a time in Unix ms (edited by hand?)", described_,
                      hw_key(lease.slot), reply_text(r->element[1])));
    }
    lease.high_water_layout = std::string(reply_text(r->element[2]));
    lease.datacenter = options_.space.datacenter_of(lease.slot);
    lease.worker = options_.space.worker_of(lease.slot);
    lease.ttl_ms = options_.ttl_ms;
    // The quarantine left (see the top of this file); 0 on an unchanged history.
    lease.start_delay_ms = r->element[3]->integer;
    lease.token = token;
    if (lease.start_delay_ms > 0) {
      tell_once(std::string(reply_text(r->element[4])), "registry.start_delay",
                quarantine_line(described_, lease, reply_text(r->element[4])));
    }
    Status waited = wait_for_replicas(c, fmt::format("the lease on slot {}", lease.slot));
    if (!waited.ok()) {
      // Not used: the slot goes back now rather than at its TTL (if this delete is
      // lost too, the TTL still frees it).
      c.eval(kRelease, {worker_key(lease.slot)}, {token}).status().ignore_error();
      return waited;
    }
    return lease;
  });
}

Status RedisRegistry::renew(const Lease& lease, int64_t high_water_ms) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  const std::vector<std::string> keys = {worker_key(lease.slot), hw_key(lease.slot),
                                         hw_layout_key(lease.slot)};
  const std::vector<std::string> args = {lease.token, std::to_string(options_.ttl_ms),
                                         std::to_string(std::max<int64_t>(high_water_ms, 0)),
                                         lease.high_water_layout};
  return client_.with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kRenew, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) {
      if (reply_text(r).starts_with("IDFORGE_BADHW")) {
        return Status::IoError(
            fmt::format("{}: {} does not hold a time in Unix ms (edited by hand?)", described_,
                        hw_key(lease.slot)));
      }
      return reply_error(r, fmt::format("renewing the lease on slot {}", lease.slot));
    }
    long long renewed = 0;
    std::string holder;
    if (!read_pair(r, &renewed, &holder)) return unexpected("renewing a lease");
    if (renewed == 1) {
      return wait_for_replicas(c, fmt::format("the renew of slot {}", lease.slot));
    }
    return Status::LeaseLost(fmt::format("lease on slot {} lost: {} in {}", lease.slot,
                                         holder.empty()
                                             ? std::string("it expired or Redis lost it")
                                             : fmt::format("'{}' holds it now", holder_of(holder)),
                                         described_));
  });
}

Status RedisRegistry::release_with(const Lease& lease, const int64_t* mark) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  std::vector<std::string> keys = {worker_key(lease.slot)};
  std::vector<std::string> args = {lease.token};
  if (mark != nullptr) {
    keys.push_back(hw_key(lease.slot));
    keys.push_back(hw_layout_key(lease.slot));
    args.push_back(std::to_string(*mark));
    args.push_back(lease.high_water_layout);
  }
  return client_.with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got,
                             c.eval(mark != nullptr ? kReleaseAtMark : kRelease, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("releasing slot {}", lease.slot));
    }
    long long released = 0;
    std::string holder;
    if (!read_pair(r, &released, &holder)) return unexpected("releasing a lease");
    if (released == 1) {
      // The final mark counts once replicas have it, as a renew's does.
      return mark != nullptr
                 ? wait_for_replicas(c, fmt::format("the release of slot {}", lease.slot))
                 : Status::Ok();
    }
    // Expired already: the slot is free, which is what release is for; its mark stays
    // as the last renew left it.
    if (holder.empty()) return Status::Ok();
    return Status::LeaseLost(
        fmt::format("lease on slot {} lost: '{}' holds it now in {}; left it alone", lease.slot,
                    holder_of(holder), described_));
  });
}

Status RedisRegistry::record_new() {
  return client_.with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got,
                             c.eval(kRecordNew, {}, {prefix_, glob_escape(prefix_) + "*"}));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "recording a new registry");
    long long recorded = 0;
    std::string text;
    if (!read_pair(r, &recorded, &text)) return unexpected("recording a new registry");
    if (recorded != 1) {
      return Status::AlreadyExists(fmt::format(
          "{} is not new: it holds {} (a registry that was used may have lost leases whose "
          "holders still issue; its first leases wait 2 x ttl for them, which cannot be skipped)",
          described_, text));
    }
    log::info("registry.recorded_new", {{"registry", described_}, {"history", text}});
    return Status::Ok();
  });
}

Result<std::vector<SlotStatus>> RedisRegistry::status() {
  const std::string worker_prefix = prefix_ + "worker:";
  const std::string pattern = glob_escape(worker_prefix) + "*";
  return client_.with_connection([&](RedisConnection& c) -> Result<std::vector<SlotStatus>> {
    std::vector<uint64_t> slots;
    std::string cursor = "0";
    do {
      IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.command({"SCAN", cursor, "MATCH", pattern,
                                                             "COUNT", std::to_string(kScanCount)}));
      const redisReply* r = got.get();
      if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "listing worker slots");
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
        return unexpected("listing worker slots");
      }
      cursor = std::string(reply_text(r->element[0]));
      const redisReply* keys = r->element[1];
      for (size_t i = 0; i < keys->elements; ++i) {
        if (keys->element[i]->type != REDIS_REPLY_STRING) continue;
        const std::string_view key = reply_text(keys->element[i]);
        uint64_t slot = 0;
        // Keys of a longer cluster name that starts like ours ("C:worker:x:...") are not ours.
        if (text::parse_int(key.substr(worker_prefix.size()), &slot)) slots.push_back(slot);
      }
    } while (cursor != "0");
    // SCAN may return a key twice.
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());

    std::vector<std::vector<std::string>> reads;
    reads.reserve(slots.size() * 3);
    for (uint64_t slot : slots) {
      reads.push_back({"GET", worker_key(slot)});
      reads.push_back({"PTTL", worker_key(slot)});
      reads.push_back({"GET", hw_key(slot)});
    }
    IDFORGE_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies, c.pipeline(reads));
    std::vector<SlotStatus> out;
    out.reserve(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const redisReply* token = replies[3 * i].get();
      const redisReply* pttl = replies[3 * i + 1].get();
      const redisReply* mark = replies[3 * i + 2].get();
      for (const redisReply* r : {token, pttl, mark}) {
        if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "reading worker slots");
      }
      // Expired between the SCAN and the GET: free now.
      if (token->type != REDIS_REPLY_STRING) continue;
      SlotStatus s;
      s.slot = slots[i];
      s.holder = holder_of(reply_text(token));
      if (mark->type == REDIS_REPLY_STRING &&
          !text::parse_int(reply_text(mark), &s.high_water_ms)) {
        s.high_water_ms = 0;
      }
      // PTTL: -1 for a key without expiry (set by hand), -2 for one gone meanwhile.
      if (pttl->type == REDIS_REPLY_INTEGER) {
        if (pttl->integer == -2) continue;
        s.expires_in_ms = pttl->integer >= 0 ? pttl->integer : -1;
      }
      out.push_back(std::move(s));
    }
    return out;
  });
}

Status RedisRegistry::force_release(uint64_t slot) {
  IDFORGE_RETURN_IF_ERROR(check_slot(slot));
  return client_.with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.command({"DEL", worker_key(slot)}));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, fmt::format("freeing slot {}", slot));
    if (r->type != REDIS_REPLY_INTEGER) return unexpected("freeing a slot");
    if (r->integer == 0) {
      return Status::NotFound(fmt::format("slot {} is not taken in {}", slot, described_));
    }
    return Status::Ok();
  });
}

}  // namespace

Result<RedisRegistryUrl> take_redis_registry_options(std::string_view url) {
  Result<UrlOptions> taken = take_url_options(url, {"min_replicas", "replica_wait_ms"});
  if (!taken.ok()) {
    return Status::InvalidArgument(fmt::format("redis registry URL: {}", taken.status().message()));
  }
  RedisRegistryUrl out;
  out.rest = std::move(taken->rest);
  auto number = [](const std::string& key, const std::string& value, uint32_t max,
                   uint32_t* n) -> Status {
    if (!text::parse_int(value, n) || *n > max) {
      return Status::InvalidArgument(
          fmt::format("redis registry URL option {} must be a whole number from 0 to {}, got '{}'",
                      key, max, value));
    }
    return Status::Ok();
  };
  for (const auto& [key, value] : taken->taken) {
    if (key == "min_replicas") {
      IDFORGE_RETURN_IF_ERROR(number(key, value, kMaxMinReplicas, &out.writes.min_replicas));
    } else {
      IDFORGE_RETURN_IF_ERROR(
          number(key, value, kMaxCommandTimeoutMs, &out.writes.replica_wait_ms));
      if (out.writes.replica_wait_ms == 0) {
        // WAIT with timeout 0 would block until enough replicas answer, forever.
        return Status::InvalidArgument(
            "redis registry URL option replica_wait_ms must be at least 1");
      }
    }
  }
  return out;
}

Result<std::unique_ptr<WorkerRegistry>> open_redis_registry(std::string_view target,
                                                            const RegistryOptions& options,
                                                            const RedisLeaseWrites& writes) {
  IDFORGE_ASSIGN_OR_RETURN(redis::RedisTarget parsed, redis::parse_redis_url(target, "registry"));
  const int bits = options.space.datacenter_bits + options.space.worker_bits;
  if (options.space.datacenter_bits < 0 || options.space.worker_bits < 0 || bits > kMaxSlotBits) {
    return Status::InvalidArgument(
        fmt::format("the redis registry takes 0 to {} node bits, got datacenter {} + worker {}",
                    kMaxSlotBits, options.space.datacenter_bits, options.space.worker_bits));
  }
  if (options.ttl_ms < 1) {
    return Status::InvalidArgument(fmt::format("ttl_ms must be positive, got {}", options.ttl_ms));
  }
  if (options.cluster.empty()) return Status::InvalidArgument("the cluster name is empty");
  redis::RedisTimeouts timeouts;
  timeouts.command_ms = static_cast<int>(
      std::clamp<int64_t>(options.ttl_ms / 2, kMinCommandTimeoutMs, kMaxCommandTimeoutMs));
  timeouts.connect_ms = std::min(timeouts.command_ms, kMaxConnectTimeoutMs);
  RedisLeaseWrites checked = writes;
  if (checked.replica_wait_ms == 0) {
    checked.replica_wait_ms = static_cast<uint32_t>(timeouts.command_ms / 2);
  }
  // WAIT must answer before the socket's timeout gives up on the connection.
  if (static_cast<int64_t>(checked.replica_wait_ms) >= timeouts.command_ms) {
    return Status::InvalidArgument(fmt::format(
        "redis registry URL option replica_wait_ms must be below the command timeout, which "
        "follows the TTL (ttl_ms {}: {} ms), got {}",
        options.ttl_ms, timeouts.command_ms, checked.replica_wait_ms));
  }
  auto registry = std::make_unique<RedisRegistry>(std::move(parsed), options, timeouts, checked);
  IDFORGE_RETURN_IF_ERROR(registry->open());
  return std::unique_ptr<WorkerRegistry>(std::move(registry));
}

bool may_lose_marks(const WorkerRegistry& registry) {
  return dynamic_cast<const RedisRegistry*>(&registry) != nullptr;
}

}  // namespace idforge::coord
