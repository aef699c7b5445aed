#include "coord/redis/redis_records.h"

#include <fmt/format.h>

namespace idforge::coord {

const char* const kRedisReplaceLua = R"lua(
local v = redis.call('GET', KEYS[1])
if (ARGV[1] == '0' and not v) or (ARGV[1] == '1' and v == ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[3])
  return {1}
end
if not v then return {0} end
return {0, v}
)lua";

namespace {

using redis::RedisConnection;
using redis::RedisReplyPtr;

class RedisRecords final : public FleetRecords {
 public:
  RedisRecords(redis::RedisClient& client, size_t script, std::string prefix, std::string described,
               std::function<Status(RedisConnection&)> after_write)
      : client_(client),
        script_(script),
        prefix_(std::move(prefix) + "fleet:"),
        described_(std::move(described)),
        after_write_(std::move(after_write)) {}

  Result<FleetRecord> read(std::string_view name) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    return client_.with_connection([&](RedisConnection& c) -> Result<FleetRecord> {
      IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.command({"GET", key_of(name)}));
      const redisReply* r = got.get();
      if (r->type == REDIS_REPLY_ERROR) return error(r, "reading a fleet record");
      if (r->type == REDIS_REPLY_NIL) return FleetRecord{};
      if (r->type != REDIS_REPLY_STRING) return unexpected("reading a fleet record");
      return FleetRecord{true, std::string(redis::reply_text(r))};
    });
  }

  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    const std::vector<std::string> args = {expected.exists ? "1" : "0", expected.value,
                                           std::string(value)};
    return client_.with_connection([&](RedisConnection& c) -> Result<bool> {
      IDFORGE_ASSIGN_OR_RETURN(RedisReplyPtr got, c.eval(script_, {key_of(name)}, args));
      const redisReply* r = got.get();
      if (r->type == REDIS_REPLY_ERROR) return error(r, "writing a fleet record");
      if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > 2 ||
          r->element[0]->type != REDIS_REPLY_INTEGER) {
        return unexpected("writing a fleet record");
      }
      if (r->element[0]->integer == 1) {
        IDFORGE_RETURN_IF_ERROR(after_write_(c));
        return true;
      }
      *now = FleetRecord{};
      if (r->elements == 2) {
        if (r->element[1]->type != REDIS_REPLY_STRING) return unexpected("writing a fleet record");
        *now = FleetRecord{true, std::string(redis::reply_text(r->element[1]))};
      }
      return false;
    });
  }

  std::string describe() const override { return described_; }

 private:
  std::string key_of(std::string_view name) const { return prefix_ + std::string(name); }
  Status error(const redisReply* r, std::string_view doing) const {
    return redis::redis_error_status(client_.shown(), r, doing);
  }
  Status unexpected(std::string_view doing) const {
    return Status::Internal(fmt::format("{}: {}: unexpected reply", described_, doing));
  }

  redis::RedisClient& client_;
  const size_t script_;
  const std::string prefix_;
  const std::string described_;
  const std::function<Status(RedisConnection&)> after_write_;
};

}  // namespace

std::unique_ptr<FleetRecords> make_redis_records(
    redis::RedisClient& client, size_t script, std::string prefix, std::string described,
    std::function<Status(redis::RedisConnection&)> after_write) {
  return std::make_unique<RedisRecords>(client, script, std::move(prefix), std::move(described),
                                        std::move(after_write));
}

}  // namespace idforge::coord
