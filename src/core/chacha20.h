// Internal: the ChaCha20 block function (RFC 8439 section 2.3) and the generator behind
// idforge::random_bytes(). Not part of the public API; exposed for tests.
//
// ChaCha20Rng is a plain object with no internal locking: one per thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace idforge::internal {

// One 64-byte ChaCha20 block for `key` (8 little-endian words), block `counter` and
// `nonce` (3 little-endian words), serialized as RFC 8439 section 2.3.2 shows it.
void chacha20_block(const std::array<uint32_t, 8>& key, uint32_t counter,
                    const std::array<uint32_t, 3>& nonce, std::span<uint8_t, 64> out);

// A "fast key erasure" generator: each refill runs ChaCha20 over a few blocks, keeps the
// first 32 bytes as the next key and hands out the rest, wiping bytes as they go. So the
// state in memory never reveals output already returned (backtracking resistance).
class ChaCha20Rng {
 public:
  static constexpr size_t kBlocksPerRefill = 8;
  static constexpr size_t kBufferSize = 64 * kBlocksPerRefill;

  explicit ChaCha20Rng(std::span<const uint8_t, 32> seed);
  ~ChaCha20Rng();
  ChaCha20Rng(const ChaCha20Rng&) = delete;
  ChaCha20Rng& operator=(const ChaCha20Rng&) = delete;

  void fill(std::span<uint8_t> out);
  // Mixes `seed` into the key and drops buffered output, so nothing produced before the
  // call is produced again after it (what a fork()ed child needs).
  void reseed(std::span<const uint8_t, 32> seed);

 private:
  void refill();

  std::array<uint32_t, 8> key_{};
  std::array<uint8_t, kBufferSize> buffer_{};
  size_t pos_ = kBufferSize;  // next unread byte of buffer_
};

// random_bytes() takes fresh entropy from std::random_device after this many bytes.
inline constexpr uint64_t kReseedIntervalBytes = uint64_t{1} << 20;

// How many times the calling thread's generator has been (re)seeded: 0 before first
// use, then one more at first use, after every kReseedIntervalBytes and after a fork.
uint64_t thread_reseed_count();

}  // namespace idforge::internal
