#include "idforge/ulid.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <thread>
#include <vector>

#include "core/base32.h"
#include "core/ulid_impl.h"
#include "idforge/clock.h"

namespace idforge {

// Reaches into the generator to force states that take 2^80 calls to reach honestly.
struct UlidGeneratorTestPeer {
  static void set_state(UlidGeneratorImpl& g, int64_t last_ms, const std::array<uint8_t, 10>& r) {
    MutexLock lock(g.mu_);
    g.last_ms_ = last_ms;
    g.last_random_ = r;
  }
};

// Named, not anonymous: the unit tests build in unity batches, where the helpers of
// uuid_test.cc and ulid_test.cc (must_parse, parse_error, kT0) would meet.
namespace ulid_test {

constexpr int64_t kT0 = 1'700'000'000'123;

Ulid must_parse(std::string_view text) {
  Result<Ulid> r = Ulid::parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : Ulid{};
}

std::string parse_error(std::string_view text) {
  Result<Ulid> r = Ulid::parse(text);
  EXPECT_FALSE(r.ok()) << "accepted '" << text << "'";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

// The 80-bit random part as (high 16 bits, low 64 bits).
std::pair<uint64_t, uint64_t> random_of(const Ulid& u) {
  uint64_t hi = uint64_t{u.bytes[6]} << 8 | u.bytes[7];
  uint64_t lo = 0;
  for (int i = 8; i < 16; ++i) lo = lo << 8 | u.bytes[i];
  return {hi, lo};
}

bool is_successor(const Ulid& prev, const Ulid& next) {
  auto [ph, pl] = random_of(prev);
  auto [nh, nl] = random_of(next);
  return pl == UINT64_MAX ? (nl == 0 && nh == ph + 1) : (nh == ph && nl == pl + 1);
}

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- text form ----

// The example in the ULID spec's README. Its first 10 characters, 01ARZ3NDEK, are the
// time: 0,1,A=10,R=24,Z=31,3,N=21,D=13,E=14,K=19 in base 32 is
//   1*32^8 + 10*32^7 + 24*32^6 + 31*32^5 + 3*32^4 + 21*32^3 + 13*32^2 + 14*32 + 19
//   = 1099511627776 + 343597383680 + 25769803776 + 1040187392 + 3145728 + 688128
//     + 13312 + 448 + 19 = 1469922850259 ms = 2016-07-30 23:54:10.259 UTC.
TEST(UlidText, SpecExampleDecodes) {
  Ulid u = must_parse("01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(u.unix_ms(), 1'469'922'850'259);
  const std::array<uint8_t, 16> expected = {0x01, 0x56, 0x3e, 0x3a, 0xb5, 0xd3, 0xd6, 0x76,
                                            0x4c, 0x61, 0xef, 0xb9, 0x93, 0x02, 0xbd, 0x5b};
  EXPECT_EQ(u.bytes, expected);
  EXPECT_EQ(u.to_string(), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
}

TEST(UlidText, KnownEncodings) {
  Ulid zero{};
  EXPECT_EQ(zero.to_string(), "00000000000000000000000000");
  Ulid max;
  max.bytes.fill(0xFF);
  EXPECT_EQ(max.to_string(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  EXPECT_EQ(max.unix_ms(), (int64_t{1} << 48) - 1);
  Ulid one{};
  one.bytes[15] = 1;
  EXPECT_EQ(one.to_string(), "00000000000000000000000001");
  Ulid top{};
  top.bytes[0] = 0x80;
  EXPECT_EQ(top.to_string(), "40000000000000000000000000");
  Ulid counting;
  for (int i = 0; i < 16; ++i) counting.bytes[i] = static_cast<uint8_t>(i + 1);
  EXPECT_EQ(counting.to_string(), "01081G81860W40J2GB1G6GW3RG");
  EXPECT_EQ(must_parse("01081G81860W40J2GB1G6GW3RG"), counting);
  EXPECT_EQ(must_parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"), max);
}

TEST(UlidText, LowerAndMixedCaseAccepted) {
  Ulid u = must_parse("01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(must_parse("01arz3ndektsv4rrffq69g5fav"), u);
  EXPECT_EQ(must_parse("01aRz3NdEkTsV4rRfFq69G5fAv"), u);
}

RC_GTEST_PROP(UlidText, RoundTrips, (const std::array<uint8_t, 16>& bytes)) {
  const Ulid u{bytes};
  const std::string text = u.to_string();
  RC_ASSERT(text.size() == 26u);
  RC_ASSERT(text[0] >= '0' && text[0] <= '7');
  RC_ASSERT(text.find_first_not_of(base32::kCrockfordAlphabet) == std::string::npos);
  RC_ASSERT(*Ulid::parse(text) == u);
  RC_ASSERT(*Ulid::parse(to_lower(text)) == u);
}

RC_GTEST_PROP(UlidText, TextOrderMatchesValueOrder,
              (const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b)) {
  const Ulid ua{a}, ub{b};
  RC_ASSERT((ua < ub) == (ua.to_string() < ub.to_string()));
}

RC_GTEST_PROP(UlidText, EveryValidTextRoundTrips, ()) {
  // Any 26 alphabet characters with a first one of 0..7 is a ULID, and its canonical
  // text is itself in upper case.
  std::string text(1, *rc::gen::elementOf(std::string_view("01234567")));
  for (int i = 0; i < 25; ++i) text.push_back(*rc::gen::elementOf(base32::kCrockfordAlphabet));
  std::string lower = to_lower(text);
  RC_ASSERT(Ulid::parse(lower)->to_string() == text);
}

TEST(UlidText, ExcludedLettersAreNamedWithTheirPosition) {
  const std::string base = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
  for (char c : std::string("ILOUilou")) {
    std::string text = base;
    text[4] = c;
    std::string msg = parse_error(text);
    EXPECT_EQ(msg, "ULID '" + text + "': invalid character '" + std::string(1, c) +
                       "' at position 5 of 26 (Crockford base32 has no I, L, O or U)");
  }
  std::string last = base;
  last[25] = 'U';
  EXPECT_NE(parse_error(last).find("'U' at position 26 of 26"), std::string::npos);
  std::string first = base;
  first[0] = 'O';
  EXPECT_NE(parse_error(first).find("'O' at position 1 of 26"), std::string::npos);
}

TEST(UlidText, OtherBadCharacters) {
  EXPECT_EQ(parse_error("01ARZ3NDEK-SV4RRFFQ69G5FAV"),
            "ULID '01ARZ3NDEK-SV4RRFFQ69G5FAV': invalid character '-' at position 11 of 26 "
            "(not in Crockford base32 0-9 A-Z without I L O U)");
  EXPECT_NE(parse_error("01ARZ3NDEKTSV4RRFFQ69G5FA ").find("' ' at position 26"),
            std::string::npos);
  // A non-ASCII byte is shown escaped, so the message stays one printable line.
  EXPECT_EQ(parse_error(std::string("01ARZ3NDEKTSV4RRFFQ69G5FA\n", 26)),
            "ULID '01ARZ3NDEKTSV4RRFFQ69G5FA\\x0a': invalid character '\\x0a' at position 26 "
            "of 26 (not in Crockford base32 0-9 A-Z without I L O U)");
  EXPECT_NE(parse_error(std::string("\xc3\x89"
                                    "1ARZ3NDEKTSV4RRFFQ69G5FA",
                                    26))
                .find("'\\xc3' at position 1 of 26"),
            std::string::npos);
}

TEST(UlidText, WrongLength) {
  EXPECT_EQ(parse_error(""), "ULID '': expected 26 Crockford base32 characters, got 0");
  EXPECT_EQ(parse_error("01ARZ3NDEKTSV4RRFFQ69G5FA"),
            "ULID '01ARZ3NDEKTSV4RRFFQ69G5FA': expected 26 Crockford base32 characters, got 25");
  EXPECT_EQ(parse_error("01ARZ3NDEKTSV4RRFFQ69G5FAVV"),
            "ULID '01ARZ3NDEKTSV4RRFFQ69G5FAVV': expected 26 Crockford base32 characters, got 27");
  std::string huge(5000, '0');
  std::string msg = parse_error(huge);
  EXPECT_LT(msg.size(), 200u);
  EXPECT_NE(msg.find("got 5000"), std::string::npos);
}

TEST(UlidText, OverflowPast128BitsIsRejected) {
  EXPECT_EQ(parse_error("8ZZZZZZZZZZZZZZZZZZZZZZZZZ"),
            "ULID '8ZZZZZZZZZZZZZZZZZZZZZZZZZ': first character '8' is above '7', so the value "
            "does not fit in 128 bits");
  EXPECT_NE(parse_error("80000000000000000000000000").find("'8' is above '7'"), std::string::npos);
  EXPECT_NE(parse_error("zzzzzzzzzzzzzzzzzzzzzzzzzz").find("'z' is above '7'"), std::string::npos);
  // A bad character anywhere is reported before the overflow.
  EXPECT_NE(parse_error("8ZZZZZZZZZZZZZZZZZZZZZZZZI").find("'I' at position 26"),
            std::string::npos);
}

// ---- base32 helpers ----

TEST(Base32, CrockfordValueIsStrictAndCaseInsensitive) {
  for (size_t i = 0; i < base32::kCrockfordAlphabet.size(); ++i) {
    char c = base32::kCrockfordAlphabet[i];
    EXPECT_EQ(base32::crockford_value(c), static_cast<int>(i));
    EXPECT_EQ(base32::crockford_value(static_cast<char>(std::tolower(c))), static_cast<int>(i));
  }
  int valid = 0;
  for (int c = 0; c < 256; ++c) valid += base32::crockford_value(static_cast<char>(c)) >= 0;
  EXPECT_EQ(valid, 10 + 2 * 22);
  for (char c : std::string("ILOUilou-*= ")) EXPECT_EQ(base32::crockford_value(c), -1) << c;
  for (char c : std::string("ILOUilou")) EXPECT_TRUE(base32::is_excluded_letter(c));
  EXPECT_FALSE(base32::is_excluded_letter('V'));
  EXPECT_FALSE(base32::is_excluded_letter('1'));
}

TEST(Base32, U64KnownValues) {
  EXPECT_EQ(base32::encode_u64(0), "0");
  EXPECT_EQ(base32::encode_u64(31), "Z");
  EXPECT_EQ(base32::encode_u64(32), "10");
  EXPECT_EQ(base32::encode_u64(1234, 6), "00016J");
  EXPECT_EQ(base32::encode_u64(UINT64_MAX), "FZZZZZZZZZZZZ");
  EXPECT_EQ(base32::decode_u64("fzzzzzzzzzzzz"), UINT64_MAX);
  EXPECT_EQ(base32::decode_u64("G000000000000"), std::nullopt);  // 2^64
  EXPECT_EQ(base32::decode_u64("00000000000000000016J"), 1234u);
  EXPECT_EQ(base32::decode_u64(""), std::nullopt);
  EXPECT_EQ(base32::decode_u64("1I"), std::nullopt);
}

RC_GTEST_PROP(Base32, U64RoundTrips, (uint64_t value)) {
  RC_ASSERT(base32::decode_u64(base32::encode_u64(value)) == value);
  RC_ASSERT(base32::decode_u64(to_lower(base32::encode_u64(value, 20))) == value);
}

// ---- generator ----

TEST(UlidGenerator, TimeComesFromTheClock) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  for (int i = 0; i < 100; ++i) {
    Ulid u = gen->next();
    EXPECT_EQ(u.unix_ms(), clock.now_ms());
    EXPECT_EQ(must_parse(u.to_string()), u);
    clock.advance(1 + i % 3);
  }
}

TEST(UlidGenerator, NewMillisecondGetsFreshRandomness) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  uint64_t seen_lo = 0;
  for (int i = 0; i < 1000; ++i) {
    clock.advance(1);
    parts.push_back(random_of(gen->next()));
    seen_lo |= parts.back().second;
  }
  EXPECT_EQ(seen_lo, UINT64_MAX);
  std::sort(parts.begin(), parts.end());
  EXPECT_EQ(std::adjacent_find(parts.begin(), parts.end()), parts.end());
}

TEST(UlidGenerator, SameMillisecondIncrementsByOne) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  Ulid prev = gen->next();
  for (int i = 0; i < 1'000'000; ++i) {
    Ulid u = gen->next();
    ASSERT_LT(prev, u) << "at " << i;
    ASSERT_EQ(u.unix_ms(), kT0);
    ASSERT_TRUE(is_successor(prev, u)) << prev.to_string() << " -> " << u.to_string();
    prev = u;
  }
}

TEST(UlidGenerator, IncrementCarriesAcrossBytes) {
  ManualClock clock(kT0);
  UlidGeneratorImpl gen(&clock);
  UlidGeneratorTestPeer::set_state(gen, kT0,
                                   {0x12, 0x34, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF});
  Ulid u = gen.next();
  EXPECT_EQ(u.unix_ms(), kT0);
  const std::array<uint8_t, 10> expected = {0x12, 0x34, 0x01, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), u.bytes.begin() + 6));
}

TEST(UlidGenerator, RandomPartOverflowMovesToTheNextMillisecond) {
  ManualClock clock(kT0);
  UlidGeneratorImpl gen(&clock);
  std::array<uint8_t, 10> near_max;
  near_max.fill(0xFF);
  near_max[9] = 0xFE;
  UlidGeneratorTestPeer::set_state(gen, kT0, near_max);
  Ulid last = gen.next();  // 2^80 - 1: the last value of this ms
  EXPECT_EQ(last.unix_ms(), kT0);
  EXPECT_EQ(last.to_string().substr(10), "ZZZZZZZZZZZZZZZZ");
  Ulid moved = gen.next();  // the clock has not moved, but the ms is used up
  EXPECT_EQ(moved.unix_ms(), kT0 + 1);
  EXPECT_LT(last, moved);
  EXPECT_NE(moved.to_string().substr(10), "0000000000000000") << "fresh randomness, not zero";
  // The clock catches up with the borrowed ms: keep incrementing in it.
  clock.set(kT0 + 1);
  Ulid next = gen.next();
  EXPECT_EQ(next.unix_ms(), kT0 + 1);
  EXPECT_TRUE(is_successor(moved, next));
}

TEST(UlidGenerator, OverflowWhileTheClockIsBehind) {
  ManualClock clock(kT0 - 1000);
  UlidGeneratorImpl gen(&clock);
  std::array<uint8_t, 10> max;
  max.fill(0xFF);
  UlidGeneratorTestPeer::set_state(gen, kT0, max);
  Ulid a = gen.next();
  EXPECT_EQ(a.unix_ms(), kT0 + 1);
  UlidGeneratorTestPeer::set_state(gen, kT0 + 1, max);
  Ulid b = gen.next();
  EXPECT_EQ(b.unix_ms(), kT0 + 2);
  EXPECT_LT(a, b);
}

TEST(UlidGenerator, ClockSetBackTenSecondsStillIncreases) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  Ulid prev = gen->next();
  clock.set(kT0 - 10'000);
  for (int i = 0; i < 10'000; ++i) {
    Ulid u = gen->next();
    ASSERT_LT(prev, u);
    ASSERT_EQ(u.unix_ms(), kT0) << "keeps the last ms while the clock is behind";
    ASSERT_TRUE(is_successor(prev, u));
    prev = u;
    if (i % 1000 == 0) clock.advance(1);
  }
  clock.set(kT0 + 1);
  Ulid u = gen->next();
  EXPECT_EQ(u.unix_ms(), kT0 + 1);
  EXPECT_LT(prev, u);
}

TEST(UlidGenerator, BatchIsIncreasingAndContinuesTheSequence) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  Ulid first = gen->next();
  std::vector<Ulid> batch(5000);
  gen->next_batch(batch);
  EXPECT_TRUE(is_successor(first, batch.front()));
  for (size_t i = 1; i < batch.size(); ++i) {
    ASSERT_TRUE(is_successor(batch[i - 1], batch[i]));
    ASSERT_EQ(batch[i].unix_ms(), kT0);
  }
  Ulid after = gen->next();
  EXPECT_TRUE(is_successor(batch.back(), after));
}

TEST(UlidGenerator, ClockBeforeTheEpochAndBeyond48BitsIsClamped) {
  ManualClock clock(-5);
  auto gen = UlidGenerator::create(&clock);
  EXPECT_EQ(gen->next().unix_ms(), 0);
  clock.set(int64_t{1} << 50);
  EXPECT_EQ(gen->next().unix_ms(), (int64_t{1} << 48) - 1);
}

TEST(UlidGenerator, DefaultClockAndSharedGenerator) {
  SystemClock system;
  auto gen = UlidGenerator::create();
  int64_t before = system.now_ms();
  Ulid u = gen->next();
  int64_t after = system.now_ms();
  EXPECT_GE(u.unix_ms(), before - 50);
  EXPECT_LE(u.unix_ms(), after + 50);

  UlidGenerator& shared = UlidGenerator::shared();
  EXPECT_EQ(&shared, &UlidGenerator::shared());
  Ulid a = shared.next();
  Ulid b = shared.next();
  EXPECT_LT(a, b);
}

// ---- concurrency (a TSan run filters on '*Concurrency*') ----

void check_threads(UlidGenerator& gen, bool use_batches) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200'000;
  std::vector<std::vector<Ulid>> per_thread(kThreads, std::vector<Ulid>(kPerThread));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Ulid>& mine = per_thread[t];
      if (use_batches) {
        for (size_t i = 0; i < mine.size(); i += 100) {
          gen.next_batch(std::span<Ulid>(mine).subspan(i, std::min<size_t>(100, mine.size() - i)));
        }
      } else {
        for (Ulid& u : mine) u = gen.next();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Ulid> all;
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

TEST(UlidConcurrency, FourThreadsDistinctAndEachIncreasing) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  ClockMover mover(clock);
  check_threads(*gen, false);
}

TEST(UlidConcurrency, FourThreadsOfBatches) {
  ManualClock clock(kT0);
  auto gen = UlidGenerator::create(&clock);
  ClockMover mover(clock);
  check_threads(*gen, true);
}

}  // namespace ulid_test
}  // namespace idforge
