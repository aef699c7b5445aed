// ULIDs: 48-bit Unix ms + 80 random bits, 26 characters of Crockford base32.
//
// Ulid is a plain value: const methods and parse() may be called from any thread.
// UlidGenerator is thread-safe (one mutex per generator) and monotonic: within one
// millisecond (or while the clock is behind) it increments the 80-bit random part by
// one; if that would overflow it moves to the next millisecond rather than repeat.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
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

// Monotonic ULIDs (see the top of this file).
//
//   auto gen = idforge::UlidGenerator::create();
//   idforge::Ulid id = gen->next();
//
// An interface: create() returns the implementation, whose state is private to the
// library.
class UlidGenerator {
 public:
  // `clock` (default_clock() when null) must outlive the generator.
  static std::unique_ptr<UlidGenerator> create(Clock* clock = nullptr);

  virtual ~UlidGenerator();
  UlidGenerator(const UlidGenerator&) = delete;
  UlidGenerator& operator=(const UlidGenerator&) = delete;

  // Never fails: when the 80-bit part runs out the time runs ahead of the clock.
  virtual Ulid next() = 0;
  // Fills `out` with strictly increasing ULIDs, taking the lock once.
  virtual void next_batch(std::span<Ulid> out) = 0;

  // The process-wide generator used by the CLI and the server (default clock).
  static UlidGenerator& shared();

 protected:
  UlidGenerator() = default;
};

}  // namespace idforge
