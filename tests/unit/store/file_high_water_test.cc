// FileHighWaterStore: the mark survives a new store object (a restart), is replaced
// atomically, and a damaged file is an error rather than a silent 0.
#include "coord/local/file_high_water.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/snowflake_mark.h"
#include "idforge/snowflake.h"

namespace idforge::coord {
namespace {

class FileHighWaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-hw-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/snowflake.mark";
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  void write_raw(const std::string& text) { std::ofstream(path_) << text; }

  std::string dir_;
  std::string path_;
};

TEST_F(FileHighWaterTest, MissingFileIsZero) {
  FileHighWaterStore store(path_);
  EXPECT_EQ(store.load().value(), 0);
}

TEST_F(FileHighWaterTest, StoredMarkSurvivesANewStoreObject) {
  {
    FileHighWaterStore store(path_);
    ASSERT_TRUE(store.store(1'700'000'001'234).ok());
    ASSERT_TRUE(store.store(1'700'000'005'678).ok());
  }
  FileHighWaterStore reopened(path_);
  EXPECT_EQ(reopened.load().value(), 1'700'000'005'678);
  // No temporary file is left behind.
  EXPECT_NE(access((path_ + ".tmp").c_str(), F_OK), 0);
}

TEST_F(FileHighWaterTest, GarbageEmptyOrOverlongFileIsAnError) {
  for (const char* bad : {"", "\n", "12ab\n", "-5\n", "+5\n", "99999999999999999999\n", "1 2\n",
                          // 19 digits that do not fit int64, and the first one past its maximum
                          "9999999999999999999\n", "9223372036854775808\n",
                          // trailing garbage, also after a good first line
                          "1700000000000x\n", "1700000000000\ngarbage\n",
                          "1700000000000\nlayout \n", "1700000000000\nlayout a\nmore\n"}) {
    SCOPED_TRACE(bad);
    write_raw(bad);
    FileHighWaterStore store(path_);
    auto r = store.load();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
    EXPECT_NE(r.status().message().find(path_), std::string::npos);
  }
}

TEST_F(FileHighWaterTest, TheLargestInt64IsStillAMark) {
  write_raw("9223372036854775807\n");
  EXPECT_EQ(FileHighWaterStore(path_).load().value(), 9223372036854775807);
}

TEST_F(FileHighWaterTest, TheLayoutIsKeptAndABareNumberHasNone) {
  const std::string layout = mark_layout_key(Layout::twitter());
  {
    FileHighWaterStore store(path_);
    ASSERT_TRUE(store.store_mark({1'700'000'001'234, layout}).ok());
  }
  HighWaterMark mark = FileHighWaterStore(path_).load_mark().value();
  EXPECT_EQ(mark.unix_ms, 1'700'000'001'234);
  EXPECT_EQ(mark.layout, layout);
  // A data dir of an older version.
  write_raw("1700000005678\n");
  mark = FileHighWaterStore(path_).load_mark().value();
  EXPECT_EQ(mark.unix_ms, 1'700'000'005'678);
  EXPECT_EQ(mark.layout, "");
  EXPECT_FALSE(FileHighWaterStore(path_).store_mark({1, "two words"}).ok());
}

// fsync that fails on regular files or on directories only.
int fail_file_sync(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  errno = EIO;
  return -1;
}
int fail_dir_sync(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) return 0;
  errno = EIO;
  return -1;
}

TEST_F(FileHighWaterTest, AFailedFsyncIsAnError) {
  {
    FileHighWaterStore store(path_, &fail_file_sync);
    Status st = store.store(1'700'000'000'000);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kIoError);
    EXPECT_NE(st.message().find("fsync"), std::string::npos) << st.message();
    // The old mark (none) is still what the file says.
    EXPECT_EQ(FileHighWaterStore(path_).load().value(), 0);
  }
  FileHighWaterStore store(path_, &fail_dir_sync);
  Status st = store.store(1'700'000'000'000);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("fsync directory " + dir_), std::string::npos) << st.message();
}

TEST_F(FileHighWaterTest, UnwritableDirectoryIsAnErrorNamingThePath) {
  FileHighWaterStore store(dir_ + "/no/such/dir/mark");
  Status st = store.store(1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("no/such/dir"), std::string::npos);
  EXPECT_FALSE(store.store(-1).ok());
}

// The whole restart story on a real file and the real clock: a second generator on
// the same file starts above everything the first one issued.
TEST_F(FileHighWaterTest, GeneratorRestartOnTheSameFileStartsAboveTheOldIds) {
  uint64_t last = 0;
  {
    FileHighWaterStore store(path_);
    SnowflakeOptions o;
    o.high_water = &store;
    o.clock = nullptr;
    auto gen = SnowflakeGenerator::create(o).value();
    std::vector<uint64_t> ids(20000);
    ASSERT_TRUE(gen->next_batch(ids).ok());
    last = ids.back();
  }
  FileHighWaterStore store(path_);
  int64_t mark = store.load().value();
  SnowflakeOptions o;
  o.high_water = &store;
  auto gen = SnowflakeGenerator::create(o).value();
  auto first = gen->next();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_GT(*first, last);
  EXPECT_GT(Layout::twitter().decode(*first).value().unix_ms, mark);
}

}  // namespace
}  // namespace idforge::coord
