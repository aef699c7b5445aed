// RepeatLimiter (src/log/repeats.h) on a test clock: the first failure at once, the
// repeats counted once per window, the count and the recovery once when the run ends.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "log/repeats.h"

namespace idforge::log {
namespace {

// An event's name and its key=value fields, from a text line (values here need no
// unquoting beyond the quotes).
struct Line {
  std::string level;
  std::string event;
  std::map<std::string, std::string> fields;
};

Line parse(const std::string& text) {
  Line line;
  size_t pos = text.find(' ') + 1;  // after the time
  size_t end = text.find(' ', pos);
  line.level = text.substr(pos, end - pos);
  pos = end + 1;
  end = text.find(' ', pos);
  line.event = text.substr(pos, end == std::string::npos ? end : end - pos);
  while (end != std::string::npos) {
    pos = end + 1;
    const size_t eq = text.find('=', pos);
    std::string value;
    if (text[eq + 1] == '"') {
      const size_t close = text.find('"', eq + 2);
      value = text.substr(eq + 2, close - eq - 2);
      end = text.find(' ', close);
    } else {
      end = text.find(' ', eq);
      value = text.substr(eq + 1, end == std::string::npos ? end : end - eq - 1);
    }
    line.fields[text.substr(pos, eq - pos)] = value;
  }
  return line;
}

class RepeatLimiterTest : public ::testing::Test {
 protected:
  RepeatLimiterTest() {
    set_writer_for_testing([this](Level, std::string_view line) { lines_.emplace_back(line); });
  }
  ~RepeatLimiterTest() override { set_writer_for_testing(nullptr); }

  // The lines written since the last call, parsed.
  std::vector<Line> taken() {
    std::vector<Line> out;
    for (const std::string& l : lines_) out.push_back(parse(l));
    lines_.clear();
    return out;
  }

  void fail(RepeatLimiter& limiter, int attempt) {
    limiter.fail(Level::kWarn, "store.down",
                 {{"store", "redis://127.0.0.1:6379"}, {"attempt", attempt}, {"error", "refused"}});
  }

  int64_t now_ms_ = 1'000'000;
  RepeatLimiter limiter_{60'000, [this] { return now_ms_; }};
  std::vector<std::string> lines_;
};

TEST_F(RepeatLimiterTest, TheFirstFailureAtOnceThenOneCountPerWindow) {
  fail(limiter_, 1);
  std::vector<Line> lines = taken();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, "warn");
  EXPECT_EQ(lines[0].event, "store.down");
  EXPECT_EQ(lines[0].fields["attempt"], "1");
  EXPECT_EQ(lines[0].fields.count("repeats"), 0u);
  EXPECT_TRUE(limiter_.failing());

  // Every 2 s for just under a minute: counted, not written.
  for (int i = 2; i <= 30; ++i) {
    now_ms_ += 2000;  // the last one at +58 s
    fail(limiter_, i);
  }
  EXPECT_TRUE(taken().empty());
  EXPECT_EQ(limiter_.failures(), 30u);

  // The first failure a window after the last line writes the count, with its fields.
  now_ms_ += 2000;  // +60 s
  fail(limiter_, 31);
  lines = taken();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].event, "store.down");
  EXPECT_EQ(lines[0].fields["repeats"], "30");
  EXPECT_EQ(lines[0].fields["window_s"], "60");
  EXPECT_EQ(lines[0].fields["attempt"], "31");
  EXPECT_EQ(lines[0].fields["store"], "redis://127.0.0.1:6379");

  // The next window starts there.
  now_ms_ += 59'999;
  fail(limiter_, 32);
  EXPECT_TRUE(taken().empty());
  now_ms_ += 1;
  fail(limiter_, 33);
  lines = taken();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].fields["repeats"], "2");
  EXPECT_EQ(lines[0].fields["window_s"], "60");
}

TEST_F(RepeatLimiterTest, RecoveryWritesTheCountLeftThenOneLine) {
  fail(limiter_, 1);
  for (int i = 2; i <= 5; ++i) {
    now_ms_ += 1000;
    fail(limiter_, i);
  }
  taken();
  now_ms_ += 2500;  // 6.5 s after the first failure
  EXPECT_TRUE(limiter_.recover(Level::kInfo, "store.up", {{"store", "redis://127.0.0.1:6379"}}));
  std::vector<Line> lines = taken();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].event, "store.down");
  EXPECT_EQ(lines[0].fields["repeats"], "4");
  EXPECT_EQ(lines[0].fields["window_s"], "7");  // 6.5 s, rounded up
  EXPECT_EQ(lines[0].fields["attempt"], "5");
  EXPECT_EQ(lines[1].level, "info");
  EXPECT_EQ(lines[1].event, "store.up");
  EXPECT_EQ(lines[1].fields["failures"], "5");
  EXPECT_EQ(lines[1].fields["down_ms"], "6500");
  EXPECT_EQ(lines[1].fields["store"], "redis://127.0.0.1:6379");
  EXPECT_FALSE(limiter_.failing());

  // Recovered already: nothing more, and the next failure starts a new run.
  EXPECT_FALSE(limiter_.recover(Level::kInfo, "store.up", {}));
  EXPECT_TRUE(taken().empty());
  now_ms_ += 1000;
  fail(limiter_, 6);
  lines = taken();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].fields.count("repeats"), 0u);
}

TEST_F(RepeatLimiterTest, ASingleFailureRecoversWithNoCountLine) {
  fail(limiter_, 1);
  now_ms_ += 300;
  EXPECT_TRUE(limiter_.recover(Level::kInfo, "store.up", {}));
  std::vector<Line> lines = taken();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].event, "store.down");
  EXPECT_EQ(lines[1].event, "store.up");
  EXPECT_EQ(lines[1].fields["failures"], "1");
  EXPECT_EQ(lines[1].fields["down_ms"], "300");
}

TEST_F(RepeatLimiterTest, NoRecoveryWithoutAFailureAndFlushWritesOnlyTheCount) {
  EXPECT_FALSE(limiter_.recover(Level::kInfo, "store.up", {}));
  limiter_.flush();
  EXPECT_TRUE(taken().empty());

  fail(limiter_, 1);
  now_ms_ += 100;
  fail(limiter_, 2);
  now_ms_ += 100;
  fail(limiter_, 3);
  taken();
  limiter_.flush();
  std::vector<Line> lines = taken();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].fields["repeats"], "2");
  EXPECT_EQ(lines[0].fields["window_s"], "1");
  EXPECT_FALSE(limiter_.failing());
  limiter_.flush();
  EXPECT_TRUE(taken().empty());
}

TEST_F(RepeatLimiterTest, ManyThreadsFailingAtOnceWriteOneLine) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 500; ++i) fail(limiter_, t * 1000 + i);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(taken().size(), 1u);
  EXPECT_EQ(limiter_.failures(), 4000u);
  limiter_.recover(Level::kInfo, "store.up", {});
  std::vector<Line> lines = taken();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].fields["repeats"], "3999");
  EXPECT_EQ(lines[1].fields["failures"], "4000");
}

}  // namespace
}  // namespace idforge::log
