#include "idforge/uuid.h"

#include <algorithm>

#include "quote.h"
#include "random.h"
#include "uuid_impl.h"

namespace idforge {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr std::string_view kUrnPrefix = "urn:uuid:";
constexpr size_t kCanonicalLength = 36;
constexpr size_t kHexLength = 32;

constexpr int64_t kMaxUnixMs = (int64_t{1} << 48) - 1;
constexpr uint64_t kCounterBits = 42;
constexpr uint64_t kCounterMax = (uint64_t{1} << kCounterBits) - 1;
// A new millisecond starts the counter below 2^41, leaving at least 2^41 increments.
constexpr uint64_t kCounterSeedMask = (uint64_t{1} << (kCounterBits - 1)) - 1;
// Bytes 12..15: the 32 bits of rand_b below the counter, random in every UUID.
constexpr size_t kRandomTailOffset = 12;

// 100-ns intervals from the Gregorian epoch (1582-10-15) to the Unix epoch.
constexpr int64_t kGregorianToUnix100ns = 122'192'928'000'000'000;

std::string show_char(char c) { return quote_text(std::string_view(&c, 1)); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_dash_index(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

bool starts_with_ignore_case(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

Status invalid(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("UUID " + quote_text(text) + ": " + why);
}

// Decodes `body` (canonical when `dashed`, else 32 hex digits), which starts at
// `offset` in the whole `text`, so messages give positions in what the user typed.
Result<Uuid> decode_hex(std::string_view text, std::string_view body, size_t offset, bool dashed) {
  Uuid uuid;
  size_t nibble = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    size_t position = offset + i + 1;
    if (dashed && is_dash_index(i)) {
      if (c != '-') {
        return invalid(
            text, "expected '-' at position " + std::to_string(position) + ", got " + show_char(c));
      }
      continue;
    }
    int v = hex_value(c);
    if (v < 0) {
      return invalid(
          text, "invalid hex digit " + show_char(c) + " at position " + std::to_string(position));
    }
    uint8_t& byte = uuid.bytes[nibble / 2];
    byte = static_cast<uint8_t>(nibble % 2 == 0 ? v << 4 : byte | v);
    ++nibble;
  }
  return uuid;
}

uint64_t load_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

int64_t gregorian_100ns_to_unix_ms(uint64_t ticks) {
  int64_t since_unix = static_cast<int64_t>(ticks) - kGregorianToUnix100ns;
  // Floor, not truncation, so a time before 1970 rounds down like any other.
  int64_t ms = since_unix / 10'000;
  if (since_unix % 10'000 < 0) --ms;
  return ms;
}

}  // namespace

std::string Uuid::to_string() const {
  std::string out;
  out.reserve(kCanonicalLength);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHexDigits[bytes[i] >> 4]);
    out.push_back(kHexDigits[bytes[i] & 15]);
  }
  return out;
}

Result<Uuid> Uuid::parse(std::string_view text) {
  if (!text.empty() && text.front() == '{') {
    if (text.back() != '}' || text.size() < 2) {
      return invalid(text, "opening '{' without a closing '}'");
    }
    std::string_view body = text.substr(1, text.size() - 2);
    if (body.size() != kCanonicalLength) {
      return invalid(text, "expected 36 characters 8-4-4-4-12 inside the braces, got " +
                               std::to_string(body.size()));
    }
    return decode_hex(text, body, 1, true);
  }
  if (starts_with_ignore_case(text, kUrnPrefix)) {
    std::string_view body = text.substr(kUrnPrefix.size());
    if (body.size() != kCanonicalLength) {
      return invalid(text, "expected 36 characters 8-4-4-4-12 after 'urn:uuid:', got " +
                               std::to_string(body.size()));
    }
    return decode_hex(text, body, kUrnPrefix.size(), true);
  }
  if (text.size() == kHexLength) return decode_hex(text, text, 0, false);
  if (text.size() != kCanonicalLength) {
    return invalid(text, "expected 36 characters 8-4-4-4-12, got " + std::to_string(text.size()));
  }
  return decode_hex(text, text, 0, true);
}

UuidInfo inspect(const Uuid& uuid) {
  UuidInfo info;
  info.version = uuid.version();
  info.rfc_variant = uuid.rfc_variant();
  // Outside the RFC variant the version nibble means nothing, so neither does a time.
  if (!info.rfc_variant) return info;
  const uint8_t* b = uuid.bytes.data();
  uint64_t low12 = uint64_t{b[6] & 0x0Fu} << 8 | b[7];  // the 12 bits after the version
  switch (info.version) {
    case 7:
      info.unix_ms = static_cast<int64_t>(load_be(b, 6));
      break;
    case 6: {  // time_high(32) time_mid(16) ver time_low(12): most significant first
      uint64_t ticks = load_be(b, 4) << 28 | load_be(b + 4, 2) << 12 | low12;
      info.unix_ms = gregorian_100ns_to_unix_ms(ticks);
      break;
    }
    case 1: {  // time_low(32) time_mid(16) ver time_high(12): least significant first
      uint64_t ticks = low12 << 48 | load_be(b + 4, 2) << 32 | load_be(b, 4);
      info.unix_ms = gregorian_100ns_to_unix_ms(ticks);
      break;
    }
    default:
      break;
  }
  return info;
}

Uuid uuid4() {
  Uuid uuid;
  random_bytes(uuid.bytes);
  uuid.bytes[6] = static_cast<uint8_t>((uuid.bytes[6] & 0x0F) | 0x40);
  uuid.bytes[8] = static_cast<uint8_t>((uuid.bytes[8] & 0x3F) | 0x80);
  return uuid;
}

std::unique_ptr<Uuid7Generator> Uuid7Generator::create(Clock* clock) {
  return std::make_unique<Uuid7GeneratorImpl>(clock);
}

Uuid7Generator::~Uuid7Generator() = default;

Uuid7Generator& Uuid7Generator::shared() {
  // Never destroyed: threads may still draw IDs while static destructors run.
  static Uuid7Generator* generator = new Uuid7GeneratorImpl();
  return *generator;
}

Uuid7GeneratorImpl::Uuid7GeneratorImpl(Clock* clock) : clock_(clock ? clock : &default_clock()) {}

void Uuid7GeneratorImpl::stamp_locked(int64_t now_ms, Uuid& uuid) {
  now_ms = std::clamp<int64_t>(now_ms, 0, kMaxUnixMs);
  if (now_ms > last_ms_) {
    last_ms_ = now_ms;
    counter_ = random_u64() & kCounterSeedMask;
  } else if (counter_ < kCounterMax) {
    // Same ms, or the clock is behind: keep last_ms_ and count on.
    ++counter_;
  } else {
    // 2^41 or more IDs in one ms: borrow the next ms rather than repeat a value. (At
    // the 48-bit limit, in the year 10889, the time field would wrap.)
    ++last_ms_;
    counter_ = random_u64() & kCounterSeedMask;
  }
  uint8_t* b = uuid.bytes.data();
  uint64_t ms = static_cast<uint64_t>(last_ms_);
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  // Counter bits 41..30 go to rand_a, bits 29..0 to the top of rand_b; bytes 12..15
  // keep the random value the caller put there.
  b[6] = static_cast<uint8_t>(0x70 | ((counter_ >> 38) & 0x0F));
  b[7] = static_cast<uint8_t>(counter_ >> 30);
  b[8] = static_cast<uint8_t>(0x80 | ((counter_ >> 24) & 0x3F));
  b[9] = static_cast<uint8_t>(counter_ >> 16);
  b[10] = static_cast<uint8_t>(counter_ >> 8);
  b[11] = static_cast<uint8_t>(counter_);
}

Uuid Uuid7GeneratorImpl::next() {
  // The 32 random low bits are drawn before taking the lock (the generator is
  // per-thread), so the critical section is a clock read and a few integer operations;
  // only a new millisecond draws its counter seed under the lock.
  Uuid uuid;
  random_bytes(std::span<uint8_t>(uuid.bytes).subspan<kRandomTailOffset>());
  MutexLock lock(mu_);
  stamp_locked(clock_->now_ms(), uuid);
  return uuid;
}

void Uuid7GeneratorImpl::next_batch(std::span<Uuid> out) {
  // One random draw per chunk rather than per UUID.
  constexpr size_t kChunk = 256;
  constexpr size_t kTail = 16 - kRandomTailOffset;
  std::array<uint8_t, kChunk * kTail> tails;
  for (size_t start = 0; start < out.size(); start += kChunk) {
    std::span<Uuid> chunk = out.subspan(start, std::min(kChunk, out.size() - start));
    random_bytes(std::span<uint8_t>(tails).first(chunk.size() * kTail));
    for (size_t i = 0; i < chunk.size(); ++i) {
      std::copy_n(tails.begin() + i * kTail, kTail, chunk[i].bytes.begin() + kRandomTailOffset);
    }
  }
  MutexLock lock(mu_);
  int64_t now = clock_->now_ms();
  for (Uuid& uuid : out) stamp_locked(now, uuid);
}

}  // namespace idforge
