#include "idforge/uuid.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <thread>
#include <vector>

#include "core/uuid_impl.h"
#include "idforge/clock.h"

namespace idforge {

// Reaches into the generator to force states that take 2^41 calls to reach honestly.
struct Uuid7GeneratorTestPeer {
  static void set_state(Uuid7GeneratorImpl& g, int64_t last_ms, uint64_t counter) {
    MutexLock lock(g.mu_);
    g.last_ms_ = last_ms;
    g.counter_ = counter;
  }
};

// Named, not anonymous: the unit tests build in unity batches, where the helpers of
// uuid_test.cc and ulid_test.cc (must_parse, parse_error, kT0) would meet.
namespace uuid_test {

constexpr int64_t kT0 = 1'700'000'000'123;
constexpr uint64_t kCounterMax = (uint64_t{1} << 42) - 1;

// The 42-bit counter: 12 bits of rand_a, then the top 30 bits of rand_b.
uint64_t counter_of(const Uuid& u) {
  const auto& b = u.bytes;
  return uint64_t{b[6] & 0x0Fu} << 38 | uint64_t{b[7]} << 30 | uint64_t{b[8] & 0x3Fu} << 24 |
         uint64_t{b[9]} << 16 | uint64_t{b[10]} << 8 | b[11];
}

int64_t time_of(const Uuid& u) {
  int64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = ms << 8 | u.bytes[i];
  return ms;
}

Uuid must_parse(std::string_view text) {
  Result<Uuid> r = Uuid::parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : Uuid{};
}

std::string parse_error(std::string_view text) {
  Result<Uuid> r = Uuid::parse(text);
  EXPECT_FALSE(r.ok()) << "accepted '" << text << "'";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

// ---- text form ----

TEST(UuidText, ToStringIsCanonicalLowerCase) {
  Uuid u;
  for (int i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(0x10 * (i % 16) + 0x0A);
  EXPECT_EQ(u.to_string(), "0a1a2a3a-4a5a-6a7a-8a9a-aabacadaeafa");
  EXPECT_EQ(Uuid{}.to_string(), "00000000-0000-0000-0000-000000000000");
}

TEST(UuidText, ParsesEveryAcceptedForm) {
  const Uuid expected = {{0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0, 0xa7, 0x65, 0x00, 0xa0,
                          0xc9, 0x1e, 0x6b, 0xf6}};
  const char* forms[] = {
      "f81d4fae-7dec-11d0-a765-00a0c91e6bf6",           // canonical
      "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",           // upper case
      "F81d4FaE-7dEc-11D0-a765-00A0c91E6bF6",           // mixed
      "{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}",         // braces
      "{F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6}",         // braces, upper
      "urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",  // URN
      "URN:UUID:F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",  // URN, upper prefix
      "Urn:Uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",  // URN, mixed prefix
      "f81d4fae7dec11d0a76500a0c91e6bf6",               // 32 hex
      "F81D4FAE7DEC11D0A76500A0C91E6BF6",               // 32 hex, upper
  };
  for (const char* form : forms) EXPECT_EQ(must_parse(form), expected) << form;
}

TEST(UuidText, WrongLengthSaysWhatWasExpected) {
  EXPECT_EQ(parse_error("xyz"), "UUID 'xyz': expected 36 characters 8-4-4-4-12, got 3");
  EXPECT_EQ(parse_error(""), "UUID '': expected 36 characters 8-4-4-4-12, got 0");
  EXPECT_EQ(parse_error("f81d4fae-7dec-11d0-a765-00a0c91e6bf"),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6bf': expected 36 characters 8-4-4-4-12, "
            "got 35");
  EXPECT_EQ(parse_error("f81d4fae-7dec-11d0-a765-00a0c91e6bf60"),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6bf60': expected 36 characters 8-4-4-4-12, "
            "got 37");
  EXPECT_EQ(parse_error("f81d4fae7dec11d0a76500a0c91e6bf"),  // 31 hex digits
            "UUID 'f81d4fae7dec11d0a76500a0c91e6bf': expected 36 characters 8-4-4-4-12, got 31");
}

TEST(UuidText, BadCharactersAreNamedWithTheirPosition) {
  EXPECT_EQ(parse_error("f81d4fag-7dec-11d0-a765-00a0c91e6bf6"),
            "UUID 'f81d4fag-7dec-11d0-a765-00a0c91e6bf6': invalid hex digit 'g' at position 8");
  EXPECT_EQ(parse_error("f81d4fae-7dec-11d0-a765-00a0c91e6bfZ"),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6bfZ': invalid hex digit 'Z' at position 36");
  EXPECT_EQ(parse_error("f81d4fae07dec-11d0-a765-00a0c91e6bf6"),
            "UUID 'f81d4fae07dec-11d0-a765-00a0c91e6bf6': expected '-' at position 9, got '0'");
  // Dashes in the wrong places of the 36-character form.
  EXPECT_EQ(parse_error("f81d4fa-e7dec-11d0-a765-00a0c91e6bf6"),
            "UUID 'f81d4fa-e7dec-11d0-a765-00a0c91e6bf6': invalid hex digit '-' at position 8");
  // Positions count the whole input, prefix included.
  EXPECT_EQ(parse_error("{f81d4fae-7dec-11d0-a765-00a0c91e6bx6}"),
            "UUID '{f81d4fae-7dec-11d0-a765-00a0c91e6bx6}': invalid hex digit 'x' at position 36");
  EXPECT_EQ(parse_error("urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bx6"),
            "UUID 'urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bx6': invalid hex digit 'x' at "
            "position 44");
  // A 32-character text must be all hex: no dashes.
  EXPECT_EQ(parse_error("f81d4fae-7dec-11d0-a765-00a0c91e"),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e': invalid hex digit '-' at position 9");
}

TEST(UuidText, RejectsMalformedWrappers) {
  EXPECT_EQ(parse_error("{f81d4fae-7dec-11d0-a765-00a0c91e6bf6"),
            "UUID '{f81d4fae-7dec-11d0-a765-00a0c91e6bf6': opening '{' without a closing '}'");
  EXPECT_EQ(parse_error("{"), "UUID '{': opening '{' without a closing '}'");
  EXPECT_EQ(parse_error("{}"),
            "UUID '{}': expected 36 characters 8-4-4-4-12 inside the braces, got 0");
  EXPECT_EQ(parse_error("{f81d4fae7dec11d0a76500a0c91e6bf6}"),
            "UUID '{f81d4fae7dec11d0a76500a0c91e6bf6}': expected 36 characters 8-4-4-4-12 "
            "inside the braces, got 32");
  EXPECT_EQ(parse_error("urn:uuid:"),
            "UUID 'urn:uuid:': expected 36 characters 8-4-4-4-12 after 'urn:uuid:', got 0");
  // Other brackets, stray spaces and a closing brace alone are just wrong.
  parse_error("(f81d4fae-7dec-11d0-a765-00a0c91e6bf6)");
  parse_error(" f81d4fae-7dec-11d0-a765-00a0c91e6bf6");
  parse_error("f81d4fae-7dec-11d0-a765-00a0c91e6bf6 ");
  parse_error("f81d4fae-7dec-11d0-a765-00a0c91e6bf6}");
  parse_error("urn:uid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6");
}

TEST(UuidText, ErrorMessagesEscapeAndTruncateTheInput) {
  std::string with_newline = "f81d4fae-7dec-11d0-a765-00a0c91e6bf\r\n";
  EXPECT_EQ(parse_error(with_newline),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6bf\\x0d\\x0a': expected 36 characters "
            "8-4-4-4-12, got 37");
  std::string msg = parse_error(std::string(10'000, 'a'));
  EXPECT_LT(msg.size(), 200u);
  EXPECT_NE(msg.find("...': expected 36 characters 8-4-4-4-12, got 10000"), std::string::npos)
      << msg;
  EXPECT_EQ(parse_error(std::string("f81d4fae-7dec-11d0-a765-00a0c91e6b\xff"
                                    "6",
                                    36)),
            "UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6b\\xff6': invalid hex digit '\\xff' at "
            "position 35");
}

RC_GTEST_PROP(UuidText, RoundTripsThroughEveryForm, (const std::array<uint8_t, 16>& bytes)) {
  const Uuid u{bytes};
  const std::string text = u.to_string();
  RC_ASSERT(text.size() == 36u);
  RC_ASSERT(*Uuid::parse(text) == u);
  std::string upper = text;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  RC_ASSERT(*Uuid::parse(upper) == u);
  RC_ASSERT(*Uuid::parse("{" + text + "}") == u);
  RC_ASSERT(*Uuid::parse("urn:uuid:" + text) == u);
  std::string compact = text;
  compact.erase(std::remove(compact.begin(), compact.end(), '-'), compact.end());
  RC_ASSERT(*Uuid::parse(compact) == u);
}

RC_GTEST_PROP(UuidText, TextOrderMatchesValueOrder,
              (const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b)) {
  const Uuid ua{a}, ub{b};
  RC_ASSERT((ua < ub) == (ua.to_string() < ub.to_string()));
}

// ---- inspect ----

// RFC 9562 appendix A: v1, v6 and v7 test vectors, all made at Tuesday, 2022-02-22
// 14:22:22 GMT-05:00 = 19:22:22 UTC = Unix 1645557742000 ms (60-bit Gregorian
// timestamp 0x1EC9414C232AB00).
constexpr int64_t kRfcVectorMs = 1'645'557'742'000;

TEST(UuidInspect, Rfc9562Version1Vector) {
  UuidInfo info = inspect(must_parse("C232AB00-9414-11EC-B3C8-9F6BDECED846"));
  EXPECT_EQ(info.version, 1);
  EXPECT_TRUE(info.rfc_variant);
  ASSERT_TRUE(info.unix_ms.has_value());
  EXPECT_EQ(*info.unix_ms, kRfcVectorMs);
}

TEST(UuidInspect, Rfc9562Version6Vector) {
  UuidInfo info = inspect(must_parse("1EC9414C-232A-6B00-B3C8-9F6BDECED846"));
  EXPECT_EQ(info.version, 6);
  EXPECT_TRUE(info.rfc_variant);
  ASSERT_TRUE(info.unix_ms.has_value());
  EXPECT_EQ(*info.unix_ms, kRfcVectorMs);
}

TEST(UuidInspect, Rfc9562Version7Vector) {
  UuidInfo info = inspect(must_parse("017F22E2-79B0-7CC3-98C4-DC0C0C07398F"));
  EXPECT_EQ(info.version, 7);
  EXPECT_TRUE(info.rfc_variant);
  ASSERT_TRUE(info.unix_ms.has_value());
  EXPECT_EQ(*info.unix_ms, kRfcVectorMs);
}

TEST(UuidInspect, GregorianTimesRoundDownToTheMillisecond) {
  // Tick 0 is 1582-10-15 00:00:00 UTC, 12219292800 s before the Unix epoch.
  EXPECT_EQ(inspect(must_parse("00000000-0000-1000-8000-000000000000")).unix_ms,
            -12'219'292'800'000);
  EXPECT_EQ(inspect(must_parse("00000000-0000-6000-8000-000000000000")).unix_ms,
            -12'219'292'800'000);
  // The Unix epoch is tick 0x01B21DD213814000; v1 splits it as time_low 0x13814000,
  // time_mid 0x1DD2, time_high 0x1B2; v6 as 0x1B21DD21 3814 000.
  EXPECT_EQ(inspect(must_parse("13814000-1dd2-11b2-8000-000000000000")).unix_ms, 0);
  EXPECT_EQ(inspect(must_parse("1b21dd21-3814-6000-8000-000000000000")).unix_ms, 0);
  // 9999 ticks (0.9999 ms) after the epoch is still ms 0; one tick before it is ms -1.
  EXPECT_EQ(inspect(must_parse("1381670f-1dd2-11b2-8000-000000000000")).unix_ms, 0);
  EXPECT_EQ(inspect(must_parse("13813fff-1dd2-11b2-8000-000000000000")).unix_ms, -1);
  // The largest 60-bit timestamp: 5236-03-31.
  EXPECT_EQ(inspect(must_parse("ffffffff-ffff-6fff-bfff-ffffffffffff")).unix_ms,
            (int64_t{(1LL << 60) - 1} - 122'192'928'000'000'000) / 10'000);
}

TEST(UuidInspect, NoTimeWhereThereIsNone) {
  UuidInfo v4 = inspect(must_parse("919108f7-52d1-4320-9bac-f847db4148a8"));
  EXPECT_EQ(v4.version, 4);
  EXPECT_TRUE(v4.rfc_variant);
  EXPECT_FALSE(v4.unix_ms.has_value());

  UuidInfo nil = inspect(Uuid{});
  EXPECT_EQ(nil.version, 0);
  EXPECT_FALSE(nil.rfc_variant);
  EXPECT_FALSE(nil.unix_ms.has_value());

  UuidInfo max = inspect(must_parse("ffffffff-ffff-ffff-ffff-ffffffffffff"));
  EXPECT_EQ(max.version, 15);
  EXPECT_FALSE(max.rfc_variant);
  EXPECT_FALSE(max.unix_ms.has_value());

  // Version nibble 7 but the Microsoft variant (110x): not an RFC 9562 v7.
  UuidInfo ms_variant = inspect(must_parse("017f22e2-79b0-7cc3-d8c4-dc0c0c07398f"));
  EXPECT_EQ(ms_variant.version, 7);
  EXPECT_FALSE(ms_variant.rfc_variant);
  EXPECT_FALSE(ms_variant.unix_ms.has_value());
}

// ---- UUIDv4 ----

TEST(Uuid4, VersionVariantAndRandomBits) {
  // Over many UUIDs each of the 122 free bits is seen both set and clear; the six fixed
  // bits never change.
  std::array<uint8_t, 16> seen_one{}, seen_zero{};
  for (int i = 0; i < 2000; ++i) {
    Uuid u = uuid4();
    ASSERT_EQ(u.version(), 4);
    ASSERT_TRUE(u.rfc_variant());
    UuidInfo info = inspect(u);
    ASSERT_EQ(info.version, 4);
    ASSERT_FALSE(info.unix_ms.has_value());
    for (int b = 0; b < 16; ++b) {
      seen_one[b] |= u.bytes[b];
      seen_zero[b] |= static_cast<uint8_t>(~u.bytes[b]);
    }
  }
  for (int b = 0; b < 16; ++b) {
    uint8_t fixed = b == 6 ? 0xF0 : b == 8 ? 0xC0 : 0x00;
    EXPECT_EQ(seen_one[b] & seen_zero[b], static_cast<uint8_t>(~fixed) & 0xFF) << "byte " << b;
  }
}

TEST(Uuid4, OneMillionDistinct) {
  std::vector<Uuid> ids(1'000'000);
  for (Uuid& u : ids) u = uuid4();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

// ---- UUIDv7 ----

TEST(Uuid7, VersionVariantAndTimeFromTheClock) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  for (int i = 0; i < 100; ++i) {
    Uuid u = gen->next();
    EXPECT_EQ(u.version(), 7);
    EXPECT_TRUE(u.rfc_variant());
    UuidInfo info = inspect(u);
    EXPECT_EQ(info.unix_ms, clock.now_ms());
    EXPECT_EQ(Uuid::parse(u.to_string()).value(), u);
    clock.advance(i % 3);
  }
}

TEST(Uuid7, KnownTimeIsBigEndianInTheFirstSixBytes) {
  ManualClock clock(kRfcVectorMs);
  auto gen = Uuid7Generator::create(&clock);
  Uuid u = gen->next();
  EXPECT_EQ(u.to_string().substr(0, 14), "017f22e2-79b0-");
  EXPECT_EQ(u.to_string()[14], '7');
  EXPECT_EQ(inspect(u).unix_ms, kRfcVectorMs);
}

TEST(Uuid7, NewMillisecondSeedsTheCounterRandomlyWithTopBitClear) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  uint64_t seen_bits = 0;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < 1000; ++i) {
    clock.advance(1);
    uint64_t c = counter_of(gen->next());
    EXPECT_LT(c, uint64_t{1} << 41);
    seen_bits |= c;
    seeds.push_back(c);
  }
  EXPECT_EQ(seen_bits, (uint64_t{1} << 41) - 1) << "every low bit should vary";
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(std::adjacent_find(seeds.begin(), seeds.end()), seeds.end());
}

TEST(Uuid7, CounterCountsByOneWithinAMillisecond) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  Uuid prev = gen->next();
  for (int i = 0; i < 1000; ++i) {
    Uuid u = gen->next();
    EXPECT_EQ(counter_of(u), counter_of(prev) + 1);
    EXPECT_EQ(time_of(u), kT0);
    prev = u;
  }
}

TEST(Uuid7, OneMillionInOneMillisecondStrictlyIncrease) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  Uuid prev = gen->next();
  for (int i = 0; i < 1'000'000; ++i) {
    Uuid u = gen->next();
    ASSERT_LT(prev, u) << "at " << i;
    ASSERT_EQ(time_of(u), kT0);
    prev = u;
  }
}

TEST(Uuid7, CounterOverflowMovesToTheNextMillisecond) {
  ManualClock clock(kT0);
  Uuid7GeneratorImpl gen(&clock);
  Uuid7GeneratorTestPeer::set_state(gen, kT0, kCounterMax - 2);
  Uuid a = gen.next();
  Uuid b = gen.next();
  EXPECT_EQ(counter_of(a), kCounterMax - 1);
  EXPECT_EQ(counter_of(b), kCounterMax);
  EXPECT_EQ(time_of(b), kT0);
  Uuid c = gen.next();  // the clock has not moved, but the counter is spent
  EXPECT_EQ(time_of(c), kT0 + 1);
  EXPECT_LT(counter_of(c), uint64_t{1} << 41);
  EXPECT_LT(b, c);
  // The real clock catches up with the borrowed ms: keep counting in it.
  clock.set(kT0 + 1);
  Uuid d = gen.next();
  EXPECT_EQ(time_of(d), kT0 + 1);
  EXPECT_EQ(counter_of(d), counter_of(c) + 1);
  clock.set(kT0 + 5);
  Uuid e = gen.next();
  EXPECT_EQ(time_of(e), kT0 + 5);
  EXPECT_LT(d, e);
}

TEST(Uuid7, CounterOverflowWhileTheClockIsBehind) {
  ManualClock clock(kT0 - 3);
  Uuid7GeneratorImpl gen(&clock);
  Uuid7GeneratorTestPeer::set_state(gen, kT0, kCounterMax);
  Uuid a = gen.next();
  EXPECT_EQ(time_of(a), kT0 + 1);
  Uuid7GeneratorTestPeer::set_state(gen, kT0 + 1, kCounterMax);
  Uuid b = gen.next();
  EXPECT_EQ(time_of(b), kT0 + 2);
  EXPECT_LT(a, b);
}

TEST(Uuid7, ClockSetBackTenSecondsStillIncreases) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  Uuid prev = gen->next();
  clock.set(kT0 - 10'000);
  for (int i = 0; i < 10'000; ++i) {
    Uuid u = gen->next();
    ASSERT_LT(prev, u);
    ASSERT_EQ(time_of(u), kT0) << "keeps the last ms while the clock is behind";
    prev = u;
    if (i % 1000 == 0) clock.advance(1);  // still behind kT0
  }
  clock.set(kT0 + 1);
  Uuid u = gen->next();
  EXPECT_EQ(time_of(u), kT0 + 1);
  EXPECT_LT(prev, u);
}

TEST(Uuid7, BatchIsIncreasingAndContinuesTheSequence) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  Uuid first = gen->next();
  std::vector<Uuid> batch(5000);
  gen->next_batch(batch);
  EXPECT_LT(first, batch.front());
  for (size_t i = 1; i < batch.size(); ++i) {
    ASSERT_LT(batch[i - 1], batch[i]);
    ASSERT_EQ(counter_of(batch[i]), counter_of(batch[i - 1]) + 1);
    ASSERT_EQ(batch[i].version(), 7);
    ASSERT_TRUE(batch[i].rfc_variant());
  }
  EXPECT_LT(batch.back(), gen->next());
  std::vector<Uuid> empty;
  gen->next_batch(empty);  // no-op, must not disturb the sequence
  // The 32 low random bits differ between neighbours (not reused within a batch).
  int same_tail = 0;
  for (size_t i = 1; i < batch.size(); ++i) {
    same_tail += std::equal(batch[i].bytes.begin() + 12, batch[i].bytes.end(),
                            batch[i - 1].bytes.begin() + 12);
  }
  EXPECT_LT(same_tail, 3);
}

TEST(Uuid7, ClockBeforeTheEpochAndBeyond48BitsIsClamped) {
  ManualClock clock(-5);
  auto gen = Uuid7Generator::create(&clock);
  EXPECT_EQ(time_of(gen->next()), 0);
  clock.set(int64_t{1} << 50);
  Uuid u = gen->next();
  EXPECT_EQ(time_of(u), (int64_t{1} << 48) - 1);
  EXPECT_EQ(u.version(), 7);
}

TEST(Uuid7, DefaultClockAndSharedGenerator) {
  SystemClock system;
  auto gen = Uuid7Generator::create();  // default_clock()
  int64_t before = system.now_ms();
  Uuid u = gen->next();
  int64_t after = system.now_ms();
  // The cached clock may lag the system clock by about a millisecond.
  EXPECT_GE(time_of(u), before - 50);
  EXPECT_LE(time_of(u), after + 50);

  Uuid7Generator& shared = Uuid7Generator::shared();
  EXPECT_EQ(&shared, &Uuid7Generator::shared());
  Uuid a = shared.next();
  Uuid b = shared.next();
  EXPECT_LT(a, b);
  EXPECT_EQ(b.version(), 7);
}

// ---- concurrency (a TSan run filters on '*Concurrency*') ----

void check_threads(Uuid7Generator& gen, bool use_batches) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200'000;
  std::vector<std::vector<Uuid>> per_thread(kThreads, std::vector<Uuid>(kPerThread));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Uuid>& mine = per_thread[t];
      if (use_batches) {
        for (size_t i = 0; i < mine.size(); i += 100) {
          gen.next_batch(std::span<Uuid>(mine).subspan(i, std::min<size_t>(100, mine.size() - i)));
        }
      } else {
        for (Uuid& u : mine) u = gen.next();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Uuid> all;
  for (const auto& mine : per_thread) {
    for (size_t i = 1; i < mine.size(); ++i) ASSERT_LT(mine[i - 1], mine[i]) << "at " << i;
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), size_t{kThreads} * kPerThread);
}

// While the threads run, another thread moves the clock forward and now and then back.
class ClockMover {
 public:
  explicit ClockMover(ManualClock& clock)
      : thread_([this, &clock] {
          int step = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            clock.advance(++step % 7 == 0 ? -3 : 1);
            std::this_thread::yield();
          }
        }) {}
  ~ClockMover() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(UuidConcurrency, FourThreadsDistinctAndEachIncreasing) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  ClockMover mover(clock);
  check_threads(*gen, false);
}

TEST(UuidConcurrency, FourThreadsOfBatches) {
  ManualClock clock(kT0);
  auto gen = Uuid7Generator::create(&clock);
  ClockMover mover(clock);
  check_threads(*gen, true);
}

TEST(UuidConcurrency, FourThreadsUuid4Distinct) {
  std::vector<std::vector<Uuid>> per_thread(4, std::vector<Uuid>(200'000));
  std::vector<std::thread> threads;
  for (auto& mine : per_thread) {
    threads.emplace_back([&mine] {
      for (Uuid& u : mine) u = uuid4();
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Uuid> all;
  for (const auto& mine : per_thread) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace uuid_test
}  // namespace idforge
