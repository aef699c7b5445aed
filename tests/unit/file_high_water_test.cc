// FileHighWaterStore: the mark survives a new store object (a restart), is replaced
// atomically, and a damaged file is an error rather than a silent 0.
#include "coord/file_high_water.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

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
  for (const char* bad : {"", "\n", "12ab\n", "-5\n", "99999999999999999999\n", "1 2\n"}) {
    SCOPED_TRACE(bad);
    write_raw(bad);
    FileHighWaterStore store(path_);
    auto r = store.load();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
    EXPECT_NE(r.status().message().find(path_), std::string::npos);
  }
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
