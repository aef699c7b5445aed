// The Redis WorkerRegistry (docs/operations.md, "Worker ids"). Keys, for cluster C:
//
//   idforge:C:worker:<slot>      the lease: "<identity>#<32 hex>" (the token), PX ttl
//   idforge:C:identity:<id>      the slot an identity last held; no TTL
//   idforge:C:hw:<slot>          the slot's time high-water mark, Unix ms; no TTL
//   idforge:C:hwlayout:<slot>    the layout that mark was written under; no TTL
//
// acquire, renew and release are one Lua script each, so no other client's command
// falls between a check and the write that depends on it. Unlike the seed's GET/INCR/SET
// machine-id script there is no counter: acquire looks for a free slot in
// [0, 2^(datacenter+worker bits)), so it can never hand out a number past the field's
// maximum (where the seed's counter wrapped onto live ids), and an expired or released
// slot is free again (the seed never freed one).
//
// Cost: acquire tries the identity's previous slot, then slots from 0 up, and stops at
// the first free one. Leases cluster at the low end, so that is O(live holders), not
// O(slots); only a space with every slot taken is scanned whole (2^10 slots: well under
// a millisecond; baidu's 2^22: seconds of a blocked Redis, but that needs four million
// live holders). status() walks the keys with SCAN, which does not block the server.
//
// A Redis that loses its data (restart without persistence, failover to a replica that
// missed the last writes) forgets every lease. Two live holders of a slot can still not
// happen: the old holder's next renew finds its key gone and fails, and its LeaseKeeper
// fences it at 2/3 ttl after its last good renew; a new holder of the slot waits
// Lease::start_delay_ms = ttl_ms before it issues, by which time the old one has fenced.
// The high-water mark is lost too, and that risk remains: the new holder starts from 0
// and relies on its start delay alone. The old holder's last ID is at most its fence
// time plus the generator's max_drift_ms; so IDs stay unique only while the two hosts'
// clocks differ by less than ttl/3 minus max_drift_ms (10 s ttl, 1 s drift: 2.3 s).
//
// The layout sits in a key of its own so that an older version, which knows only the
// mark key, keeps working beside this one (it leaves the layout as it was; a cluster
// name runs one layout anyway). Both keys go together in one script.
//
// Because the start delay is all that protects IDs when Redis loses the lease, a
// holder whose logical policy may run max_drift_ms ahead of its clock needs that to be
// less than ttl/3 (the time between its fence and the key's expiry): HeldLease refuses
// a shorter TTL.
//
// Needs one Redis (standalone or behind Sentinel), not Redis Cluster: the acquire
// script computes key names as it scans, which Cluster forbids. Every node of a cluster
// name must use the same layout: slot numbers of different node-bit splits mean
// different (datacenter, worker) pairs, so nothing here could keep them apart.
#include "coord/redis_registry.h"

#include <fmt/format.h>
#include <hiredis.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/random.h"
#include "store/redis_connection.h"

namespace idforge::coord {
namespace {

using store::RedisClient;
using store::RedisConnection;
using store::RedisReplyPtr;
using store::reply_text;

constexpr size_t kMaxConnections = 2;
// A renew slower than half the TTL is of no use: the keeper fences at 2/3 of it. So the
// command timeout follows the TTL, within these bounds.
constexpr int kMinCommandTimeoutMs = 200;
constexpr int kMaxCommandTimeoutMs = 5000;
constexpr int kMaxConnectTimeoutMs = 3000;
// Lua counts in doubles: slot numbers stay exact up to 2^53.
constexpr int kMaxSlotBits = 52;
constexpr int kTokenRandomBytes = 16;
constexpr int64_t kScanCount = 1000;

// ARGV: key prefix "idforge:C:", identity, token, ttl ms, number of slots.
// Returns {slot, stored high-water mark ("0" when none), its layout ("" when unknown)},
// or nil when all are taken.
constexpr const char* kAcquireLua = R"lua(
local prefix, token, ttl = ARGV[1], ARGV[3], ARGV[4]
local slots = tonumber(ARGV[5])
local identity_key = prefix .. 'identity:' .. ARGV[2]
local function take(slot)
  local name = string.format('%d', slot)
  if not redis.call('SET', prefix .. 'worker:' .. name, token, 'NX', 'PX', ttl) then
    return nil
  end
  redis.call('SET', identity_key, name)
  return {slot, redis.call('GET', prefix .. 'hw:' .. name) or '0',
          redis.call('GET', prefix .. 'hwlayout:' .. name) or ''}
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

enum Script : size_t { kAcquire, kRenew, kRelease, kScriptCount };
constexpr const char* kScripts[kScriptCount] = {kAcquireLua, kRenewLua, kReleaseLua};

template <typename Int>
bool parse_int(std::string_view text, Int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

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
  RedisRegistry(store::RedisTarget target, const RegistryOptions& options,
                store::RedisTimeouts timeouts)
      : options_(options),
        client_(std::move(target), kScripts, timeouts, kMaxConnections),
        prefix_(fmt::format("idforge:{}:", options.cluster)),
        described_(fmt::format("{} cluster {}", client_.shown(), options.cluster)) {}

  Status open() { return client_.ping(); }

  Result<Lease> acquire(const std::string& identity) override;
  Status renew(const Lease& lease, int64_t high_water_ms) override;
  Status release(const Lease& lease) override;
  Result<std::vector<SlotStatus>> status() override;
  Status force_release(uint64_t slot) override;
  std::string describe() const override { return described_; }

 private:
  std::string worker_key(uint64_t slot) const { return fmt::format("{}worker:{}", prefix_, slot); }
  std::string hw_key(uint64_t slot) const { return fmt::format("{}hw:{}", prefix_, slot); }
  std::string hw_layout_key(uint64_t slot) const {
    return fmt::format("{}hwlayout:{}", prefix_, slot);
  }
  Status check_slot(uint64_t slot) const;
  Status reply_error(const redisReply* r, std::string_view doing) const {
    return store::redis_error_status(client_.shown(), r, doing);
  }
  Status unexpected(std::string_view doing) const {
    return Status::Internal(fmt::format("{}: {}: unexpected reply", described_, doing));
  }

  const RegistryOptions options_;
  RedisClient client_;
  const std::string prefix_;
  const std::string described_;
};

Status RedisRegistry::check_slot(uint64_t slot) const {
  return idforge::check_slot(options_.space, slot, options_.layout_name);
}

Result<Lease> RedisRegistry::acquire(const std::string& identity) {
  if (identity.empty()) return Status::InvalidArgument("the worker identity is empty");
  const std::string token = identity + "#" + random_hex(kTokenRandomBytes);
  const std::vector<std::string> args = {prefix_, identity, token, std::to_string(options_.ttl_ms),
                                         std::to_string(options_.space.slots())};
  return client_.with_connection([&](RedisConnection& c) -> Result<Lease> {
    Result<RedisReplyPtr> got = c.eval(kAcquire, {}, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "acquiring a worker slot");
    if (r->type == REDIS_REPLY_NIL) return all_slots_taken(options_.space, options_.layout_name);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[2]->type != REDIS_REPLY_STRING || r->element[0]->integer < 0 ||
        static_cast<uint64_t>(r->element[0]->integer) >= options_.space.slots()) {
      return unexpected("acquiring a worker slot");
    }
    Lease lease;
    lease.slot = static_cast<uint64_t>(r->element[0]->integer);
    if (!parse_int(reply_text(r->element[1]), &lease.high_water_ms) || lease.high_water_ms < 0) {
      // Guessing low could repeat IDs; the slot stays taken until its TTL runs out.
      return Status::IoError(
          fmt::format("{}: {} holds '{}', not a time in Unix ms (edited by hand?)", described_,
                      hw_key(lease.slot), reply_text(r->element[1])));
    }
    lease.high_water_layout = std::string(reply_text(r->element[2]));
    lease.datacenter = options_.space.datacenter_of(lease.slot);
    lease.worker = options_.space.worker_of(lease.slot);
    lease.ttl_ms = options_.ttl_ms;
    // Redis can lose every lease (see the top of this file); a holder it forgot fences
    // itself by 2/3 ttl, so waiting a whole ttl is enough.
    lease.start_delay_ms = options_.ttl_ms;
    lease.token = token;
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
    Result<RedisReplyPtr> got = c.eval(kRenew, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
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
    if (renewed == 1) return Status::Ok();
    return Status::LeaseLost(fmt::format("lease on slot {} lost: {} in {}", lease.slot,
                                         holder.empty()
                                             ? std::string("it expired or Redis lost it")
                                             : fmt::format("'{}' holds it now", holder_of(holder)),
                                         described_));
  });
}

Status RedisRegistry::release(const Lease& lease) {
  IDFORGE_RETURN_IF_ERROR(check_slot(lease.slot));
  const std::vector<std::string> keys = {worker_key(lease.slot)};
  const std::vector<std::string> args = {lease.token};
  return client_.with_connection([&](RedisConnection& c) -> Status {
    Result<RedisReplyPtr> got = c.eval(kRelease, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("releasing slot {}", lease.slot));
    }
    long long released = 0;
    std::string holder;
    if (!read_pair(r, &released, &holder)) return unexpected("releasing a lease");
    // Expired already: the slot is free, which is what release is for.
    if (released == 1 || holder.empty()) return Status::Ok();
    return Status::LeaseLost(
        fmt::format("lease on slot {} lost: '{}' holds it now in {}; left it alone", lease.slot,
                    holder_of(holder), described_));
  });
}

Result<std::vector<SlotStatus>> RedisRegistry::status() {
  const std::string worker_prefix = prefix_ + "worker:";
  const std::string pattern = glob_escape(worker_prefix) + "*";
  return client_.with_connection([&](RedisConnection& c) -> Result<std::vector<SlotStatus>> {
    std::vector<uint64_t> slots;
    std::string cursor = "0";
    do {
      Result<RedisReplyPtr> got =
          c.command({"SCAN", cursor, "MATCH", pattern, "COUNT", std::to_string(kScanCount)});
      if (!got.ok()) return got.status();
      const redisReply* r = got->get();
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
        if (parse_int(key.substr(worker_prefix.size()), &slot)) slots.push_back(slot);
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
    Result<std::vector<RedisReplyPtr>> replies = c.pipeline(reads);
    if (!replies.ok()) return replies.status();
    std::vector<SlotStatus> out;
    out.reserve(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const redisReply* token = (*replies)[3 * i].get();
      const redisReply* pttl = (*replies)[3 * i + 1].get();
      const redisReply* mark = (*replies)[3 * i + 2].get();
      for (const redisReply* r : {token, pttl, mark}) {
        if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "reading worker slots");
      }
      // Expired between the SCAN and the GET: free now.
      if (token->type != REDIS_REPLY_STRING) continue;
      SlotStatus s;
      s.slot = slots[i];
      s.holder = holder_of(reply_text(token));
      if (mark->type == REDIS_REPLY_STRING && !parse_int(reply_text(mark), &s.high_water_ms)) {
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
    Result<RedisReplyPtr> got = c.command({"DEL", worker_key(slot)});
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, fmt::format("freeing slot {}", slot));
    if (r->type != REDIS_REPLY_INTEGER) return unexpected("freeing a slot");
    if (r->integer == 0) {
      return Status::NotFound(fmt::format("slot {} is not taken in {}", slot, described_));
    }
    return Status::Ok();
  });
}

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_redis_registry(std::string_view target,
                                                            const RegistryOptions& options) {
  Result<store::RedisTarget> parsed = store::parse_redis_url(target, "registry");
  if (!parsed.ok()) return parsed.status();
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
  store::RedisTimeouts timeouts;
  timeouts.command_ms = static_cast<int>(
      std::clamp<int64_t>(options.ttl_ms / 2, kMinCommandTimeoutMs, kMaxCommandTimeoutMs));
  timeouts.connect_ms = std::min(timeouts.command_ms, kMaxConnectTimeoutMs);
  auto registry = std::make_unique<RedisRegistry>(std::move(parsed).value(), options, timeouts);
  IDFORGE_RETURN_IF_ERROR(registry->open());
  return std::unique_ptr<WorkerRegistry>(std::move(registry));
}

}  // namespace idforge::coord
