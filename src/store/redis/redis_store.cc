// The Redis SegmentStore: per tag one hash `idforge:seg:<tag>` (max_id, step,
// description, serial_template, updated_at) and one set `idforge:tags` of the names.
//
// Every change is one Lua script, which Redis runs atomically: allocate reads the hash,
// moves max_id up and stamps updated_at with no other command in between, so two
// processes can never be handed the same range. "Committed" here means applied in
// Redis's memory; it survives a Redis restart only as far as Redis's persistence does
// (appendonly yes + appendfsync always; see docs/stores.md).
//
// Connecting gives up after kConnectTimeoutMs and each command after kCommandTimeoutMs;
// a connection that failed is dropped and the next call reconnects (redis_connection.h).
// Behind Sentinels (redis-sentinel://) that reconnect asks them for the primary again,
// and identity() is then the new primary's replication id: the failover guard sees
// the history change (store_guard.h).
#include "store/redis/redis_store.h"

#include <fmt/format.h>
#include <hiredis.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.h"
#include "redis/redis_connection.h"
#include "store/store_common.h"
#include "url/url_options.h"

namespace idforge::store {
namespace {

// The Redis client idforge_redis shares with the Redis registry.
using redis::parse_redis_url;
using redis::redis_error_status;
using redis::RedisClient;
using redis::RedisConnection;
using redis::RedisReplyPtr;
using redis::RedisTarget;
using redis::RedisTimeouts;
using redis::reply_text;

constexpr int kConnectTimeoutMs = 3000;
constexpr int kCommandTimeoutMs = 5000;
constexpr size_t kMaxConnections = 4;
constexpr std::string_view kKeyPrefix = "idforge:seg:";
constexpr std::string_view kTagSetKey = "idforge:tags";
constexpr std::string_view kMetaKey = "idforge:meta";
// WAIT must answer before the socket's command timeout gives up on the connection.
constexpr uint32_t kMaxReplicaWaitMs = kCommandTimeoutMs - 1000;

// KEYS[1] = the tag's hash; ARGV[1] = step ("0": the tag's own), ARGV[2] = now (unix
// ms). Returns {new max_id, step used, master_replid} as strings, nil for an unknown
// tag; the replication id is read in the same atomic step as the range. Numbers stay
// strings throughout: Lua numbers are doubles and would round IDs above 2^53. HINCRBY
// refuses an overflow before writing anything.
constexpr const char* kAllocateLua = R"lua(
local max_id = redis.call('HGET', KEYS[1], 'max_id')
if not max_id then return false end
local step = ARGV[1]
if step == '0' then step = redis.call('HGET', KEYS[1], 'step') end
if not step or not string.match(step, '^[1-9]%d*$') or not string.match(max_id, '^%d+$') then
  return redis.error_reply('IDFORGE_BADROW max_id or step is not a positive integer')
end
redis.call('HINCRBY', KEYS[1], 'max_id', step)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or ''
return {redis.call('HGET', KEYS[1], 'max_id'), step, replid}
)lua";

// KEYS[1] = the tag's hash, KEYS[2] = the set of names; ARGV = name, max_id, step,
// description, serial_template, now. Returns 1 if created, 0 if the tag existed.
constexpr const char* kCreateLua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'step', ARGV[3], 'description', ARGV[4],
           'serial_template', ARGV[5], 'updated_at', ARGV[6])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
)lua";

// KEYS[1] = the tag's hash; ARGV = step, now. Returns 1, or 0 for an unknown tag.
constexpr const char* kSetStepLua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[1], 'updated_at', ARGV[2])
return 1
)lua";

// The failover guard's step, all or nothing. KEYS[1] = the meta hash, KEYS[2] = the
// set of names; ARGV = expected identity, identity to adopt, margin, now, the tag key
// prefix, then pairs of tag and floor. Returns 1 if applied, 0 if another identity is
// recorded. Redis does not roll a script back on error, so every new max_id is worked
// out (and checked against 2^63-1) before the first write. The arithmetic splits each
// decimal string into a high part and its last 9 digits: both stay exact as Lua doubles.
constexpr const char* kAdoptLua = R"lua(
local recorded = redis.call('HGET', KEYS[1], 'identity') or ''
if recorded ~= ARGV[1] then return 0 end
local function split(s)
  if not string.match(s, '^%d+$') or #s > 19 then return nil end
  if #s <= 9 then return 0, tonumber(s) end
  return tonumber(string.sub(s, 1, #s - 9)), tonumber(string.sub(s, #s - 8))
end
local floors = {}
for i = 6, #ARGV, 2 do floors[ARGV[i]] = ARGV[i + 1] end
local mh, ml = split(ARGV[3])
local plan = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local key = ARGV[5] .. name
  local max_id = redis.call('HGET', key, 'max_id')
  if max_id then
    local h, l = split(max_id)
    if not h then return redis.error_reply('IDFORGE_BADROW ' .. name) end
    local f = floors[name]
    if f then
      local fh, fl = split(f)
      if fh > h or (fh == h and fl > l) then h, l = fh, fl end
    end
    h, l = h + mh, l + ml
    if l >= 1e9 then h, l = h + 1, l - 1e9 end
    if h > 9223372036 or (h == 9223372036 and l > 854775807) then
      return redis.error_reply('IDFORGE_OVERFLOW ' .. name)
    end
    local v = string.format('%d', l)
    if h > 0 then v = string.format('%d%09d', h, l) end
    plan[#plan + 1] = {key, v}
  end
end
for _, p in ipairs(plan) do redis.call('HSET', p[1], 'max_id', p[2], 'updated_at', ARGV[4]) end
redis.call('HSET', KEYS[1], 'identity', ARGV[2])
return 1
)lua";

// KEYS[1] = the meta hash; ARGV[1] = "INDEX/COUNT". Records it unless a place is
// recorded, and returns the recorded one.
constexpr const char* kPlaceLua = R"lua(
redis.call('HSETNX', KEYS[1], 'place', ARGV[1])
return redis.call('HGET', KEYS[1], 'place')
)lua";

enum Script { kAllocate, kCreate, kSetStep, kAdopt, kPlace, kScriptCount };
constexpr const char* kScripts[kScriptCount] = {kAllocateLua, kCreateLua, kSetStepLua, kAdoptLua,
                                                kPlaceLua};

std::string tag_key(std::string_view tag) { return std::string(kKeyPrefix) + std::string(tag); }

// What the URL's query may say (docs/stores.md).
struct RedisStoreOptions {
  uint32_t min_replicas = 0;  // WAIT for this many replicas after each allocation
  uint32_t replica_wait_ms = kMaxReplicaWaitMs;
};

class RedisStore final : public SegmentStore {
 public:
  RedisStore(RedisTarget target, RedisStoreOptions options)
      : client_(std::move(target), kScripts, RedisTimeouts{kConnectTimeoutMs, kCommandTimeoutMs},
                kMaxConnections),
        shown_(client_.shown()),
        options_(options) {}

  // Connects once now, so a wrong address or password is reported at startup.
  Status open() { return client_.ping(); }

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return shown_; }

  Result<StoreIdentity> identity() override;
  Result<bool> adopt_identity(const IdentityChange& change) override;
  Result<Durability> durability() override;
  Status claim_place(uint32_t index, uint32_t count) override;

 private:
  // Runs `fn` on a pooled connection, retried once if the connection had gone stale
  // (retrying an allocation whose answer was lost skips a range at worst).
  template <typename Fn>
  auto with_connection(Fn&& fn) -> decltype(fn(std::declval<RedisConnection&>())) {
    return client_.with_connection(std::forward<Fn>(fn));
  }
  // The Status for an error reply.
  Status reply_error(const redisReply* r, std::string_view doing) const {
    return redis_error_status(shown_, r, doing);
  }
  Result<TagInfo> read_hash(std::string_view name, const redisReply* r) const;
  // After an allocation, with min_replicas: WAIT until that many replicas have it.
  Status wait_for_replicas(RedisConnection& c);

  RedisClient client_;
  const std::string shown_;
  const RedisStoreOptions options_;
};

Result<Segment> RedisStore::allocate(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  const std::vector<std::string> keys = {tag_key(tag)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Result<Segment> {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kAllocate, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_NIL) return unknown_tag(tag);
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string_view text = reply_text(r);
      if (text.find("overflow") != std::string_view::npos) {
        return Status::OutOfRange(fmt::format(
            "tag '{}' has run out of IDs in {}: max_id plus step passes 2^63-1", tag, shown_));
      }
      if (text.starts_with("IDFORGE_BADROW")) {
        return Status::IoError(fmt::format(
            "{}: tag '{}' has a max_id or step that is not a positive integer (edited by hand?)",
            shown_, tag));
      }
      return reply_error(r, fmt::format("allocating for tag '{}'", tag));
    }
    int64_t max_id = 0;
    int64_t used = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING ||
        !text::parse_int(reply_text(r->element[0]), &max_id) ||
        !text::parse_int(reply_text(r->element[1]), &used) || used < 1 || max_id < used) {
      return Status::Internal(fmt::format(
          "{}: tag '{}': the allocation script returned an unexpected reply", shown_, tag));
    }
    IDFORGE_RETURN_IF_ERROR(wait_for_replicas(c));
    const auto count = static_cast<uint64_t>(used);
    const std::string_view replid = reply_text(r->element[2]);
    return Segment{static_cast<uint64_t>(max_id) - count + 1, count, 1,
                   replid.empty() ? std::string() : "redis:" + std::string(replid)};
  });
}

Status RedisStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(check_new_tag(spec));
  const std::vector<std::string> keys = {tag_key(spec.name), std::string(kTagSetKey)};
  const std::vector<std::string> args = {
      spec.name,        std::to_string(spec.start - 1), std::to_string(spec.step),
      spec.description, spec.serial_template,           std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kCreate, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("creating tag '{}'", spec.name));
    }
    if (r->type != REDIS_REPLY_INTEGER) {
      return Status::Internal(
          fmt::format("{}: creating tag '{}': unexpected reply", shown_, spec.name));
    }
    if (r->integer == 0) {
      return Status::AlreadyExists(fmt::format("tag '{}' already exists in {}", spec.name, shown_));
    }
    return Status::Ok();
  });
}

Result<TagInfo> RedisStore::read_hash(std::string_view name, const redisReply* r) const {
  // HMGET max_id step description serial_template updated_at
  if (r->type == REDIS_REPLY_ERROR) return reply_error(r, fmt::format("reading tag '{}'", name));
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) {
    return Status::Internal(fmt::format("{}: reading tag '{}': unexpected reply", shown_, name));
  }
  auto field = [r](size_t i) -> std::string_view {
    const redisReply* e = r->element[i];
    return e->type == REDIS_REPLY_STRING ? reply_text(e) : std::string_view();
  };
  bool all_nil = true;
  for (size_t i = 0; i < r->elements; ++i)
    all_nil = all_nil && r->element[i]->type == REDIS_REPLY_NIL;
  if (all_nil) return unknown_tag(name);
  TagInfo info;
  info.name = std::string(name);
  int64_t max_id = -1;
  int64_t step = 0;
  int64_t updated = 0;
  if (!text::parse_int(field(0), &max_id) || !text::parse_int(field(1), &step) || max_id < 0 ||
      step < 1) {
    // Other tools can write these keys; a hand-edited hash must not become a wrong ID.
    return Status::IoError(
        fmt::format("{}: tag '{}' has max_id '{}' and step '{}'; both must be positive "
                    "integers (edited by hand?)",
                    shown_, name, field(0), field(1)));
  }
  if (!field(4).empty() && !text::parse_int(field(4), &updated)) updated = 0;
  info.max_id = static_cast<uint64_t>(max_id);
  info.step = static_cast<uint64_t>(step);
  info.description = std::string(field(2));
  info.serial_template = std::string(field(3));
  info.updated_at_ms = updated;
  return info;
}

std::vector<std::string> hmget_of(std::string_view name) {
  return {"HMGET", tag_key(name), "max_id", "step", "description", "serial_template", "updated_at"};
}

Result<std::vector<TagInfo>> RedisStore::list_tags() {
  return with_connection([&](RedisConnection& c) -> Result<std::vector<TagInfo>> {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.command({"SMEMBERS", std::string(kTagSetKey)}));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "listing tags");
    if (r->type != REDIS_REPLY_ARRAY) {
      return Status::Internal(fmt::format("{}: listing tags: unexpected reply", shown_));
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < r->elements; ++i) {
      if (r->element[i]->type == REDIS_REPLY_STRING) names.emplace_back(reply_text(r->element[i]));
    }
    std::sort(names.begin(), names.end());
    std::vector<std::vector<std::string>> reads;
    reads.reserve(names.size());
    for (const std::string& n : names) reads.push_back(hmget_of(n));
    IDFORGE_ASSIGN_OR_RETURN(std::vector<RedisReplyPtr> replies, c.pipeline(reads));
    std::vector<TagInfo> tags;
    tags.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      Result<TagInfo> info = read_hash(names[i], replies[i].get());
      // A name whose hash someone deleted is not a tag any more.
      if (!info.ok() && info.status().code() == StatusCode::kNotFound) continue;
      if (!info.ok()) return info.status();
      tags.push_back(std::move(info).value());
    }
    return tags;
  });
}

Result<TagInfo> RedisStore::get_tag(std::string_view name) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  return with_connection([&](RedisConnection& c) -> Result<TagInfo> {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.command(hmget_of(name)));
    return read_hash(name, got.get());
  });
}

Status RedisStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  const std::vector<std::string> keys = {tag_key(name)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kSetStep, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) {
      return reply_error(r, fmt::format("setting the step of tag '{}'", name));
    }
    if (r->type != REDIS_REPLY_INTEGER) {
      return Status::Internal(
          fmt::format("{}: setting the step of tag '{}': unexpected reply", shown_, name));
    }
    if (r->integer == 0) return unknown_tag(name);
    return Status::Ok();
  });
}

Status RedisStore::wait_for_replicas(RedisConnection& c) {
  if (options_.min_replicas == 0) return Status::Ok();
  IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got,
                           c.command({"WAIT", std::to_string(options_.min_replicas),
                                      std::to_string(options_.replica_wait_ms)}));
  const redisReply* r = got.get();
  if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "waiting for replicas");
  if (r->type != REDIS_REPLY_INTEGER) {
    return Status::Internal(fmt::format("{}: WAIT: unexpected reply", shown_));
  }
  if (r->integer < static_cast<long long>(options_.min_replicas)) {
    // Redis replication is asynchronous: the range is in the primary's memory (and its
    // AOF), but a failover now could lose it. Never using it costs a gap, not a repeat.
    return Status::Unavailable(fmt::format(
        "{}: the range was committed on the primary but only {} of {} replicas acknowledged it "
        "within {} ms; it is skipped",
        shown_, r->integer, options_.min_replicas, options_.replica_wait_ms));
  }
  return Status::Ok();
}

Result<StoreIdentity> RedisStore::identity() {
  return with_connection([&](RedisConnection& c) -> Result<StoreIdentity> {
    IDFORGE_ASSIGN_OR_RETURN(
        std::vector<RedisReplyPtr> got,
        c.pipeline({{"INFO", "replication"}, {"HGET", std::string(kMetaKey), "identity"}}));
    const redisReply* info = got[0].get();
    const redisReply* recorded = got[1].get();
    if (info->type == REDIS_REPLY_ERROR) return reply_error(info, "INFO replication");
    if (recorded->type == REDIS_REPLY_ERROR) {
      return reply_error(recorded, "reading the recorded identity");
    }
    // master_replid is new at every start of a master and at every promotion; a replica
    // reports its primary's.
    constexpr std::string_view kField = "master_replid:";
    const std::string_view text =
        info->type == REDIS_REPLY_STRING ? reply_text(info) : std::string_view();
    const size_t at = text.find(kField);
    if (at == std::string_view::npos || (at != 0 && text[at - 1] != '\n')) {
      return Status::IoError(fmt::format(
          "{}: INFO replication has no master_replid (Redis 4.0 or later needed)", shown_));
    }
    std::string_view replid = text.substr(at + kField.size());
    replid = replid.substr(0, replid.find_first_of("\r\n"));
    StoreIdentity id;
    id.current = "redis:" + std::string(replid);
    if (recorded->type == REDIS_REPLY_STRING) id.recorded = std::string(reply_text(recorded));
    return id;
  });
}

Result<bool> RedisStore::adopt_identity(const IdentityChange& change) {
  if (change.adopt.empty()) return Status::InvalidArgument("the identity to adopt is empty");
  if (change.margin > kMaxId) {
    return Status::OutOfRange(fmt::format("margin {} is larger than 2^63-1", change.margin));
  }
  const std::vector<std::string> keys = {std::string(kMetaKey), std::string(kTagSetKey)};
  std::vector<std::string> args = {change.expected, change.adopt, std::to_string(change.margin),
                                   std::to_string(now_unix_ms()), std::string(kKeyPrefix)};
  for (const auto& [tag, floor] : change.floors) {
    IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
    if (floor > kMaxId) {
      return Status::OutOfRange(
          fmt::format("the floor {} of tag '{}' is larger than 2^63-1", floor, tag));
    }
    args.push_back(tag);
    args.push_back(std::to_string(floor));
  }
  return with_connection([&](RedisConnection& c) -> Result<bool> {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kAdopt, keys, args));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string_view text = reply_text(r);
      if (text.starts_with("IDFORGE_OVERFLOW")) {
        return Status::OutOfRange(
            fmt::format("{}: moving tag '{}' forward by {} would pass 2^63-1; nothing changed",
                        shown_, text.substr(text.find(' ') + 1), change.margin));
      }
      if (text.starts_with("IDFORGE_BADROW")) {
        return Status::IoError(
            fmt::format("{}: tag '{}' has a max_id that is not a positive integer (edited by "
                        "hand?); nothing changed",
                        shown_, text.substr(text.find(' ') + 1)));
      }
      return reply_error(r, "adopting a new identity");
    }
    if (r->type != REDIS_REPLY_INTEGER) {
      return Status::Internal(fmt::format("{}: adopting an identity: unexpected reply", shown_));
    }
    return r->integer == 1;
  });
}

Status RedisStore::claim_place(uint32_t index, uint32_t count) {
  if (count < 1 || index >= count) {
    return Status::InvalidArgument(
        fmt::format("store place {} of {}: the index must be below the count", index, count));
  }
  const std::string wanted = place_text(index, count);
  return with_connection([&](RedisConnection& c) -> Status {
    IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(kPlace, {std::string(kMetaKey)}, {wanted}));
    const redisReply* r = got.get();
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r, "recording the store's place");
    if (r->type != REDIS_REPLY_STRING) {
      return Status::Internal(fmt::format("{}: recording the place: unexpected reply", shown_));
    }
    return check_place(shown_, reply_text(r), index, count);
  });
}

Result<Durability> RedisStore::durability() {
  return with_connection([&](RedisConnection& c) -> Result<Durability> {
    IDFORGE_ASSIGN_OR_RETURN(
        std::vector<RedisReplyPtr> got,
        c.pipeline({{"CONFIG", "GET", "appendonly"}, {"CONFIG", "GET", "appendfsync"}}));
    // CONFIG GET answers [name, value]; an error or an empty answer means CONFIG is
    // renamed, disabled or restricted by an ACL.
    std::string why;
    auto value = [&why](const redisReply* r) -> std::string {
      if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[1]->type == REDIS_REPLY_STRING) {
        return std::string(reply_text(r->element[1]));
      }
      if (why.empty()) {
        why = r->type == REDIS_REPLY_ERROR ? std::string(reply_text(r)) : "no such setting";
      }
      return "unknown";
    };
    const std::string aof = value(got[0].get());
    const std::string fsync = value(got[1].get());
    Durability d;
    d.summary = fmt::format("appendonly={} appendfsync={}", aof, fsync);
    if (options_.min_replicas > 0) {
      d.summary += fmt::format(" min_replicas={} replica_wait_ms={}", options_.min_replicas,
                               options_.replica_wait_ms);
    }
    d.safe = false;
    if (!why.empty()) {
      d.risk = fmt::format(
          "cannot read appendonly and appendfsync with CONFIG GET ({}); make sure the server "
          "runs appendonly yes and appendfsync always, or ranges may be handed out again after "
          "a crash",
          why);
    } else if (aof != "yes") {
      d.risk =
          "appendonly is no: a restarted Redis goes back to its last RDB snapshot (or to "
          "nothing), and the ranges since would be handed out again; set appendonly yes and "
          "appendfsync always";
    } else if (fsync != "always") {
      d.risk = fmt::format(
          "appendfsync is {}: a crash of the Redis machine loses the allocations not yet "
          "fsynced ({}), and those ranges would be handed out again; set appendfsync always",
          fsync, fsync == "everysec" ? "up to a second" : "as long as the OS keeps them");
    } else {
      d.safe = true;
    }
    return d;
  });
}

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_redis_store(std::string_view url) {
  IDFORGE_ASSIGN_OR_RETURN(UrlOptions taken,
                           take_url_options(url, {"min_replicas", "replica_wait_ms"}));
  if (taken.rest.find('?') != std::string::npos) {
    return Status::InvalidArgument(
        "a redis or redis-sentinel store URL takes only the options min_replicas and "
        "replica_wait_ms");
  }
  RedisStoreOptions options;
  if (auto it = taken.taken.find("min_replicas"); it != taken.taken.end()) {
    IDFORGE_ASSIGN_OR_RETURN(uint32_t n,
                             parse_option_number(it->first, it->second, kMaxMinReplicas));
    options.min_replicas = n;
  }
  if (auto it = taken.taken.find("replica_wait_ms"); it != taken.taken.end()) {
    IDFORGE_ASSIGN_OR_RETURN(uint32_t n,
                             parse_option_number(it->first, it->second, kMaxReplicaWaitMs));
    if (n == 0) {
      // WAIT with timeout 0 would block until enough replicas answer, forever.
      return Status::InvalidArgument("store URL option replica_wait_ms must be at least 1");
    }
    options.replica_wait_ms = n;
  }
  IDFORGE_ASSIGN_OR_RETURN(RedisTarget target, parse_redis_url(taken.rest, "store"));
  auto store = std::make_unique<RedisStore>(std::move(target), options);
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
