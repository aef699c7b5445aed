#include "idforge/ulid.h"

#include <algorithm>

#include "base32.h"
#include "quote.h"
#include "random.h"
#include "ulid_impl.h"

namespace idforge {
namespace {

constexpr size_t kUlidLength = 26;
constexpr int64_t kMaxUnixMs = (int64_t{1} << 48) - 1;

Status invalid(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("ULID " + quote_text(text) + ": " + why);
}

}  // namespace

int64_t Ulid::unix_ms() const {
  int64_t ms = 0;
  for (size_t i = 0; i < 6; ++i) ms = ms << 8 | bytes[i];
  return ms;
}

std::string Ulid::to_string() const {
  std::array<char, 26> text = base32::encode_128(bytes);
  return std::string(text.data(), text.size());
}

Result<Ulid> Ulid::parse(std::string_view text) {
  if (text.size() != kUlidLength) {
    return invalid(text,
                   "expected 26 Crockford base32 characters, got " + std::to_string(text.size()));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (base32::crockford_value(c) >= 0) continue;
    std::string where = " at position " + std::to_string(i + 1) + " of 26";
    if (base32::is_excluded_letter(c)) {
      return invalid(text, "invalid character " + quote_text(std::string_view(&c, 1)) + where +
                               " (Crockford base32 has no I, L, O or U)");
    }
    return invalid(text, "invalid character " + quote_text(std::string_view(&c, 1)) + where +
                             " (not in Crockford base32 0-9 A-Z without I L O U)");
  }
  if (base32::crockford_value(text[0]) > 7) {
    return invalid(text, "first character " + quote_text(text.substr(0, 1)) +
                             " is above '7', so the value does not fit in 128 bits");
  }
  std::optional<std::array<uint8_t, 16>> bytes =
      base32::decode_128(std::span<const char, 26>(text.data(), 26));
  if (!bytes)
    return Status::Internal("ULID " + quote_text(text) + ": checked text failed to decode");
  return Ulid{*bytes};
}

std::unique_ptr<UlidGenerator> UlidGenerator::create(Clock* clock) {
  return std::make_unique<UlidGeneratorImpl>(clock);
}

UlidGenerator::~UlidGenerator() = default;

UlidGenerator& UlidGenerator::shared() {
  // Never destroyed: threads may still draw IDs while static destructors run.
  static UlidGenerator* generator = new UlidGeneratorImpl();
  return *generator;
}

UlidGeneratorImpl::UlidGeneratorImpl(Clock* clock) : clock_(clock ? clock : &default_clock()) {}

void UlidGeneratorImpl::stamp_locked(int64_t now_ms, Ulid& out) {
  now_ms = std::clamp<int64_t>(now_ms, 0, kMaxUnixMs);
  if (now_ms > last_ms_) {
    last_ms_ = now_ms;
    // Fresh randomness only on a new ms (and it is per-thread, so holding the lock
    // here costs little): within a ms the spec's monotonic mode just adds one.
    random_bytes(last_random_);
  } else {
    // Same ms, or the clock is behind: add one to the 80-bit big-endian value.
    bool carry = true;
    for (size_t i = last_random_.size(); carry && i-- > 0;) {
      carry = ++last_random_[i] == 0;
    }
    if (carry) {
      // All 2^80 values of this ms are used up (it wrapped to zero): borrow the next
      // ms rather than fail or repeat. (At the 48-bit limit, in the year 10889, the
      // time would wrap.)
      ++last_ms_;
      random_bytes(last_random_);
    }
  }
  uint64_t ms = static_cast<uint64_t>(last_ms_);
  for (int i = 0; i < 6; ++i) out.bytes[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  std::copy(last_random_.begin(), last_random_.end(), out.bytes.begin() + 6);
}

Ulid UlidGeneratorImpl::next() {
  Ulid ulid;
  MutexLock lock(mu_);
  stamp_locked(clock_->now_ms(), ulid);
  return ulid;
}

void UlidGeneratorImpl::next_batch(std::span<Ulid> out) {
  MutexLock lock(mu_);
  int64_t now = clock_->now_ms();
  for (Ulid& ulid : out) stamp_locked(now, ulid);
}

}  // namespace idforge
