// Random bytes for UUIDv4, UUIDv7 and ULID: a ChaCha20-based generator (RFC 8439
// block function) seeded from std::random_device and reseeded every 1 MiB.
//
// random_bytes() and random_u64() are thread-safe: each thread has its own generator,
// so they never lock. A fork()ed child reseeds on its first use (a pthread_atfork
// handler marks the fork), so parent and child never share a stream; a child made by
// a raw clone() syscall, which skips those handlers, is not covered. If no entropy
// source works, the process aborts rather than hand out predictable bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace idforge {

// Fills `out` with cryptographically strong random bytes.
void random_bytes(std::span<uint8_t> out);
// Eight of those bytes as one number.
uint64_t random_u64();

}  // namespace idforge
