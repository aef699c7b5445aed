// The fleet records of `local:` (coord/local_records.h): an append-only log shared by
// every process on the directory. Two record objects on one directory stand for two
// processes; what one appends or compacts the other reads. A line a crash cut short is
// never counted and is written over; a log from before (one file per record) is carried
// in; a line idforge did not write is an error that names the file.
#include "coord/local_records.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace idforge::coord {
namespace {

namespace fs = std::filesystem;

class LocalRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-records-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<FleetRecords> open() { return make_local_records(dir_, "local:" + dir_); }
  std::string log_path() const { return dir_ + "/fleet-records"; }
  static bool set(FleetRecords& r, const std::string& name, const FleetRecord& expected,
                  const std::string& value) {
    FleetRecord now;
    Result<bool> done = r.replace(name, expected, value, &now);
    EXPECT_TRUE(done.ok()) << done.status().to_string();
    return done.ok() && *done;
  }

  std::string dir_;
};

TEST_F(LocalRecordsTest, WhatOneProcessWritesTheOtherReadsAndCannotOverwriteBlindly) {
  auto a = open();
  auto b = open();
  ASSERT_TRUE(set(*a, "floor.t", {}, "v1"));
  EXPECT_EQ(b->read("floor.t").value(), (FleetRecord{true, "v1"}));
  // b still thinks the record is absent: its compare-and-set fails and tells it the value.
  FleetRecord now;
  EXPECT_FALSE(b->replace("floor.t", {}, "other", &now).value());
  EXPECT_EQ(now, (FleetRecord{true, "v1"}));
  ASSERT_TRUE(set(*b, "floor.t", {true, "v1"}, "v2 with spaces"));
  EXPECT_EQ(a->read("floor.t").value(), (FleetRecord{true, "v2 with spaces"}));
  EXPECT_EQ(a->read("floor.u").value(), FleetRecord{});
}

TEST_F(LocalRecordsTest, OneLineAChangeAndCompactedWhenOldLinesDominate) {
  auto a = open();
  auto b = open();
  FleetRecord last;
  const std::string pad(200, 'x');
  for (int i = 0; i < 2000; ++i) {
    const std::string value = std::to_string(i) + " " + pad;
    ASSERT_TRUE(set(i % 2 == 0 ? *a : *b, "floor.t", last, value)) << i;
    last = {true, value};
  }
  // 2,000 changes of one record: without compaction the log would hold ~420 KB.
  struct stat st {};
  ASSERT_EQ(::stat(log_path().c_str(), &st), 0);
  EXPECT_LT(st.st_size, 200 * 1024);
  EXPECT_EQ(open()->read("floor.t").value(), last);
  EXPECT_EQ(a->read("floor.t").value(), last);  // a read past b's compactions
}

TEST_F(LocalRecordsTest, ALineACrashCutShortIsNotCountedAndIsWrittenOver) {
  auto a = open();
  ASSERT_TRUE(set(*a, "floor.t", {}, "v1"));
  {
    std::ofstream out(log_path(), std::ios::app | std::ios::binary);
    out << "floor.t v2-torn";  // no newline: the append never finished
  }
  auto b = open();
  EXPECT_EQ(b->read("floor.t").value(), (FleetRecord{true, "v1"}));
  ASSERT_TRUE(set(*b, "floor.t", {true, "v1"}, "v3"));
  EXPECT_EQ(open()->read("floor.t").value(), (FleetRecord{true, "v3"}));
  std::ifstream in(log_path());
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find("torn"), std::string::npos) << all;
}

TEST_F(LocalRecordsTest, RecordsOfTheOldOneFilePerRecordLayoutAreCarriedIn) {
  fs::create_directories(dir_ + "/fleet");
  std::ofstream(dir_ + "/fleet/floor.t") << "fleet-floor 1 500\n";
  auto a = open();
  EXPECT_EQ(a->read("floor.t").value(), (FleetRecord{true, "fleet-floor 1 500"}));
  ASSERT_TRUE(set(*a, "floor.u", {}, "x"));
  fs::remove_all(dir_ + "/fleet");
  EXPECT_EQ(open()->read("floor.t").value(), (FleetRecord{true, "fleet-floor 1 500"}));
}

TEST_F(LocalRecordsTest, ALineIdforgeDidNotWriteIsAnErrorNamingTheFile) {
  std::ofstream(log_path()) << "idforge fleet records 1\nfloor.t ok\nnot-a-record\n";
  Result<FleetRecord> got = open()->read("floor.t");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(log_path()), std::string::npos) << got.status().to_string();
  std::ofstream(log_path()) << "something else\n";
  EXPECT_FALSE(open()->read("floor.t").ok());
  FleetRecord now;
  EXPECT_FALSE(open()->replace("floor.t", {}, "two\nlines", &now).ok());
}

}  // namespace
}  // namespace idforge::coord
