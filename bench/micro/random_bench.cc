// Random bytes for UUIDv4/v7 and ULID (src/core/random.h), which since tracker issue 14
// come from libsodium's ChaCha20 (crypto_stream_chacha20_ietf) behind a per-thread
// fast-key-erasure buffer. Our own ChaCha20 block function, replaced then, measured
// 916-1077 ns per 512 bytes and 40-53 ns per uuid4 against libsodium's 226-238 ns and
// 14-20 ns in the same runs (CPU time, 2-vCPU VM, 2026-11-25; docs/benchmarks.md).
//
//   BM_Keystream512/libsodium  one refill: 8 ChaCha20 blocks (512 bytes) under a new key
//   BM_RandomBytes/N           random_bytes() of N bytes, end to end
//   BM_Uuid4Via/randombytes_buf  uuid4 from one randombytes_buf call each (getrandom()
//                              per call): the simpler design, and why we buffer
//   BM_Uuid4                   (uuid_bench.cc) the library's uuid4()
#include <benchmark/benchmark.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/random.h"
#include "idforge/uuid.h"

namespace {

void sodium_ready() {
  static const bool ready = [] {
    if (sodium_init() < 0) std::abort();
    return true;
  }();
  (void)ready;
}

void BM_Keystream512_Libsodium(benchmark::State& state) {
  sodium_ready();
  std::array<uint8_t, crypto_stream_chacha20_ietf_KEYBYTES> key{1, 2, 3, 4, 5, 6, 7, 8};
  const std::array<uint8_t, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
  alignas(64) std::array<uint8_t, 512> out{};
  for (auto _ : state) {
    crypto_stream_chacha20_ietf(out.data(), out.size(), nonce.data(), key.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    ++key[0];
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 512);
}
BENCHMARK(BM_Keystream512_Libsodium)->Name("BM_Keystream512/libsodium");

void BM_RandomBytes(benchmark::State& state) {
  std::vector<uint8_t> out(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    idforge::random_bytes(out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_RandomBytes)->Arg(16)->Arg(4096);

void BM_Uuid4ViaRandombytesBuf(benchmark::State& state) {
  sodium_ready();
  for (auto _ : state) {
    idforge::Uuid u;
    randombytes_buf(u.bytes.data(), u.bytes.size());
    u.bytes[6] = static_cast<uint8_t>((u.bytes[6] & 0x0F) | 0x40);
    u.bytes[8] = static_cast<uint8_t>((u.bytes[8] & 0x3F) | 0x80);
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Uuid4ViaRandombytesBuf)->Name("BM_Uuid4Via/randombytes_buf");

}  // namespace
