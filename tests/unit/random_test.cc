#include "idforge/random.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/chacha20.h"

namespace idforge {
namespace {

using internal::chacha20_block;
using internal::ChaCha20Rng;

std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// RFC 8439 section 2.3.2: key 00 01 .. 1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00,
// block count 1.
TEST(ChaCha20Block, Rfc8439Section232) {
  std::array<uint32_t, 8> key{};
  for (uint32_t i = 0; i < 8; ++i) {
    uint32_t b = 4 * i;
    key[i] = b | (b + 1) << 8 | (b + 2) << 16 | (b + 3) << 24;  // little-endian words
  }
  const std::array<uint32_t, 3> nonce = {0x09000000, 0x4a000000, 0x00000000};
  std::array<uint8_t, 64> out{};
  chacha20_block(key, 1, nonce, out);
  std::vector<uint8_t> expected = from_hex(
      "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
      "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e");
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), expected);
}

// RFC 8439 appendix A.1, test vector #1: all-zero key and nonce, block 0.
TEST(ChaCha20Block, Rfc8439AppendixA1Vector1) {
  std::array<uint8_t, 64> out{};
  chacha20_block({}, 0, {}, out);
  std::vector<uint8_t> expected = from_hex(
      "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
      "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586");
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), expected);
}

TEST(ChaCha20Block, CounterAndNonceChangeTheBlock) {
  std::array<uint8_t, 64> a{}, b{}, c{};
  chacha20_block({}, 0, {}, a);
  chacha20_block({}, 1, {}, b);
  chacha20_block({}, 0, {0, 0, 1}, c);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
}

// Pins the construction: the first refill under key K runs blocks 0..7 of ChaCha20(K),
// keeps bytes 0..31 as the next key and hands out the rest, starting at byte 32.
TEST(ChaCha20Rng, FirstOutputIsKeystreamAfterTheNextKey) {
  std::array<uint8_t, 32> seed{};
  ChaCha20Rng rng(seed);
  std::array<uint8_t, 64 + 32> out{};
  rng.fill(out);
  std::array<uint8_t, 64> block0{}, block1{};
  chacha20_block({}, 0, {}, block0);
  chacha20_block({}, 1, {}, block1);
  EXPECT_TRUE(std::equal(block0.begin() + 32, block0.end(), out.begin()));
  EXPECT_TRUE(std::equal(block1.begin(), block1.end(), out.begin() + 32));
}

TEST(ChaCha20Rng, ChunkedFillsEqualOneFill) {
  std::array<uint8_t, 32> seed{};
  seed[0] = 42;
  constexpr size_t kTotal = 5 * ChaCha20Rng::kBufferSize + 123;
  std::vector<uint8_t> whole(kTotal);
  ChaCha20Rng(seed).fill(whole);

  ChaCha20Rng rng(seed);
  std::vector<uint8_t> pieces(kTotal);
  const size_t sizes[] = {1, 7, 31, 32, 33, 63, 64, 65, 479, 480, 481, 512, 0, 1000};
  size_t done = 0;
  for (size_t i = 0; done < kTotal; ++i) {
    size_t n = std::min(sizes[i % std::size(sizes)], kTotal - done);
    rng.fill(std::span<uint8_t>(pieces).subspan(done, n));
    done += n;
  }
  EXPECT_EQ(whole, pieces);
}

TEST(ChaCha20Rng, SeedsGiveDifferentStreamsAndStreamNeverRepeatsABlock) {
  std::array<uint8_t, 32> seed_a{}, seed_b{};
  seed_b[31] = 1;
  std::vector<uint8_t> a(4096), b(4096);
  ChaCha20Rng(seed_a).fill(a);
  ChaCha20Rng(seed_b).fill(b);
  EXPECT_NE(a, b);
  // Every 32-byte piece of one long stream is distinct (a key reused would repeat).
  std::vector<std::array<uint8_t, 32>> pieces(a.size() / 32);
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::copy_n(a.begin() + 32 * i, 32, pieces[i].begin());
  }
  std::sort(pieces.begin(), pieces.end());
  EXPECT_EQ(std::adjacent_find(pieces.begin(), pieces.end()), pieces.end());
}

TEST(ChaCha20Rng, ReseedDropsBufferedOutputAndChangesTheStream) {
  std::array<uint8_t, 32> seed{};
  std::array<uint8_t, 32> extra{};
  extra[5] = 9;
  ChaCha20Rng plain(seed);
  ChaCha20Rng reseeded(seed);
  std::array<uint8_t, 16> p1{}, r1{};
  plain.fill(p1);
  reseeded.fill(r1);
  ASSERT_EQ(p1, r1);
  reseeded.reseed(extra);
  std::array<uint8_t, 64> p2{}, r2{};
  plain.fill(p2);
  reseeded.fill(r2);
  EXPECT_NE(p2, r2);
  // Not a shifted copy of the old stream either: nothing buffered survives the reseed.
  std::vector<uint8_t> old_stream(2048);
  ChaCha20Rng(seed).fill(old_stream);
  EXPECT_EQ(std::search(old_stream.begin(), old_stream.end(), r2.begin(), r2.begin() + 16),
            old_stream.end());
}

TEST(RandomBytes, EmptyRequestDoesNotTouchTheGenerator) {
  std::thread([] {
    std::vector<uint8_t> none;
    random_bytes(none);
    EXPECT_EQ(internal::thread_reseed_count(), 0u);
  }).join();
}

TEST(RandomBytes, SuccessiveCallsDiffer) {
  std::array<uint8_t, 32> a{}, b{};
  random_bytes(a);
  random_bytes(b);
  EXPECT_NE(a, b);
  EXPECT_NE(a, (std::array<uint8_t, 32>{}));
  EXPECT_NE(random_u64(), random_u64());
}

// Crude statistics that a broken generator (stuck bytes, a bad copy offset, zeros from
// a wiped buffer) fails and a good one passes with overwhelming probability.
TEST(RandomBytes, OneMebibyteLooksUniform) {
  std::vector<uint8_t> data(1 << 20);
  random_bytes(data);
  std::array<uint64_t, 256> histogram{};
  uint64_t ones = 0;
  for (uint8_t b : data) {
    ++histogram[b];
    ones += static_cast<uint64_t>(std::popcount(b));
  }
  const double bits = 8.0 * static_cast<double>(data.size());
  // Mean bits/2, standard deviation sqrt(bits)/2 = 1448: allow 7 of them.
  EXPECT_NEAR(static_cast<double>(ones), bits / 2, 7 * 1448.0);
  const double expected = static_cast<double>(data.size()) / 256;
  double chi2 = 0;
  for (uint64_t count : histogram) {
    double d = static_cast<double>(count) - expected;
    chi2 += d * d / expected;
  }
  // 255 degrees of freedom: mean 255, sd 22.6; 420 is past p = 1e-9.
  EXPECT_LT(chi2, 420.0);
}

TEST(RandomBytes, ThreadsGetDifferentStreams) {
  std::array<uint8_t, 32> a{}, b{};
  std::thread ta([&] { random_bytes(a); });
  std::thread tb([&] { random_bytes(b); });
  ta.join();
  tb.join();
  EXPECT_NE(a, b);
}

TEST(RandomBytes, ReseedsEveryMebibyte) {
  // A new thread starts with an unseeded generator, so the counts are exact.
  std::thread([] {
    EXPECT_EQ(internal::thread_reseed_count(), 0u);
    std::array<uint8_t, 1> one{};
    random_bytes(one);
    EXPECT_EQ(internal::thread_reseed_count(), 1u);
    uint64_t total = one.size();
    std::vector<uint8_t> chunk(4096);
    while (total + chunk.size() <= internal::kReseedIntervalBytes) {
      random_bytes(chunk);
      total += chunk.size();
    }
    std::vector<uint8_t> rest(internal::kReseedIntervalBytes - total);  // to exactly 1 MiB
    random_bytes(rest);
    EXPECT_EQ(internal::thread_reseed_count(), 1u);
    random_bytes(one);
    EXPECT_EQ(internal::thread_reseed_count(), 2u);
  }).join();
}

TEST(RandomBytes, OneLargeRequestStillReseedsAtEachMebibyte) {
  std::thread([] {
    std::array<uint8_t, 1> one{};
    random_bytes(one);
    std::vector<uint8_t> big(2 * internal::kReseedIntervalBytes);
    random_bytes(big);
    // Reseeds after 1 MiB and 2 MiB of output, inside the one call.
    EXPECT_EQ(internal::thread_reseed_count(), 3u);
  }).join();
}

// Without the fork handler, parent and child would continue the same buffered stream
// and produce the same bytes.
TEST(RandomBytes, ForkedChildReseedsAndDiverges) {
  // On a fresh thread, so no reseed interval boundary falls inside the test.
  std::thread([] {
    std::array<uint8_t, 8> warm{};
    random_bytes(warm);  // this thread's generator now has state worth copying
    ASSERT_EQ(internal::thread_reseed_count(), 1u);

    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      std::array<uint8_t, 33> msg{};
      random_bytes(std::span<uint8_t>(msg).first(32));
      msg[32] = static_cast<uint8_t>(internal::thread_reseed_count());
      ssize_t written = write(fds[1], msg.data(), msg.size());
      _exit(written == static_cast<ssize_t>(msg.size()) ? 0 : 1);
    }
    close(fds[1]);
    std::array<uint8_t, 32> parent{};
    random_bytes(parent);
    std::array<uint8_t, 33> child{};
    size_t got = 0;
    while (got < child.size()) {
      ssize_t n = read(fds[0], child.data() + got, child.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFEXITED(wstatus));
    EXPECT_EQ(WEXITSTATUS(wstatus), 0);
    ASSERT_EQ(got, child.size());
    EXPECT_EQ(child[32], 2) << "the child should reseed once, on its first draw";
    EXPECT_FALSE(std::equal(parent.begin(), parent.end(), child.begin()));
    EXPECT_EQ(internal::thread_reseed_count(), 1u) << "the parent must not reseed";
  }).join();
}

}  // namespace
}  // namespace idforge
