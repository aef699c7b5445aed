// The fleet records of `local:` (coord/local/local_records.h): an append-only log shared by
// every process on the directory. Two record objects on one directory stand for two
// processes; what one appends or compacts the other reads. A line a crash cut short is
// never counted and is written over; a log from before (one file per record) is carried
// in; a line idforge did not write is an error that names the file. Changes made at
// once, by threads of two processes, each count once (their fsyncs are shared).
#include "coord/local/local_records.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

// Threads of two processes change one shared record by compare-and-set and one record
// each of their own; the fsync comes after the flock is let go and is shared, and no
// change is lost or counted twice. Runs under ThreadSanitizer too.
TEST(LocalRecordsConcurrency, ChangesMadeAtOnceByTwoProcessesEachCountOnce) {
  char tmpl[] = "/tmp/idforge-records-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto a = make_local_records(dir, "local:" + dir);
  auto b = make_local_records(dir, "local:" + dir);
  constexpr int kThreads = 3;
  constexpr int kChanges = 40;
  std::vector<int> won(2 * kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2 * kThreads; ++t) {
    threads.emplace_back([&, t] {
      FleetRecords& r = t % 2 == 0 ? *a : *b;
      const std::string own = "floor.own" + std::to_string(t);
      FleetRecord own_last;
      for (int i = 0; i < kChanges; ++i) {
        FleetRecord now;
        Result<bool> done = r.replace(own, own_last, std::to_string(i), &now);
        if (!done.ok() || !*done) {
          ADD_FAILURE() << own << " change " << i << " was not made";
          return;
        }
        own_last = {true, std::to_string(i)};
        Result<FleetRecord> shared = r.read("floor.shared");
        if (!shared.ok()) {
          ADD_FAILURE() << shared.status().to_string();
          return;
        }
        const int at = shared->exists ? std::stoi(shared->value) : 0;
        Result<bool> bumped = r.replace("floor.shared", *shared, std::to_string(at + 1), &now);
        if (!bumped.ok()) {
          ADD_FAILURE() << bumped.status().to_string();
          return;
        }
        if (*bumped) ++won[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  int total = 0;
  for (int w : won) total += w;
  EXPECT_GT(total, 0);
  auto fresh = make_local_records(dir, "local:" + dir);
  EXPECT_EQ(fresh->read("floor.shared").value(), (FleetRecord{true, std::to_string(total)}));
  for (int t = 0; t < 2 * kThreads; ++t) {
    EXPECT_EQ(fresh->read("floor.own" + std::to_string(t)).value(),
              (FleetRecord{true, std::to_string(kChanges - 1)}));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace idforge::coord
