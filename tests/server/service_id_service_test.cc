// IdService against a real SQLite store and a real local registry in a temporary
// directory: what both front ends rely on, including many tags (what bounds /metrics and
// /v1/status past segment.tag_detail_limit) and why the node's served marks need no fsync
// of their own when the fleet floor is kept on this host.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "log/log.h"
#include "server/http/http_json.h"
#include "server/service/id_service.h"
#include "store/store_set.h"

namespace idforge::server {
namespace {

namespace fs = std::filesystem;

class IdServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idforge-service-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(dir_);
  }

  ServiceConfig config() const {
    ServiceConfig c;
    c.data_dir = dir_ + "/data";
    c.identity = "test:serve";
    return c;  // SQLite in the data dir, local registry in the data dir
  }

  IdService& start(ServiceConfig c) {
    Result<std::unique_ptr<IdService>> s = IdService::start(std::move(c));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    service_ = std::move(s).value();
    return *service_;
  }

  std::string dir_;
  std::unique_ptr<IdService> service_;
};

TEST_F(IdServiceTest, ParsesCountsWithTheLimitInTheMessage) {
  EXPECT_EQ(parse_request_count("", 10).value(), 1u);
  EXPECT_EQ(parse_request_count("10", 10).value(), 10u);
  for (const char* bad : {"0", "-1", "abc", "1.5", "+3", " 3", "3 "}) {
    Result<uint64_t> r = parse_request_count(bad, 10);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  for (const char* huge : {"11", "99999999999999999999999"}) {
    Result<uint64_t> r = parse_request_count(huge, 10);
    ASSERT_FALSE(r.ok()) << huge;
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange) << huge;
    EXPECT_NE(r.status().message().find("10"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(parse_id("910499571847892992").value(), 910499571847892992u);
  EXPECT_EQ(parse_id("18446744073709551615").value(), UINT64_MAX);
  for (const char* bad : {"", "-1", "18446744073709551616", "12a", "0x10"}) {
    EXPECT_FALSE(parse_id(bad).ok()) << bad;
  }
}

TEST_F(IdServiceTest, IssuesDistinctIncreasingSnowflakesOnItsLease) {
  IdService& s = start(config());
  std::vector<uint64_t> ids(5000);
  ASSERT_TRUE(s.snowflake(ids).ok());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  const ServiceStatus st = s.status();
  ASSERT_TRUE(st.has_lease);
  const DecodedId d = s.config().layout.decode(ids[0]).value();
  EXPECT_EQ(d.get("worker"), st.lease.worker);
  EXPECT_EQ(d.get("datacenter"), st.lease.datacenter);
  EXPECT_EQ(s.metrics().ids(IdKind::kSnowflake), 5000u);
  std::string why;
  EXPECT_TRUE(s.ready(&why)) << why;
}

TEST_F(IdServiceTest, TwoServicesOnOneDataDirGetDifferentWorkers) {
  IdService& a = start(config());
  ServiceConfig c = config();
  c.identity = "other:serve";
  Result<std::unique_ptr<IdService>> b = IdService::start(c);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NE(a.status().lease.slot, (*b)->status().lease.slot);
}

TEST_F(IdServiceTest, SegmentIdsComeFromTheStoreOffTheIoPathFirstThenWithoutWaiting) {
  IdService& s = start(config());
  TagSpec spec;
  spec.name = "order";
  spec.start = 1000;
  spec.step = 100;
  ASSERT_TRUE(s.create_tag(spec).ok());

  std::vector<uint64_t> ids(10);
  // First use: nothing is buffered, so the non-blocking call takes nothing.
  Result<size_t> first = s.try_segment("order", ids);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0u);
  ASSERT_TRUE(s.segment("order", ids).ok());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], 1000 + i);
  // Now the buffer holds the rest of the segment.
  Result<size_t> more = s.try_segment("order", ids);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(*more, 10u);
  EXPECT_EQ(ids[0], 1010u);
  EXPECT_EQ(s.metrics().ids(IdKind::kSegment), 20u);
  ASSERT_EQ(s.status().tags.size(), 1u);
  EXPECT_EQ(s.status().tags[0].tag, "order");
}

TEST_F(IdServiceTest, UnknownAndMalformedTagsAreClearErrors) {
  IdService& s = start(config());
  std::vector<uint64_t> ids(1);
  Status unknown = s.segment("nope", ids);
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  Result<size_t> bad = s.try_segment("bad tag!", ids);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.segment("", ids).code(), StatusCode::kInvalidArgument);
  // An unknown tag is an answer: the store is up.
  std::string why;
  EXPECT_TRUE(s.ready(&why)) << why;
}

TEST_F(IdServiceTest, SerialsFollowTheTagsTemplate) {
  IdService& s = start(config());
  TagSpec pay;
  pay.name = "pay";
  pay.serial_template = "PAY{seq:06}";
  ASSERT_TRUE(s.create_tag(pay).ok());
  EXPECT_EQ(s.serial("pay").value(), "PAY000001");
  EXPECT_EQ(s.serial("pay").value(), "PAY000002");
  TagSpec plain;
  plain.name = "plain";
  ASSERT_TRUE(s.create_tag(plain).ok());
  Result<std::string> none = s.serial("plain");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no serial template"), std::string::npos);
}

TEST_F(IdServiceTest, AdminChangesTakeEffect) {
  IdService& s = start(config());
  TagSpec spec;
  spec.name = "order";
  spec.step = 10;
  ASSERT_TRUE(s.create_tag(spec).ok());
  EXPECT_EQ(s.create_tag(spec).status().code(), StatusCode::kAlreadyExists);
  std::vector<uint64_t> ids(3);
  ASSERT_TRUE(s.segment("order", ids).ok());
  Result<TagInfo> changed = s.set_step("order", 500);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_EQ(changed->step, 500u);
  // The next IDs come from a new segment of the new step, above everything issued.
  std::vector<uint64_t> after(600);
  ASSERT_TRUE(s.segment("order", after).ok());
  EXPECT_GT(after[0], ids.back());
  EXPECT_TRUE(std::is_sorted(after.begin(), after.end()));
  Result<std::vector<TagInfo>> tags = s.list_tags();
  ASSERT_TRUE(tags.ok());
  ASSERT_EQ(tags->size(), 1u);
  EXPECT_EQ(s.set_step("nope", 5).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.set_step("order", 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(IdServiceTest, ResolvesLayoutsByPresetOrSpec) {
  IdService& s = start(config());
  EXPECT_EQ(s.layout_named("").value().name(), s.config().layout.name());
  EXPECT_EQ(s.layout_named("sonyflake").value().name(), "sonyflake");
  Result<Layout> bad = s.layout_named("nonsense");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("twitter"), std::string::npos) << "lists the presets";
}

TEST_F(IdServiceTest, StopReleasesTheLeaseSoTheSlotIsFreeAgain) {
  IdService& s = start(config());
  const uint64_t slot = s.status().lease.slot;
  ASSERT_TRUE(s.stop().ok());
  ASSERT_TRUE(s.stop().ok()) << "idempotent";
  std::vector<uint64_t> ids(1);
  EXPECT_FALSE(s.snowflake(ids).ok()) << "a stopped service issues nothing";
  ServiceConfig c = config();
  c.identity = "next:serve";
  Result<std::unique_ptr<IdService>> next = IdService::start(c);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ((*next)->status().lease.slot, slot) << "the lowest free slot is the released one";
  // It starts above everything the first holder issued.
  std::vector<uint64_t> later(1);
  ASSERT_TRUE((*next)->snowflake(later).ok());
}

TEST_F(IdServiceTest, MetricsRenderEveryFamily) {
  IdService& s = start(config());
  std::vector<uint64_t> ids(7);
  ASSERT_TRUE(s.snowflake(ids).ok());
  s.metrics().record_request(0, Route::kSnowflake, 200, 0.0002);
  s.metrics().record_request(1, Route::kSegment, 404, 0.003);
  const std::string text = s.metrics().render(s);
  for (const char* want :
       {"idforge_requests_total{protocol=\"http\",route=\"snowflake\",status=\"200\"} 1",
        "idforge_requests_total{protocol=\"resp\",route=\"segment\",status=\"404\"} 1",
        "idforge_request_duration_seconds_bucket{protocol=\"http\",le=\"0.00025\"} 1",
        "idforge_request_duration_seconds_bucket{protocol=\"http\",le=\"0.0001\"} 0",
        "idforge_request_duration_seconds_count{protocol=\"http\"} 1",
        "idforge_ids_issued_total{kind=\"snowflake\"} 7", "idforge_clock_rollback_events_total 0",
        "idforge_lease_held 1", "idforge_segment_store_up 1", "idforge_layout_time_left_seconds"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(s.metrics().total_requests(), 2u);
}

TEST_F(IdServiceTest, RefusesBadSettingsByName) {
  ServiceConfig c = config();
  c.max_count = 0;
  Result<std::unique_ptr<IdService>> s = IdService::start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("max_count"), std::string::npos);
  c = config();
  c.store_urls = {"mongodb://x"};
  s = IdService::start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  c = config();
  c.serial_zone = "Mars/Olympus";
  EXPECT_FALSE(IdService::start(c).ok());
}

// The admin route's create (POST /v1/admin/tags) starts a tag above what the fleet took
// of it, as `idforge tag create` does: a tag recreated at 1 on a store that lost it.
TEST_F(IdServiceTest, ATagRecreatedBelowTheFleetFloorStartsAboveIt) {
  ServiceConfig first = config();
  first.store_urls = {"sqlite:" + dir_ + "/lost.db"};
  IdService& a = start(first);
  TagSpec spec;
  spec.name = "order";
  spec.step = 100;
  ASSERT_TRUE(a.create_tag(spec).ok());
  std::vector<uint64_t> ids(250);
  ASSERT_TRUE(a.segment("order", ids).ok());
  ASSERT_TRUE(a.stop().ok());
  service_.reset();

  // The same data directory (and so its local: registry's fleet floor), a new store.
  ServiceConfig second = config();
  second.store_urls = {"sqlite:" + dir_ + "/fresh.db"};
  IdService& b = start(second);
  Result<TagInfo> made = b.create_tag(spec);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_GE(made->max_id, 250u) << "the recreated tag starts at or below what was served";
  std::vector<uint64_t> next(1);
  ASSERT_TRUE(b.segment("order", next).ok());
  EXPECT_GT(next[0], ids.back());
}

// Where the fleet floor is not, the server says so at start: static: worker ids have no
// place the fleet shares, and segment.fleet_floor = false turns it off.
TEST_F(IdServiceTest, StartSaysWhenThereIsNoFleetFloor) {
  std::vector<std::string> lines;
  log::set_writer_for_testing(
      [&lines](log::Level, std::string_view line) { lines.emplace_back(line); });
  auto logged = [&lines](std::string_view event) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(event) != std::string::npos; });
  };
  ServiceConfig with_static = config();
  with_static.registry_url = "static:1/2";
  start(with_static);
  EXPECT_TRUE(logged("segment.fleet_floor_none"));
  service_.reset();
  lines.clear();
  ServiceConfig off = config();
  off.fleet_floor = false;
  start(off);
  EXPECT_TRUE(logged("segment.fleet_floor_off"));
  EXPECT_FALSE(logged("segment.fleet_floor_none"));
  service_.reset();
  lines.clear();
  start(config());  // local: in the data dir
  EXPECT_TRUE(logged("segment.fleet_floor registry=local:"));
  service_.reset();
  log::set_writer_for_testing(nullptr);
}

// A tag of step 100 starting at 1, made through the service.
void create_tag(IdService& s, const std::string& tag) {
  TagSpec spec;
  spec.name = tag;
  spec.step = 100;
  Result<TagInfo> made = s.create_tag(spec);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
}

TEST_F(IdServiceTest, PastTheTagDetailLimitMetricsSumAndStatusListsTheFirstTags) {
  ServiceConfig c = config();
  c.tag_detail_limit = 2;
  IdService& s = start(c);
  std::vector<uint64_t> ids(5);
  for (const char* tag : {"a", "b", "c"}) {
    create_tag(s, tag);
    ASSERT_TRUE(s.segment(tag, ids).ok());
  }
  const std::string text = s.metrics().render(s);
  EXPECT_EQ(text.find("tag=\""), std::string::npos) << text;
  for (const char* want :
       {"idforge_segment_tags 3\n", "idforge_segment_fetches_total 3\n",
        "idforge_segment_buffer_fill{buffer=\"current\"} 0.95\n",
        "idforge_segment_buffer_fill{buffer=\"next\"} 0\n", "idforge_segment_waits_total 3\n"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  auto status = nlohmann::json::parse(status_json(s));
  EXPECT_EQ(status["segments"]["tags"].size(), 2u);
  EXPECT_EQ(status["segments"]["tags"][0]["tag"], "a");
  EXPECT_EQ(status["segments"]["tags_total"], 3);
  EXPECT_EQ(status["served"].size(), 2u);
  EXPECT_EQ(status["served_total"], 3);
  auto one = nlohmann::json::parse(status_json(s, "c"));
  ASSERT_EQ(one["segments"]["tags"].size(), 1u);
  EXPECT_EQ(one["segments"]["tags"][0]["tag"], "c");
  ASSERT_EQ(one["served"].size(), 1u);
  EXPECT_EQ(one["served"][0]["highest"], "100");

  // At or under the limit: one series a tag, as before.
  service_.reset();
  IdService& wide = start(config());
  for (const char* tag : {"a", "b", "c"}) ASSERT_TRUE(wide.segment(tag, ids).ok());
  const std::string per_tag = wide.metrics().render(wide);
  EXPECT_NE(per_tag.find("idforge_segment_fetches_total{tag=\"c\"} 1"), std::string::npos)
      << per_tag;
  EXPECT_EQ(nlohmann::json::parse(status_json(wide))["segments"]["tags"].size(), 3u);
}

// With the local: registry the served marks are written without an fsync. A machine
// crash can take their last lines; the fleet floor's record, fsynced before each range
// was used, still holds the node back from a store that went back.
TEST_F(IdServiceTest, AServedMarkACrashLostIsCoveredByTheFloorOnThisHost) {
  ServiceConfig c = config();
  const std::string db = dir_ + "/segments.db";
  c.store_urls = {"sqlite:" + db};
  create_tag(start(c), "order");
  service_.reset();
  fs::copy_file(db, dir_ + "/backup.db");  // closed: the whole database is in the file

  IdService& a = start(c);
  std::vector<uint64_t> ids(250);
  ASSERT_TRUE(a.segment("order", ids).ok());
  ASSERT_TRUE(a.stop().ok());
  service_.reset();

  // The crash: the marks file keeps no mark line (its identity lines were fsynced).
  const std::string marks = store::served_marks_path(c.data_dir);
  std::ifstream in(marks);
  std::stringstream kept;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("mark ")) kept << line << "\n";
  }
  in.close();
  std::ofstream(marks, std::ios::trunc) << kept.str();
  // The store went back with its identity: the backup from before the IDs restored.
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(db + suffix);
  fs::copy_file(dir_ + "/backup.db", db, fs::copy_options::overwrite_existing);

  IdService& b = start(c);
  std::vector<uint64_t> next(10);
  ASSERT_TRUE(b.segment("order", next).ok());
  EXPECT_GT(next.front(), ids.back()) << "a number served before the crash came again";
}

}  // namespace
}  // namespace idforge::server
