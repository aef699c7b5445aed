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
#include "store/redis_store.h"

#include <fmt/format.h>
#include <hiredis.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/redis_connection.h"

namespace idforge::store {
namespace {

constexpr int kConnectTimeoutMs = 3000;
constexpr int kCommandTimeoutMs = 5000;
constexpr size_t kMaxConnections = 4;
constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
constexpr std::string_view kKeyPrefix = "idforge:seg:";
constexpr std::string_view kTagSetKey = "idforge:tags";

// KEYS[1] = the tag's hash; ARGV[1] = step ("0": the tag's own), ARGV[2] = now (unix
// ms). Returns {new max_id, step used} as strings, nil for an unknown tag. Numbers stay
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
return {redis.call('HGET', KEYS[1], 'max_id'), step}
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

enum Script { kAllocate, kCreate, kSetStep, kScriptCount };
constexpr const char* kScripts[kScriptCount] = {kAllocateLua, kCreateLua, kSetStepLua};

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string tag_key(std::string_view tag) { return std::string(kKeyPrefix) + std::string(tag); }

template <typename Int>
bool parse_int(std::string_view text, Int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

class RedisStore final : public SegmentStore {
 public:
  explicit RedisStore(RedisTarget target)
      : client_(std::move(target), kScripts, RedisTimeouts{kConnectTimeoutMs, kCommandTimeoutMs},
                kMaxConnections),
        shown_(client_.shown()) {}

  // Connects once now, so a wrong address or password is reported at startup.
  Status open() { return client_.ping(); }

  Result<Segment> allocate(std::string_view tag, uint64_t step) override;
  Status create_tag(const TagSpec& spec) override;
  Result<std::vector<TagInfo>> list_tags() override;
  Result<TagInfo> get_tag(std::string_view name) override;
  Status set_step(std::string_view name, uint64_t step) override;
  std::string describe() const override { return shown_; }

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

  RedisClient client_;
  const std::string shown_;
};

Result<Segment> RedisStore::allocate(std::string_view tag, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  if (step > kMaxId) return Status::OutOfRange(fmt::format("step {} is larger than 2^63-1", step));
  const std::vector<std::string> keys = {tag_key(tag)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Result<Segment> {
    Result<RedisReplyPtr> got = c.eval(kAllocate, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
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
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        !parse_int(reply_text(r->element[0]), &max_id) ||
        !parse_int(reply_text(r->element[1]), &used) || used < 1 || max_id < used) {
      return Status::Internal(fmt::format(
          "{}: tag '{}': the allocation script returned an unexpected reply", shown_, tag));
    }
    const auto count = static_cast<uint64_t>(used);
    return Segment{static_cast<uint64_t>(max_id) - count + 1, count, 1};
  });
}

Status RedisStore::create_tag(const TagSpec& spec) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(spec.name));
  if (spec.start < 1 || spec.start > kMaxId) {
    return Status::InvalidArgument(
        fmt::format("start must be from 1 to {}, got {}", kMaxId, spec.start));
  }
  IDFORGE_RETURN_IF_ERROR(validate_step(spec.step));
  const std::vector<std::string> keys = {tag_key(spec.name), std::string(kTagSetKey)};
  const std::vector<std::string> args = {
      spec.name,        std::to_string(spec.start - 1), std::to_string(spec.step),
      spec.description, spec.serial_template,           std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Status {
    Result<RedisReplyPtr> got = c.eval(kCreate, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
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
  if (!parse_int(field(0), &max_id) || !parse_int(field(1), &step) || max_id < 0 || step < 1) {
    // Other tools can write these keys; a hand-edited hash must not become a wrong ID.
    return Status::IoError(
        fmt::format("{}: tag '{}' has max_id '{}' and step '{}'; both must be positive "
                    "integers (edited by hand?)",
                    shown_, name, field(0), field(1)));
  }
  if (!field(4).empty() && !parse_int(field(4), &updated)) updated = 0;
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
    Result<RedisReplyPtr> got = c.command({"SMEMBERS", std::string(kTagSetKey)});
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
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
    Result<std::vector<RedisReplyPtr>> replies = c.pipeline(reads);
    if (!replies.ok()) return replies.status();
    std::vector<TagInfo> tags;
    tags.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      Result<TagInfo> info = read_hash(names[i], (*replies)[i].get());
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
    Result<RedisReplyPtr> got = c.command(hmget_of(name));
    if (!got.ok()) return got.status();
    return read_hash(name, got->get());
  });
}

Status RedisStore::set_step(std::string_view name, uint64_t step) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(name));
  IDFORGE_RETURN_IF_ERROR(validate_step(step));
  const std::vector<std::string> keys = {tag_key(name)};
  const std::vector<std::string> args = {std::to_string(step), std::to_string(now_unix_ms())};
  return with_connection([&](RedisConnection& c) -> Status {
    Result<RedisReplyPtr> got = c.eval(kSetStep, keys, args);
    if (!got.ok()) return got.status();
    const redisReply* r = got->get();
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

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_redis_store(std::string_view url) {
  Result<RedisTarget> target = parse_redis_url(url, "store");
  if (!target.ok()) return target.status();
  auto store = std::make_unique<RedisStore>(std::move(target).value());
  IDFORGE_RETURN_IF_ERROR(store->open());
  return std::unique_ptr<SegmentStore>(std::move(store));
}

}  // namespace idforge::store
