// UUIDs (RFC 9562): the value type, text form, inspection, and generators for
// version 4 (random) and version 7 (Unix ms time + monotonic counter + random).
//
// Uuid is a plain value: const methods and parse() may be called from any thread.
// uuid4(), inspect() and every Uuid7Generator method are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "idforge/clock.h"
#include "idforge/status.h"

namespace idforge {

struct Uuid {
  std::array<uint8_t, 16> bytes{};

  int version() const { return bytes[6] >> 4; }
  // RFC 9562 variant field: true for the 10xx variant every generated UUID uses.
  bool rfc_variant() const { return (bytes[8] & 0xC0) == 0x80; }
  // Canonical lower-case 8-4-4-4-12 text.
  std::string to_string() const;
  // Accepts 8-4-4-4-12 in any case, optionally in braces or as "urn:uuid:..." (prefix in
  // any case), and the bare 32-hex-digit form without dashes. No surrounding spaces.
  // Anything else is InvalidArgument saying why; positions in messages count from 1.
  static Result<Uuid> parse(std::string_view text);

  friend auto operator<=>(const Uuid&, const Uuid&) = default;
};

struct UuidInfo {
  int version = 0;
  bool rfc_variant = false;
  // For versions 7, 6 and 1 of the RFC variant: the embedded time in Unix ms (v1 and v6
  // carry 100-ns ticks since 1582-10-15, rounded down to the millisecond here; before
  // 1970 it is negative).
  std::optional<int64_t> unix_ms;
};

// The version, variant and embedded time of any UUID (also ones made elsewhere).
UuidInfo inspect(const Uuid& uuid);

// A version-4 UUID: 122 random bits from random_bytes().
Uuid uuid4();

// Version-7 UUIDs, strictly increasing within the generator (RFC 9562 section 6.2,
// method 1): 48-bit Unix ms, then a 42-bit counter in rand_a and the top of rand_b,
// then 32 random bits. Each new millisecond seeds the counter randomly with its top
// bit clear, so it has room to count; if it ever overflows the generator moves to the
// next millisecond instead of repeating. A clock that steps back keeps the last
// millisecond and counts on. Every method is thread-safe (one mutex per generator).
//
//   auto gen = idforge::Uuid7Generator::create();
//   idforge::Uuid id = gen->next();
//
// An interface: create() returns the implementation, whose state is private to the
// library.
class Uuid7Generator {
 public:
  // `clock` (default_clock() when null) must outlive the generator.
  static std::unique_ptr<Uuid7Generator> create(Clock* clock = nullptr);

  virtual ~Uuid7Generator();
  Uuid7Generator(const Uuid7Generator&) = delete;
  Uuid7Generator& operator=(const Uuid7Generator&) = delete;

  // Never fails: when the counter runs out the time field runs ahead of the clock.
  virtual Uuid next() = 0;
  // Fills `out` with strictly increasing UUIDs, taking the lock once.
  virtual void next_batch(std::span<Uuid> out) = 0;

  // The process-wide generator used by the CLI and the server (default clock).
  static Uuid7Generator& shared();

 protected:
  Uuid7Generator() = default;
};

}  // namespace idforge
