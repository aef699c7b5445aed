#include "base32.h"

namespace idforge::base32 {
namespace {

// Indexed by byte: the 5-bit value of an alphabet character, or -1. Built at compile
// time from the alphabet so the two can never disagree.
constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (size_t i = 0; i < kCrockfordAlphabet.size(); ++i) {
    char upper = kCrockfordAlphabet[i];
    table[static_cast<uint8_t>(upper)] = static_cast<int8_t>(i);
    if (upper >= 'A' && upper <= 'Z') {
      table[static_cast<uint8_t>(upper - 'A' + 'a')] = static_cast<int8_t>(i);
    }
  }
  return table;
}

constexpr std::array<int8_t, 256> kDecodeTable = make_decode_table();

}  // namespace

int crockford_value(char c) { return kDecodeTable[static_cast<uint8_t>(c)]; }

bool is_excluded_letter(char c) {
  switch (c) {
    case 'I':
    case 'i':
    case 'L':
    case 'l':
    case 'O':
    case 'o':
    case 'U':
    case 'u':
      return true;
    default:
      return false;
  }
}

std::array<char, 26> encode_128(std::span<const uint8_t, 16> bytes) {
  uint64_t hi = 0;
  uint64_t lo = 0;
  for (size_t i = 0; i < 8; ++i) hi = hi << 8 | bytes[i];
  for (size_t i = 8; i < 16; ++i) lo = lo << 8 | bytes[i];
  // Character k (from the right) holds bits 5k..5k+4 of the 130-bit padded value.
  std::array<char, 26> out{};
  for (int k = 0; k < 26; ++k) {
    int shift = 5 * k;
    uint64_t v;
    if (shift >= 64) {
      v = hi >> (shift - 64);
    } else if (shift > 59) {  // straddles the two words
      v = (lo >> shift) | (hi << (64 - shift));
    } else {
      v = lo >> shift;
    }
    out[25 - k] = kCrockfordAlphabet[v & 31];
  }
  return out;
}

std::optional<std::array<uint8_t, 16>> decode_128(std::span<const char, 26> text) {
  uint64_t hi = 0;
  uint64_t lo = 0;
  for (size_t i = 0; i < 26; ++i) {
    int v = crockford_value(text[i]);
    if (v < 0) return std::nullopt;
    if (i == 0 && v > 7) return std::nullopt;  // would need more than 128 bits
    hi = hi << 5 | lo >> 59;
    lo = lo << 5 | static_cast<uint64_t>(v);
  }
  std::array<uint8_t, 16> out{};
  for (size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    out[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  return out;
}

std::string encode_u64(uint64_t value, size_t min_width) {
  char digits[13];  // ceil(64 / 5)
  size_t n = 0;
  do {
    digits[n++] = kCrockfordAlphabet[value & 31];
    value >>= 5;
  } while (value != 0);
  std::string out;
  if (min_width > n) out.assign(min_width - n, '0');
  while (n > 0) out.push_back(digits[--n]);
  return out;
}

std::optional<uint64_t> decode_u64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    int v = crockford_value(c);
    if (v < 0) return std::nullopt;
    if (value > (UINT64_MAX >> 5)) return std::nullopt;  // shifting would drop bits
    value = value << 5 | static_cast<uint64_t>(v);
  }
  return value;
}

}  // namespace idforge::base32
