#include "idforge/random.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>

#include "chacha20.h"

namespace idforge {
namespace internal {
namespace {

constexpr uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

inline void quarter_round(std::array<uint32_t, 16>& s, int a, int b, int c, int d) {
  s[a] += s[b];
  s[d] = rotl(s[d] ^ s[a], 16);
  s[c] += s[d];
  s[b] = rotl(s[b] ^ s[c], 12);
  s[a] += s[b];
  s[d] = rotl(s[d] ^ s[a], 8);
  s[c] += s[d];
  s[b] = rotl(s[b] ^ s[c], 7);
}

inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline void store_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// Plain stores to memory about to die may be removed by the optimizer; a volatile
// pointer keeps them, so key material does not linger after use.
void secure_wipe(void* p, size_t n) {
  volatile uint8_t* v = static_cast<volatile uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) v[i] = 0;
}

}  // namespace

void chacha20_block(const std::array<uint32_t, 8>& key, uint32_t counter,
                    const std::array<uint32_t, 3>& nonce, std::span<uint8_t, 64> out) {
  // "expand 32-byte k" as four little-endian words.
  const std::array<uint32_t, 16> initial = {
      0x61707865, 0x3320646e, 0x79622d32, 0x6b206574, key[0],  key[1],   key[2],   key[3],
      key[4],     key[5],     key[6],     key[7],     counter, nonce[0], nonce[1], nonce[2]};
  std::array<uint32_t, 16> s = initial;
  for (int i = 0; i < 10; ++i) {  // 20 rounds: 10 column + 10 diagonal
    quarter_round(s, 0, 4, 8, 12);
    quarter_round(s, 1, 5, 9, 13);
    quarter_round(s, 2, 6, 10, 14);
    quarter_round(s, 3, 7, 11, 15);
    quarter_round(s, 0, 5, 10, 15);
    quarter_round(s, 1, 6, 11, 12);
    quarter_round(s, 2, 7, 8, 13);
    quarter_round(s, 3, 4, 9, 14);
  }
  for (size_t i = 0; i < 16; ++i) store_le32(out.data() + 4 * i, s[i] + initial[i]);
}

ChaCha20Rng::ChaCha20Rng(std::span<const uint8_t, 32> seed) {
  for (size_t i = 0; i < 8; ++i) key_[i] = load_le32(seed.data() + 4 * i);
}

ChaCha20Rng::~ChaCha20Rng() {
  secure_wipe(key_.data(), sizeof(key_));
  secure_wipe(buffer_.data(), buffer_.size());
}

void ChaCha20Rng::reseed(std::span<const uint8_t, 32> seed) {
  // XOR keeps whatever entropy the old key had: the new key is at least as
  // unpredictable as the better of the two.
  for (size_t i = 0; i < 8; ++i) key_[i] ^= load_le32(seed.data() + 4 * i);
  secure_wipe(buffer_.data(), buffer_.size());
  pos_ = kBufferSize;
}

void ChaCha20Rng::refill() {
  // A fresh key every refill means the counter always starts at 0 and the nonce can
  // stay 0: no (key, counter, nonce) triple is ever used twice.
  constexpr std::array<uint32_t, 3> kNonce = {0, 0, 0};
  for (size_t b = 0; b < kBlocksPerRefill; ++b) {
    chacha20_block(key_, static_cast<uint32_t>(b), kNonce,
                   std::span<uint8_t, 64>(buffer_.data() + 64 * b, 64));
  }
  for (size_t i = 0; i < 8; ++i) key_[i] = load_le32(buffer_.data() + 4 * i);
  secure_wipe(buffer_.data(), 32);
  pos_ = 32;
}

void ChaCha20Rng::fill(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    if (pos_ == kBufferSize) refill();
    size_t n = std::min(out.size() - done, kBufferSize - pos_);
    std::memcpy(out.data() + done, buffer_.data() + pos_, n);
    // Handed-out bytes must not stay readable in the generator.
    std::memset(buffer_.data() + pos_, 0, n);
    pos_ += n;
    done += n;
  }
}

namespace {

// Bumped in the child after every fork(); each thread's generator remembers the value
// it was seeded under. The handler runs in the child's only thread before any other
// code there, and nothing else writes it, so relaxed loads see the new value.
std::atomic<uint64_t> g_fork_generation{0};

void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

void register_fork_handler() {
  static const bool registered = [] {
    if (pthread_atfork(nullptr, nullptr, &on_fork_child) != 0) {
      std::fputs("idforge: pthread_atfork failed; cannot make random bytes fork-safe\n", stderr);
      std::abort();
    }
    return true;
  }();
  (void)registered;
}

std::array<uint8_t, 32> entropy_from_device() {
  std::array<uint8_t, 32> seed{};
  try {
    std::random_device device;
    for (size_t i = 0; i < seed.size(); i += 4) store_le32(seed.data() + i, device());
  } catch (const std::exception& e) {
    // Predictable IDs are worse than none: without an entropy source, stop.
    std::fprintf(stderr, "idforge: std::random_device failed: %s\n", e.what());
    std::abort();
  }
  return seed;
}

struct ThreadRng {
  // Starts with an all-zero key but is always reseeded before its first use.
  ChaCha20Rng rng{std::array<uint8_t, 32>{}};
  bool seeded = false;
  uint64_t fork_generation = 0;
  uint64_t since_reseed = 0;
  uint64_t reseed_count = 0;

  void reseed(uint64_t generation) {
    register_fork_handler();
    std::array<uint8_t, 32> seed = entropy_from_device();
    rng.reseed(seed);
    secure_wipe(seed.data(), seed.size());
    seeded = true;
    fork_generation = generation;
    since_reseed = 0;
    ++reseed_count;
  }
};

ThreadRng& thread_rng() {
  thread_local ThreadRng state;
  return state;
}

}  // namespace

uint64_t thread_reseed_count() { return thread_rng().reseed_count; }

}  // namespace internal

void random_bytes(std::span<uint8_t> out) {
  internal::ThreadRng& t = internal::thread_rng();
  size_t done = 0;
  while (done < out.size()) {
    uint64_t generation = internal::g_fork_generation.load(std::memory_order_relaxed);
    if (!t.seeded || t.fork_generation != generation ||
        t.since_reseed >= internal::kReseedIntervalBytes) {
      t.reseed(generation);
    }
    // Split large requests so a reseed falls exactly every kReseedIntervalBytes.
    size_t n = static_cast<size_t>(
        std::min<uint64_t>(out.size() - done, internal::kReseedIntervalBytes - t.since_reseed));
    t.rng.fill(out.subspan(done, n));
    t.since_reseed += n;
    done += n;
  }
}

uint64_t random_u64() {
  std::array<uint8_t, 8> b;
  random_bytes(b);
  uint64_t v;
  std::memcpy(&v, b.data(), sizeof(v));
  return v;
}

}  // namespace idforge
