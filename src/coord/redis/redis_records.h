// The fleet records of the Redis registry: one string key per record,
// idforge:CLUSTER:fleet:NAME, each replace one Lua script (kRedisReplaceLua) that
// compares the value (or its absence) and sets it. With min_replicas, a write counts
// only once WAIT says that many replicas have it, as a renew does.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/fleet_records.h"
#include "redis/redis_connection.h"

namespace idforge::coord {

// KEYS: the record. ARGV: '1' when a value is expected ('0': absence), the expected
// value, the new value. Returns {1} when set, else {0} (absent) or {0, value}.
extern const char* const kRedisReplaceLua;

// `client` (with kRedisReplaceLua loaded as script `script`) must outlive the records;
// `prefix` is "idforge:CLUSTER:". `after_write` runs on the connection after each write
// that was applied, and its error fails the replace (the caller reads again).
std::unique_ptr<FleetRecords> make_redis_records(
    redis::RedisClient& client, size_t script, std::string prefix, std::string described,
    std::function<Status(redis::RedisConnection&)> after_write);

}  // namespace idforge::coord
