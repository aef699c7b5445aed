// Random bytes for UUIDv4, UUIDv7 and ULID: a ChaCha20-based generator (RFC 8439,
// libsodium's crypto_stream_chacha20_ietf, with fast key erasure) keyed from the OS
// (libsodium's randombytes_buf: getrandom()) and reseeded every 1 MiB.
//
// random_bytes() and random_u64() are thread-safe: each thread has its own generator,
// so they never lock. A fork()ed child reseeds on its first use (a pthread_atfork
// handler marks the fork), so parent and child never share a stream; a child made by
// a raw clone() syscall, which skips those handlers, is not covered. If no entropy
// source works, the process aborts rather than hand out predictable bytes.
//
// Internal: included as "core/random.h" ("random.h" in core). Users get these bytes
// through the UUIDs and ULIDs (uuid.h, ulid.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace idforge {

// Fills `out` with cryptographically strong random bytes.
void random_bytes(std::span<uint8_t> out);
// Eight of those bytes as one number.
uint64_t random_u64();

namespace internal {

// random_bytes() takes fresh entropy from the OS after this many bytes.
inline constexpr uint64_t kReseedIntervalBytes = uint64_t{1} << 20;

// For tests: how many times the calling thread's generator has been (re)seeded: 0
// before first use, then one more at first use, after every kReseedIntervalBytes and
// after a fork.
uint64_t thread_reseed_count();

}  // namespace internal

}  // namespace idforge
