// ULIDs: 48-bit Unix ms + 80 random bits, 26 characters of Crockford base32.
//
// Ulid is a plain value: const methods and parse() may be called from any thread.
// UlidGenerator is thread-safe (one mutex per generator) and monotonic: within one
// millisecond (or while the clock is behind) it increments the 80-bit random part by
// one; if that would overflow it moves to the next millisecond rather than repeat.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "idforge/clock.h"
#include "idforge/status.h"

namespace idforge {

struct Ulid {
  std::array<uint8_t, 16> bytes{};  // big-endian: 6 bytes of time, 10 of randomness

  int64_t unix_ms() const;
  // 26 upper-case Crockford base32 characters.
  std::string to_string() const;
  // Case-insensitive; rejects I, L, O, U and any other non-alphabet character, a
  // length other than 26, and a first character above '7' (more than 128 bits), with
  // an InvalidArgument naming the character and its position (counted from 1).
  static Result<Ulid> parse(std::string_view text);

  friend auto operator<=>(const Ulid&, const Ulid&) = default;
};

class UlidGenerator {
 public:
  explicit UlidGenerator(Clock* clock = nullptr);  // default_clock() when null

  // Never fails: when the 80-bit part runs out the time runs ahead of the clock.
  Ulid next();
  // Fills `out` with strictly increasing ULIDs, taking the lock once.
  void next_batch(std::span<Ulid> out);

  // The process-wide generator used by the CLI and the server (default clock).
  static UlidGenerator& shared();

 private:
  friend struct UlidGeneratorTestPeer;  // tests force the random part near overflow

  // Advances (last_ms_, last_random_) for one ULID and writes it to `out`.
  void stamp_locked(int64_t now_ms, Ulid& out);

  Clock* clock_;
  std::mutex mu_;
  int64_t last_ms_ = -1;  // -1: nothing issued yet
  std::array<uint8_t, 10> last_random_{};
};

}  // namespace idforge
