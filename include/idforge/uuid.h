// UUIDs (RFC 9562): the value type, text form, inspection, and generators for
// version 4 (random) and version 7 (Unix ms time + monotonic counter + random).
//
// Uuid is a plain value. Uuid7Generator and uuid4() are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
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
  // Accepts 8-4-4-4-12 in any case, optionally in braces or as "urn:uuid:...", and the
  // 32-hex-digit form without dashes. Anything else is InvalidArgument saying why.
  static Result<Uuid> parse(std::string_view text);

  friend auto operator<=>(const Uuid&, const Uuid&) = default;
};

struct UuidInfo {
  int version = 0;
  bool rfc_variant = false;
  // For versions 7, 6 and 1: the embedded time in Unix ms.
  std::optional<int64_t> unix_ms;
};

UuidInfo inspect(const Uuid& uuid);

// A version-4 UUID: 122 random bits.
Uuid uuid4();

// Version-7 UUIDs, strictly increasing within the generator (RFC 9562 section 6.2,
// method 1): 48-bit Unix ms, then a 42-bit counter in rand_a and the top of rand_b,
// then 32 random bits. Each new millisecond seeds the counter randomly with its top
// bit clear, so it has room to count; if it ever overflows the generator moves to the
// next millisecond instead of repeating. A clock that steps back keeps the last
// millisecond and counts on.
class Uuid7Generator {
 public:
  explicit Uuid7Generator(Clock* clock = nullptr);  // default_clock() when null

  Uuid next();
  // Fills `out` with strictly increasing UUIDs.
  void next_batch(std::span<Uuid> out);

  // The process-wide generator used by the CLI and the server.
  static Uuid7Generator& shared();

 private:
  Clock* clock_;
  std::mutex mu_;
  int64_t last_ms_ = 0;
  uint64_t counter_ = 0;  // 42 bits
};

}  // namespace idforge
