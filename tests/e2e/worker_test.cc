// `idforge next --registry` and `idforge worker ...` as a user runs them: the lease
// fills the node fields, its high-water mark carries across runs even when the clock
// was set back in between (faketime), a second process with the same static id is
// refused, and bad input is a usage error. The registry checks shared with the
// coordinator backends (10 holders, SIGKILL, old slot, exhaustion) are in
// tests/integration/local_registry_test.cc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "presets.h"
#include "run_idforge.h"

extern char** environ;

namespace idforge::e2e {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-worker-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string local() const { return "local:" + dir_ + "/slots"; }

  // `faketime -f OFFSET idforge ARGS...`: the binary sees a clock shifted by OFFSET.
  RunResult run_faked(const std::string& offset, const std::vector<std::string>& args) {
    std::vector<std::string> storage = {"faketime", "-f", offset, IDFORGE_BIN};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = dir_ + "/faked.out";
    const std::string err = dir_ + "/faked.err";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, "faketime", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    RunResult result;
    if (rc != 0) {
      result.err = "cannot start faketime";
      return result;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
  }

  std::string dir_;
};

TEST_F(WorkerTest, LeaseFillsTheNodeFields) {
  const Preset& twitter = presets().front();
  RunResult r = run_idforge({"next", "--registry", "static:3/9", "--data-dir", dir_, "-n", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  for (uint64_t id : parse_ids(r.lines())) {
    auto fields = twitter.decode(id);
    EXPECT_EQ(fields["datacenter"], 3u);
    EXPECT_EQ(fields["worker"], 9u);
  }
  // instagram's one node field, shard, takes the slot.
  r = run_idforge(
      {"worker", "acquire", "--registry", local(), "--layout", "instagram", "--hold-ms", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(text_value(r.out, "fields"), "shard=0");
}

TEST_F(WorkerTest, RunsOnOneLocalRegistryNeverRepeatAnId) {
  std::vector<uint64_t> all;
  for (int run = 0; run < 3; ++run) {
    RunResult r = run_idforge({"next", "--registry", local(), "-n", "5000"});
    ASSERT_EQ(r.exit_code, 0) << r.summary();
    std::vector<uint64_t> ids = parse_ids(r.lines());
    ASSERT_EQ(ids.size(), 5000u);
    // Each run starts above the mark the previous one left.
    if (!all.empty()) {
      EXPECT_GT(ids.front(), all.back());
    }
    all.insert(all.end(), ids.begin(), ids.end());
  }
  // The slot was released each time: nobody holds it now.
  RunResult status = run_idforge({"worker", "status", "--registry", local()});
  ASSERT_EQ(status.exit_code, 0) << status.summary();
  EXPECT_NE(status.out.find("0 of 1024 worker slots taken"), std::string::npos) << status.out;
}

// No reuse across restarts (docs/architecture.md, invariant 2): a run, then runs whose
// clock is behind it.
TEST_F(WorkerTest, ClockSetBackBetweenRunsNeverRepeatsAnId) {
  RunResult first = run_idforge({"next", "--registry", local(), "-n", "2000"});
  ASSERT_EQ(first.exit_code, 0) << first.summary();
  const std::vector<uint64_t> before = parse_ids(first.lines());
  ASSERT_FALSE(before.empty());

  // 2 s back: within the default startup wait (3 s), the run waits and issues above.
  RunResult small = run_faked("-2s", {"next", "--registry", local(), "-n", "2000"});
  ASSERT_EQ(small.exit_code, 0) << small.summary();
  const std::vector<uint64_t> after_small = parse_ids(small.lines());
  ASSERT_FALSE(after_small.empty());
  EXPECT_GT(after_small.front(), before.back());

  // 30 s back, allowed to run ahead of its clock: starts above the mark at once.
  RunResult ahead =
      run_faked("-30s", {"next", "--registry", local(), "-n", "2000", "--max-drift-ms", "60000"});
  ASSERT_EQ(ahead.exit_code, 0) << ahead.summary();
  const std::vector<uint64_t> after_ahead = parse_ids(ahead.lines());
  ASSERT_FALSE(after_ahead.empty());
  EXPECT_GT(after_ahead.front(), after_small.back());

  // 30 s back with the default drift budget: refuses, saying why.
  RunResult refused = run_faked("-30s", {"next", "--registry", local(), "-n", "10"});
  EXPECT_EQ(refused.exit_code, 1) << refused.summary();
  EXPECT_TRUE(refused.out.empty());
  EXPECT_TRUE(refused.one_error_line()) << refused.summary();
  EXPECT_NE(refused.err.find("behind the high-water mark"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("of an earlier run"), std::string::npos) << refused.err;

  // Control: without a registry there is no mark, and the set-back run goes below
  // the IDs already issued, which is how a restart repeats IDs.
  RunResult unguarded = run_faked("-30s", {"next", "-n", "1"});
  ASSERT_EQ(unguarded.exit_code, 0) << unguarded.summary();
  EXPECT_LT(parse_ids(unguarded.lines()).front(), before.front());
}

TEST_F(WorkerTest, TheSameStaticIdTwiceOnOneHostIsRefused) {
  std::thread holder([&] {
    RunResult r = run_idforge({"worker", "acquire", "--registry", "static:1/7", "--data-dir", dir_,
                               "--identity", "first", "--hold-ms", "2000"});
    EXPECT_EQ(r.exit_code, 0) << r.summary();
  });
  // Wait until the holder has it.
  bool held = false;
  for (int i = 0; i < 200 && !held; ++i) {
    RunResult s = run_idforge({"worker", "status", "--registry", "static:1/7", "--data-dir", dir_});
    held = s.out.find("first") != std::string::npos;
    if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(held);
  RunResult second = run_idforge({"next", "--registry", "static:1/7", "--data-dir", dir_});
  EXPECT_EQ(second.exit_code, 1) << second.summary();
  EXPECT_TRUE(second.one_error_line()) << second.summary();
  EXPECT_NE(second.err.find("datacenter 1 / worker 7 (slot 39) is already in use by first (pid"),
            std::string::npos)
      << second.err;
  holder.join();
}

TEST_F(WorkerTest, AcquirePrintsTheLeaseAsJson) {
  RunResult r = run_idforge({"worker", "acquire", "--registry", local() + "?ttl_ms=1500",
                             "--identity", "ops:1", "--hold-ms", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  ASSERT_EQ(r.lines().size(), 1u) << r.out;
  auto lease = nlohmann::json::parse(r.out);
  EXPECT_EQ(lease["slot"], 0);
  EXPECT_EQ(lease["datacenter"], 0);
  EXPECT_EQ(lease["worker"], 0);
  EXPECT_EQ(lease["ttl_ms"], 1500);
  EXPECT_EQ(lease["start_delay_ms"], 0);
  EXPECT_EQ(lease["identity"], "ops:1");
  EXPECT_EQ(lease["registry"], "local:" + dir_ + "/slots");

  RunResult s = run_idforge({"worker", "status", "--registry", local(), "--json"});
  ASSERT_EQ(s.exit_code, 0) << s.summary();
  auto status = nlohmann::json::parse(s.out);
  EXPECT_EQ(status["slots"], 1024);
  EXPECT_TRUE(status["taken"].empty());
}

TEST_F(WorkerTest, ReleaseOfALiveLocalSlotSaysItCannotBeBroken) {
  std::thread holder([&] {
    RunResult r = run_idforge(
        {"worker", "acquire", "--registry", local(), "--identity", "live", "--hold-ms", "1500"});
    EXPECT_EQ(r.exit_code, 0) << r.summary();
  });
  RunResult released;
  for (int i = 0; i < 200; ++i) {
    released = run_idforge({"worker", "release", "--registry", local(), "0"});
    if (released.err.find("held by live") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(released.exit_code, 1) << released.summary();
  EXPECT_TRUE(released.one_error_line()) << released.summary();
  EXPECT_NE(released.err.find("cannot be broken"), std::string::npos) << released.err;
  holder.join();
  // Once the holder is gone its slot is simply free.
  RunResult again = run_idforge({"worker", "release", "--registry", local(), "0"});
  EXPECT_EQ(again.exit_code, 0) << again.summary();
}

TEST_F(WorkerTest, BadInputIsAUsageError) {
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--registry", "bogus://x"}), "local:DIR"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"next", "--registry", local() + "?ttl_ms=1"}), "ttl_ms must be"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--registry", local(), "--worker", "3"}),
                             "--worker cannot be combined with --registry"));
  EXPECT_TRUE(
      is_usage_error(run_idforge({"next", "--identity", "x"}), "--identity needs --registry"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--data-dir", dir_}), "--registry"));
  // With --tag, --registry names the fleet floor's registry; --identity means nothing.
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--tag", "t", "--identity", "x"}),
                             "--identity applies to Snowflake IDs"));
  EXPECT_TRUE(is_usage_error(run_idforge({"next", "--registry", "static:40/1", "--data-dir", dir_}),
                             "datacenter 40 does not fit"));
  EXPECT_TRUE(is_usage_error(run_idforge({"worker", "status"}), "--registry"));
  EXPECT_TRUE(is_usage_error(run_idforge({"worker"}), "worker --help"));
  EXPECT_TRUE(is_usage_error(run_idforge({"worker", "release", "--registry", local()}), "SLOT"));
  EXPECT_TRUE(is_usage_error(run_idforge({"worker", "release", "--registry", local(), "1024"}),
                             "slot 1024 is out of range: layout twitter has 1024 slots"));
  EXPECT_TRUE(is_usage_error(
      run_idforge({"worker", "acquire", "--registry", local(), "--hold-ms", "soon"}), "--hold-ms"));
  EXPECT_TRUE(is_usage_error(run_idforge({"worker", "acquire", "--registry", local(), "--layout",
                                          "time:41,a:3,b:3,c:4,sequence:12"}),
                             "3 node fields"));
}

TEST_F(WorkerTest, HelpExplainsTheDefaultAndTheMapping) {
  RunResult next = run_idforge({"next", "--help"});
  ASSERT_EQ(next.exit_code, 0);
  EXPECT_NE(next.out.find("--registry"), std::string::npos);
  EXPECT_NE(next.out.find("unique only"), std::string::npos);
  RunResult worker = run_idforge({"worker", "--help"});
  ASSERT_EQ(worker.exit_code, 0);
  EXPECT_NE(worker.out.find("slot = datacenter << worker bits | worker"), std::string::npos);
}

}  // namespace
}  // namespace idforge::e2e
