#include "core/random.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <thread>
#include <vector>

namespace idforge {
namespace {

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

// Draws of every size across the generator's 512-byte refills: a wrong offset or a
// refill that reused its key would repeat a piece of the stream.
TEST(RandomBytes, OddSizedDrawsAcrossRefillsNeverRepeatAPiece) {
  std::vector<uint8_t> stream(64 * 1024);
  const size_t sizes[] = {1, 7, 31, 32, 33, 63, 64, 65, 479, 480, 481, 512, 0, 1000};
  size_t done = 0;
  for (size_t i = 0; done < stream.size(); ++i) {
    size_t n = std::min(sizes[i % std::size(sizes)], stream.size() - done);
    random_bytes(std::span<uint8_t>(stream).subspan(done, n));
    done += n;
  }
  std::vector<std::array<uint8_t, 16>> pieces(stream.size() / 16);
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::copy_n(stream.begin() + static_cast<ptrdiff_t>(16 * i), 16, pieces[i].begin());
    EXPECT_NE(pieces[i], (std::array<uint8_t, 16>{})) << "a wiped piece was handed out";
  }
  std::sort(pieces.begin(), pieces.end());
  EXPECT_EQ(std::adjacent_find(pieces.begin(), pieces.end()), pieces.end());
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
