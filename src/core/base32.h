// Internal: Crockford base32 (https://www.crockford.com/base32.html) as ULIDs use it,
// plus 64-bit helpers for short human-facing codes. Not part of the public API.
//
// Decoding is strict on purpose: case-insensitive, but I, L, O and U (which Crockford's
// decoder maps to 1, 1, 0 and nothing) are rejected, as are hyphens, so one text has
// one meaning. All functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace idforge::base32 {

inline constexpr std::string_view kCrockfordAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// The value (0..31) of an alphabet character in either case, or -1.
int crockford_value(char c);

// True for I, L, O and U in either case: letters left out of the alphabet because they
// look like 1, 1, 0 and V.
bool is_excluded_letter(char c);

// 128 bits (big-endian) as 26 characters: two zero bits of padding at the front, so
// the first character is always '0'..'7' and text order equals numeric order.
std::array<char, 26> encode_128(std::span<const uint8_t, 16> bytes);

// The inverse of encode_128. nullopt if any character is not in the alphabet or the
// first one is above '7'; callers that want to say why check the text themselves.
std::optional<std::array<uint8_t, 16>> decode_128(std::span<const char, 26> text);

// `value` in upper-case Crockford base32 with no leading zeros ("0" for 0), padded
// with '0' on the left to at least `min_width` characters.
std::string encode_u64(uint64_t value, size_t min_width = 1);

// The inverse of encode_u64; nullopt for an empty text, a character outside the
// alphabet, or a value above 2^64 - 1.
std::optional<uint64_t> decode_u64(std::string_view text);

}  // namespace idforge::base32
