// Helpers shared by the Snowflake generator tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "core/snowflake_impl.h"
#include "idforge/snowflake.h"
#include "support/ordering.h"

namespace idforge::testing {

// The manual clock's start in the Snowflake tests: 2023-11-14T22:13:20Z.
inline constexpr int64_t kT0 = 1'700'000'000'000;

// Fields of the twitter layout, decoded.
struct Parts {
  int64_t unix_ms;
  uint64_t datacenter, worker, sequence;
};

inline Parts parts(uint64_t id) {
  DecodedId d = Layout::twitter().decode(id).value();
  return {d.unix_ms, d.get("datacenter"), d.get("worker"), d.get("sequence")};
}

inline std::unique_ptr<SnowflakeGenerator> make_generator(SnowflakeOptions options) {
  auto gen = SnowflakeGenerator::create(std::move(options));
  EXPECT_TRUE(gen.ok()) << gen.status().to_string();
  return gen.ok() ? std::move(gen).value() : nullptr;
}

// The same with the knobs only the server and the tests set (core/snowflake_impl.h).
inline std::unique_ptr<SnowflakeGenerator> make_generator(SnowflakeOptions options,
                                                          SnowflakeInternals internals) {
  auto gen = create_snowflake_generator(std::move(options), std::move(internals));
  EXPECT_TRUE(gen.ok()) << gen.status().to_string();
  return gen.ok() ? std::move(gen).value() : nullptr;
}

// Default options on a manual clock, with the given policy.
inline SnowflakeOptions manual_options(ManualClock* clock, RollbackPolicy policy) {
  SnowflakeOptions o;
  o.clock = clock;
  o.policy = policy;
  o.nodes = {{"datacenter", 3}, {"worker", 7}};
  return o;
}

// Issues `n` IDs and returns them; fails the test on the first error.
inline std::vector<uint64_t> take(SnowflakeGenerator& gen, size_t n) {
  std::vector<uint64_t> ids;
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto id = gen.next();
    EXPECT_TRUE(id.ok()) << "id " << i << ": " << id.status().to_string();
    if (!id.ok()) break;
    ids.push_back(*id);
  }
  return ids;
}

using test::strictly_increasing;

}  // namespace idforge::testing
