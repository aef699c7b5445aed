// Random bytes for UUIDv4, UUIDv7 and ULID: a ChaCha20-based generator (RFC 8439
// block function) seeded from std::random_device and reseeded every 1 MiB.
//
// random_bytes() is thread-safe: each thread has its own generator. A fork()ed child
// reseeds on its first use, so parent and child never share a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace idforge {

// Fills `out` with cryptographically strong random bytes.
void random_bytes(std::span<uint8_t> out);
uint64_t random_u64();

}  // namespace idforge
