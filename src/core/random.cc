#include "random.h"

#include <pthread.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace idforge {
namespace internal {
namespace {

// sodium_init() picks the fastest ChaCha20 code for this CPU (without it libsodium uses
// its portable one) and readies the OS entropy source. Thread-safe and idempotent.
void sodium_ready() {
  static const bool ready = [] {
    if (sodium_init() < 0) {
      std::fputs("idforge: sodium_init failed; cannot make random bytes\n", stderr);
      std::abort();
    }
    return true;
  }();
  (void)ready;
}

// A "fast key erasure" generator: each refill runs ChaCha20 (RFC 8439, libsodium's
// crypto_stream_chacha20_ietf) over a few blocks, keeps the first 32 bytes as the next
// key and hands out the rest, wiping bytes as they go. So the state in memory never
// reveals output already returned (backtracking resistance). One per thread, no locks.
class ChaCha20Rng {
 public:
  static constexpr size_t kBufferSize = 64 * 8;  // eight ChaCha20 blocks per refill

  ChaCha20Rng() = default;
  ~ChaCha20Rng() {
    sodium_memzero(key_.data(), key_.size());
    sodium_memzero(buffer_.data(), buffer_.size());
  }
  ChaCha20Rng(const ChaCha20Rng&) = delete;
  ChaCha20Rng& operator=(const ChaCha20Rng&) = delete;

  void fill(std::span<uint8_t> out) {
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

  // Mixes `seed` into the key and drops buffered output, so nothing produced before the
  // call is produced again after it (what a fork()ed child needs). XOR keeps whatever
  // entropy the old key had: the new key is at least as unpredictable as the better one.
  void reseed(std::span<const uint8_t, 32> seed) {
    for (size_t i = 0; i < key_.size(); ++i) key_[i] ^= seed[i];
    sodium_memzero(buffer_.data(), buffer_.size());
    pos_ = kBufferSize;
  }

 private:
  void refill() {
    // A fresh key every refill means the counter always starts at 0 and the nonce can
    // stay 0: no (key, counter, nonce) triple is ever used twice.
    static constexpr std::array<uint8_t, crypto_stream_chacha20_ietf_NONCEBYTES> kNonce{};
    crypto_stream_chacha20_ietf(buffer_.data(), buffer_.size(), kNonce.data(), key_.data());
    std::memcpy(key_.data(), buffer_.data(), key_.size());
    sodium_memzero(buffer_.data(), key_.size());
    pos_ = key_.size();
  }

  std::array<uint8_t, crypto_stream_chacha20_ietf_KEYBYTES> key_{};
  std::array<uint8_t, kBufferSize> buffer_{};
  size_t pos_ = kBufferSize;  // next unread byte of buffer_
};

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

struct ThreadRng {
  // Starts with an all-zero key but is always reseeded before its first use.
  ChaCha20Rng rng;
  bool seeded = false;
  uint64_t fork_generation = 0;
  uint64_t since_reseed = 0;
  uint64_t reseed_count = 0;

  void reseed(uint64_t generation) {
    sodium_ready();
    register_fork_handler();
    // From the OS (getrandom(), else /dev/urandom). Predictable IDs are worse than none:
    // when no source works, libsodium aborts the process rather than return.
    std::array<uint8_t, 32> seed;
    randombytes_buf(seed.data(), seed.size());
    rng.reseed(seed);
    sodium_memzero(seed.data(), seed.size());
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
