// Crash safety: a process issuing IDs is killed with SIGKILL and restarted several
// times; all IDs it ever printed are distinct, and each restart starts above
// everything printed before it. A range is committed before any of its IDs is
// printed, so a kill can only leave gaps, never a repeat.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_idforge.h"

extern char** environ;

namespace idforge::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// Far more than any round reads, so every process is killed mid-stream.
constexpr const char* kCount = "5000000";
// A round that has not printed its lines by then has hung; the whole test stays
// well under 30 s even on a slow machine.
constexpr auto kRoundLimit = std::chrono::seconds(8);

// A running `idforge next --tag` whose stdout the test reads through a pipe.
struct Issuer {
  pid_t pid = -1;
  int out = -1;
  std::string pending;  // bytes after the last complete line
  std::vector<uint64_t> ids;
};

// `data_dir` keeps what the issuers served of the tag (the failover guard's record) in
// the test's own directory, not in the working directory where a rerun would find it.
Issuer spawn_issuer(const std::string& store, const std::string& data_dir) {
  std::vector<std::string> args = {IDFORGE_BIN, "next",    "--tag", "t",          "--count",
                                   kCount,      "--store", store,   "--data-dir", data_dir};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  Issuer issuer;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return issuer;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  // stderr stays the test's own, so a failing run explains itself in the test log.
  const int rc = ::posix_spawn(&issuer.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    issuer.pid = -1;
    ADD_FAILURE() << "posix_spawn " << IDFORGE_BIN << ": " << std::strerror(rc);
    return issuer;
  }
  issuer.out = fds[0];
  return issuer;
}

// Moves the complete lines read so far into ids. A partial last line is what the
// process was writing when it died: no user would take it as an ID.
void take_lines(Issuer& issuer) {
  size_t start = 0;
  for (size_t nl; (nl = issuer.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = issuer.pending.substr(start, nl - start);
    const std::vector<uint64_t> one = parse_ids({line});
    issuer.ids.insert(issuer.ids.end(), one.begin(), one.end());
  }
  issuer.pending.erase(0, start);
}

// Reads until `want` IDs have arrived (or the pipe closes, or the time is up); returns
// false on end of stream.
bool read_ids(Issuer& issuer, size_t want, Clock::time_point deadline) {
  char buf[1 << 16];
  while (issuer.ids.size() < want) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return true;
    pollfd pfd{issuer.out, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
    const ssize_t n = ::read(issuer.out, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    issuer.pending.append(buf, static_cast<size_t>(n));
    take_lines(issuer);
  }
  return true;
}

// SIGKILL, then everything the process wrote before dying: once in the pipe, it was
// printed.
void kill_and_drain(Issuer& issuer) {
  ::kill(issuer.pid, SIGKILL);
  read_ids(issuer, SIZE_MAX, Clock::now() + std::chrono::seconds(5));
  ::close(issuer.out);
  int status = 0;
  while (::waitpid(issuer.pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the issuer should still have been running when killed (status " << status << ")";
}

struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

TEST(SegmentCrashTest, KilledIssuersNeverRepeatAnId) {
  char tmpl[] = "/tmp/idforge-crash-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const TempDir temp{tmpl};
  const std::string& dir = temp.path;
  const std::string store = "sqlite:" + dir + "/segments.db";
  // A small step, so every round crosses several allocations and the dynamic step.
  const std::string data_dir = dir + "/data";
  RunResult made = run_idforge(
      {"tag", "create", "t", "--step", "100", "--store", store, "--data-dir", data_dir});
  ASSERT_EQ(made.exit_code, 0) << made.summary();

  // Kill points from the very first line to deep into the stream. Odd rounds run two
  // issuers at once on the same file, killed one after the other.
  const std::vector<size_t> kill_after = {1, 150, 5'000, 60'000, 250'000, 777, 1'000'000, 42};
  std::vector<uint64_t> all;
  uint64_t previous_max = 0;
  for (size_t round = 0; round < kill_after.size(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto deadline = Clock::now() + kRoundLimit;
    std::vector<Issuer> issuers(round % 2 == 1 ? 2 : 1);
    for (Issuer& issuer : issuers) {
      issuer = spawn_issuer(store, data_dir);
      ASSERT_GT(issuer.pid, 0);
    }
    std::vector<uint64_t> printed;
    for (Issuer& issuer : issuers) {
      EXPECT_TRUE(read_ids(issuer, kill_after[round], deadline)) << "the issuer stopped early";
      EXPECT_GE(issuer.ids.size(), kill_after[round]) << "too slow: the round's time ran out";
      kill_and_drain(issuer);
      EXPECT_TRUE(std::is_sorted(issuer.ids.begin(), issuer.ids.end()))
          << "one process prints increasing IDs";
      printed.insert(printed.end(), issuer.ids.begin(), issuer.ids.end());
    }
    ASSERT_FALSE(printed.empty());
    const auto [lo, hi] = std::minmax_element(printed.begin(), printed.end());
    EXPECT_GT(*lo, previous_max) << "a restart starts above everything printed before";
    previous_max = *hi;
    all.insert(all.end(), printed.begin(), printed.end());
  }

  std::sort(all.begin(), all.end());
  const auto repeat = std::adjacent_find(all.begin(), all.end());
  EXPECT_EQ(repeat, all.end()) << "ID " << (repeat == all.end() ? 0 : *repeat)
                               << " was printed twice";
  RunResult show = run_idforge({"tag", "show", "t", "--json", "--store", store});
  nlohmann::json tag = nlohmann::json::parse(show.out, nullptr, false);
  ASSERT_TRUE(tag.is_object()) << show.summary();
  EXPECT_GE(std::stoull(tag["max_id"].get<std::string>()), all.back())
      << "every printed ID lies in a committed range";
}

}  // namespace
}  // namespace idforge::e2e
