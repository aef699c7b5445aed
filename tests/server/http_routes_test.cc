// The HTTP routes of docs/api.md answered by a real IdService: IDs of every kind,
// counts and formats, decode and compose, status, metrics, health and the admin API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/http_test_support.h"

namespace idforge::server::http_test {
namespace {

using ::testing::HasSubstr;

class HttpRoutesTest : public HttpServiceTest {};

TEST_F(HttpRoutesTest, SnowflakeAnswersIncreasingIdsAsStrings) {
  Response r = one_get("/v1/snowflake?count=5");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("connection"), "");  // keep-alive is the default: nothing to say
  EXPECT_EQ(r.json()["kind"], "snowflake");
  std::vector<uint64_t> ids = ids_of(r);
  ASSERT_EQ(ids.size(), 5u);
  expect_increasing(ids);
  // Issued by this service: datacenter 0, worker 1 (static:0/1) in the twitter layout.
  EXPECT_EQ((ids[0] >> 12) & 0x3ff, 1u);

  std::vector<uint64_t> more = ids_of(one_get("/v1/snowflake"));
  ASSERT_EQ(more.size(), 1u);  // count defaults to 1
  EXPECT_GT(more[0], ids.back());
  EXPECT_EQ(service_->metrics().requests(0, Route::kSnowflake, 200), 2u);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSnowflake), 6u);
}

TEST_F(HttpRoutesTest, TextFormatIsOneIdPerLine) {
  Response r = one_get("/v1/snowflake?count=3&format=text");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8");
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < r.body.size();) {
    size_t nl = r.body.find('\n', pos);
    ASSERT_NE(nl, std::string::npos);
    lines.push_back(r.body.substr(pos, nl - pos));
    pos = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_LT(std::stoull(lines[0]), std::stoull(lines[1]));
  EXPECT_LT(std::stoull(lines[1]), std::stoull(lines[2]));
  EXPECT_EQ(one_get("/v1/snowflake?format=xml").error_code(), "invalid_argument");
}

TEST_F(HttpRoutesTest, BadCountsAre400) {
  for (std::string_view count :
       {"0", "-1", "abc", "1.5", "%2B5", "99999999999999999999999", "10001", "5&count=6"}) {
    Response r = one_get("/v1/snowflake?count=" + std::string(count));
    EXPECT_EQ(r.status, 400) << count;
    EXPECT_THAT(r.error_code(), ::testing::AnyOf("invalid_argument", "out_of_range")) << count;
    EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("count")) << count;
  }
  EXPECT_EQ(one_get("/v1/snowflake?count=10001").error_code(), "out_of_range");
  EXPECT_EQ(one_get("/v1/uuid7?count=10000").json()["ids"].size(), 10000u);  // the limit itself
  EXPECT_EQ(ids_of(one_get("/v1/snowflake?count=")).size(), 1u);             // empty: the default
  EXPECT_EQ(one_get("/v1/ulid?count=0").status, 400);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSnowflake), 1u);
}

TEST_F(HttpRoutesTest, Uuid7AndUlidAreValidAndIncreasing) {
  Response r = one_get("/v1/uuid7?count=4");
  EXPECT_EQ(r.json()["kind"], "uuid7");
  std::vector<Uuid> uuids;
  const Json body = r.json();
  for (const Json& text : body["ids"]) {
    Result<Uuid> u = Uuid::parse(text.get<std::string>());
    ASSERT_TRUE(u.ok()) << text;
    EXPECT_EQ(u->version(), 7);
    EXPECT_EQ(u->to_string(), text.get<std::string>());
    uuids.push_back(*u);
  }
  ASSERT_EQ(uuids.size(), 4u);
  for (size_t i = 1; i < uuids.size(); ++i) EXPECT_LT(uuids[i - 1], uuids[i]);

  r = one_get("/v1/ulid?count=3&format=text");
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(r.body.size(), 3u * 27);
  std::vector<Ulid> ulids;
  for (size_t i = 0; i < 3; ++i) {
    Result<Ulid> u = Ulid::parse(r.body.substr(i * 27, 26));
    ASSERT_TRUE(u.ok()) << r.body;
    ulids.push_back(*u);
  }
  EXPECT_LT(ulids[0], ulids[1]);
  EXPECT_LT(ulids[1], ulids[2]);
}

TEST_F(HttpRoutesTest, SegmentWaitsOnTheStoreOnceThenAnswersInline) {
  create_tag("order");
  std::unique_ptr<Session> session = factory_();
  // First use of the tag: its buffer must be filled from the store, off the I/O thread.
  Driven first = drive(*session, get("/v1/segment/order?count=3"));
  EXPECT_EQ(first.blocking, 1);
  ASSERT_EQ(first.responses.size(), 1u);
  EXPECT_EQ(first.responses[0].status, 200);
  EXPECT_EQ(first.responses[0].json()["kind"], "segment");
  EXPECT_EQ(first.responses[0].json()["tag"], "order");
  EXPECT_EQ(ids_of(first.responses[0]), (std::vector<uint64_t>{1001, 1002, 1003}));
  // Now the buffer holds the rest of the segment: no waiting, and the path is decoded.
  Driven second = drive(*session, get("/v1/segment/or%64er?count=2"));
  EXPECT_EQ(second.blocking, 0);
  ASSERT_EQ(second.responses.size(), 1u);
  EXPECT_EQ(ids_of(second.responses[0]), (std::vector<uint64_t>{1004, 1005}));
  // More than the buffer holds: the filled part is kept, the rest comes from the store.
  Driven big = drive(*session, get("/v1/segment/order?count=250"));
  ASSERT_EQ(big.responses.size(), 1u);
  std::vector<uint64_t> ids = ids_of(big.responses[0]);
  ASSERT_EQ(ids.size(), 250u);
  EXPECT_EQ(ids.front(), 1006u);
  expect_increasing(ids);
  EXPECT_EQ(service_->metrics().requests(0, Route::kSegment, 200), 3u);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 255u);
}

TEST_F(HttpRoutesTest, SegmentErrors) {
  Response unknown = one_get("/v1/segment/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.error_code(), "not_found");
  Response bad_name = one_get("/v1/segment/bad%20name");
  EXPECT_EQ(bad_name.status, 400);
  EXPECT_EQ(bad_name.error_code(), "invalid_argument");
  EXPECT_EQ(one_get("/v1/segment/").status, 404);  // no tag: no route
  create_tag("order");
  EXPECT_EQ(one_get("/v1/segment/order?count=0").status, 400);
  EXPECT_EQ(service_->metrics().requests(0, Route::kSegment, 404), 1u);
}

TEST_F(HttpRoutesTest, LeafRoutesAnswerBareNumbers) {
  create_tag("order");
  Response seg = one_get("/api/segment/get/order");
  EXPECT_EQ(seg.status, 200);
  EXPECT_EQ(seg.header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(seg.body, "1001");
  EXPECT_EQ(one_get("/api/segment/get/order").body, "1002");
  Response snow = one_get("/api/snowflake/get/any-key");
  EXPECT_EQ(snow.status, 200);
  ASSERT_FALSE(snow.body.empty());
  EXPECT_EQ(snow.body.find_first_not_of("0123456789"), std::string::npos) << snow.body;
  EXPECT_GT(std::stoull(snow.body), 0u);
  EXPECT_EQ(one_get("/api/segment/get/missing").status, 404);
}

TEST_F(HttpRoutesTest, SerialNumbersFollowTheTemplate) {
  create_tag("pay", "PAY{seq:08}");
  create_tag("plain");
  Response r = one_get("/v1/serial/pay?count=2");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["kind"], "serial");
  EXPECT_EQ(r.json()["tag"], "pay");
  EXPECT_EQ(r.json()["ids"], Json::array({"PAY00001001", "PAY00001002"}));
  EXPECT_EQ(one_get("/v1/serial/pay?format=text").body, "PAY00001003\n");
  EXPECT_EQ(one_get("/v1/serial/plain").status, 400);  // no template
  EXPECT_EQ(one_get("/v1/serial/missing").status, 404);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSerial), 3u);
}

// the published worked example (tests/data/published_snowflake.txt): datacenter 17, worker 25.
TEST_F(HttpRoutesTest, DecodeTheTwitterExample) {
  Response r = one_get("/v1/decode/910499571847892992");
  ASSERT_EQ(r.status, 200);
  Json j = r.json();
  EXPECT_EQ(j["id"], "910499571847892992");
  EXPECT_EQ(j["layout"], "twitter");
  EXPECT_EQ(j["spec"], "time:41,datacenter:5,worker:5,sequence:12");
  EXPECT_EQ(j["unix_ms"], 1505914988849);
  EXPECT_EQ(j["time"], "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(j["datacenter"], 17);
  EXPECT_EQ(j["worker"], 25);
  EXPECT_EQ(j["sequence"], 0);
  ASSERT_EQ(j["fields"].size(), 4u);
  EXPECT_EQ(j["fields"][0], Json({{"name", "time"},
                                  {"role", "time"},
                                  {"bits", 41},
                                  {"shift", 22},
                                  {"value", "217080014192"}}));
  EXPECT_EQ(j["fields"][1]["value"], "17");
  EXPECT_EQ(j["fields"][3]["role"], "sequence");
  EXPECT_EQ(j["unused_bits"], 1);
  EXPECT_EQ(j["binary"], "0000110010100010101111101000100101011100001000111001000000000000");
  EXPECT_THAT(j["diagram"].get<std::string>(), HasSubstr("datacenter (5)"));
  // The flat keys come first, in the order of `idforge parse --json`.
  EXPECT_THAT(r.body, StartsWith(R"({"id":"910499571847892992","layout":"twitter","spec":)"));
}

TEST_F(HttpRoutesTest, DecodeErrorsAndOtherLayouts) {
  EXPECT_EQ(one_get("/v1/decode/abc").error_code(), "invalid_argument");
  EXPECT_EQ(one_get("/v1/decode/-1").status, 400);
  EXPECT_EQ(one_get("/v1/decode/18446744073709551616").status, 400);
  EXPECT_EQ(one_get("/v1/decode/9223372036854775808").status, 400);  // sign bit set in twitter
  EXPECT_EQ(one_get("/v1/decode/1?layout=nope").error_code(), "invalid_argument");
  Response sony = one_get("/v1/decode/910499571847892992?layout=sonyflake");
  EXPECT_EQ(sony.status, 200);
  EXPECT_EQ(sony.json()["layout"], "sonyflake");
  EXPECT_TRUE(sony.json().contains("machine"));
  Response custom = one_get("/v1/decode/4194305?layout=time:41,node:10,seq:12");
  EXPECT_EQ(custom.status, 200);
  EXPECT_EQ(custom.json()["seq"], 1);
  EXPECT_EQ(custom.json()["node"], 0);
}

TEST_F(HttpRoutesTest, ComposeRoundTripsThroughDecode) {
  Response r = one_get("/v1/compose?time=2017-09-20T13:43:08.849Z&datacenter=17&worker=25");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["id"], "910499571847892992");
  EXPECT_EQ(r.json()["layout"], "twitter");
  Response back = one_get("/v1/decode/" + r.json()["id"].get<std::string>());
  EXPECT_EQ(back.body, r.body);  // the same object both ways

  Response ms = one_get("/v1/compose?time=1505914988849&worker=3&sequence=7&layout=twitter");
  ASSERT_EQ(ms.status, 200) << ms.body;
  Json decoded = one_get("/v1/decode/" + ms.json()["id"].get<std::string>()).json();
  EXPECT_EQ(decoded["worker"], 3);
  EXPECT_EQ(decoded["sequence"], 7);
  EXPECT_EQ(decoded["datacenter"], 0);  // absent fields are 0
  EXPECT_EQ(decoded["unix_ms"], 1505914988849);

  EXPECT_EQ(one_get("/v1/compose?worker=1").status, 400);  // no time
  EXPECT_EQ(one_get("/v1/compose?time=yesterday").status, 400);
  EXPECT_EQ(one_get("/v1/compose?time=0&worker=1").status, 400);  // before the epoch
  EXPECT_EQ(one_get("/v1/compose?time=1505914988849&worker=32").error_code(), "out_of_range");
  EXPECT_EQ(one_get("/v1/compose?time=1505914988849&shard=1").status, 400);
  EXPECT_EQ(one_get("/v1/compose?time=1505914988849&worker=x").status, 400);
  EXPECT_EQ(one_get("/v1/compose?time=1505914988849&worker=1&worker=2").status, 400);
}

TEST_F(HttpRoutesTest, StatusHasTheDocumentedKeys) {
  create_tag("order");
  one_get("/api/segment/get/order");
  one_get("/v1/snowflake?count=3");
  Response r = one_get("/v1/status");
  ASSERT_EQ(r.status, 200);
  Json j = r.json();
  for (const char* key : {"version", "uptime_ms", "layout", "policy", "lease", "clock", "fenced",
                          "segments", "ids", "requests"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["layout"]["name"], "twitter");
  EXPECT_EQ(j["policy"], "logical");
  EXPECT_EQ(j["lease"]["held"], true);
  EXPECT_EQ(j["lease"]["state"], "held");
  EXPECT_EQ(j["lease"]["worker"], 1);
  EXPECT_EQ(j["lease"]["leases_taken"], 1);
  for (const char* key :
       {"slot", "datacenter", "ttl_ms", "seconds_left", "renewals", "failures", "last_error"}) {
    EXPECT_TRUE(j["lease"].contains(key)) << key;
  }
  for (const char* key : {"offset_ms", "borrowed_ms", "rollbacks", "waited_ms", "time_left_ms"}) {
    EXPECT_TRUE(j["clock"].contains(key)) << key;
  }
  EXPECT_GT(j["clock"]["time_left_ms"].get<int64_t>(), 0);
  EXPECT_EQ(j["fenced"], false);
  EXPECT_EQ(j["segments"]["ok"], true);
  ASSERT_EQ(j["segments"]["tags"].size(), 1u);
  Json tag = j["segments"]["tags"][0];
  EXPECT_EQ(tag["tag"], "order");
  EXPECT_EQ(tag["current"]["first"], "1001");
  EXPECT_EQ(tag["current"]["used"], 1);
  for (const char* key :
       {"step", "next_ready", "fetching", "fetches", "last_fetch_ms", "last_error"}) {
    EXPECT_TRUE(tag.contains(key)) << key;
  }
  EXPECT_EQ(j["ids"]["snowflake"], 3);
  EXPECT_EQ(j["ids"]["segment"], 1);
  EXPECT_EQ(j["ids"]["uuid7"], 0);
  EXPECT_GE(j["requests"]["total"].get<uint64_t>(), 2u);
}

TEST_F(HttpRoutesTest, MetricsHealthAndReadiness) {
  one_get("/v1/snowflake");
  Response m = one_get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.header("content-type"), "text/plain; version=0.0.4");
  EXPECT_THAT(
      m.body,
      HasSubstr(R"(idforge_requests_total{protocol="http",route="snowflake",status="200"} 1)"));
  Response health = one_get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  Response ready = one_get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  EXPECT_EQ(service_->metrics().requests(0, Route::kHealth, 200), 2u);
  ASSERT_TRUE(service_->stop().ok());  // fenced and released: no longer ready
  Response gone = one_get("/readyz");
  EXPECT_EQ(gone.status, 503);
  EXPECT_THAT(gone.body, StartsWith("not ready: "));
}

// Each part answers for itself: /readyz?part=..., and the same in /v1/status.
TEST_F(HttpRoutesTest, ReadinessIsToldPerPart) {
  for (const char* target :
       {"/readyz?part=snowflake", "/readyz?part=segments", "/readyz?part=all", "/readyz?part="}) {
    Response r = one_get(target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    EXPECT_EQ(r.body, "ready\n") << target;
  }
  Response bad = one_get("/readyz?part=coffee");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.error_code(), "invalid_argument");

  Json j = one_get("/v1/status").json();
  EXPECT_EQ(j["ready"]["snowflake"]["ready"], true);
  EXPECT_EQ(j["ready"]["snowflake"]["why"], "");
  EXPECT_EQ(j["ready"]["segments"]["ready"], true);
  ASSERT_EQ(j["segments"]["stores"].size(), 1u);
  Json store = j["segments"]["stores"][0];
  EXPECT_EQ(store["up"], true);
  EXPECT_EQ(store["error"], "");
  EXPECT_THAT(store["store"].get<std::string>(), HasSubstr("sqlite:"));
  EXPECT_GE(store["probed_ms_ago"].get<int64_t>(), 0);
  EXPECT_GT(j["clock"]["reserved_ahead_ms"].get<int64_t>(), 0);
  EXPECT_EQ(j["clock"]["reservation_error"], "");

  // A stopped node is fenced: not ready for Snowflake, while its segment store still
  // answers, and the overall answer names the part.
  ASSERT_TRUE(service_->stop().ok());
  Response snowflake = one_get("/readyz?part=snowflake");
  EXPECT_EQ(snowflake.status, 503);
  EXPECT_THAT(snowflake.body, HasSubstr("worker-id lease is stopped"));
  EXPECT_EQ(one_get("/readyz?part=segments").status, 200);
  Response all = one_get("/readyz");
  EXPECT_EQ(all.status, 503);
  EXPECT_THAT(all.body, StartsWith("not ready: worker-id lease is stopped"));
  j = one_get("/v1/status").json();
  EXPECT_EQ(j["ready"]["snowflake"]["ready"], false);
  EXPECT_THAT(j["ready"]["snowflake"]["why"].get<std::string>(), HasSubstr("stopped"));
  EXPECT_EQ(j["ready"]["segments"]["ready"], true);
}

TEST_F(HttpRoutesTest, AdminRoutesDoNotExistWithoutAToken) {
  EXPECT_EQ(one_get("/v1/admin/tags").status, 404);
  EXPECT_EQ(one(get("/v1/admin/worker", "Authorization: Bearer \r\n")).status, 404);
  EXPECT_EQ(one("POST /v1/admin/tags HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}").status,
            404);
}

TEST_F(HttpRoutesTest, AdminNeedsTheRightBearerToken) {
  start("s3cret");
  create_tag("order");
  Response none = one_get("/v1/admin/tags");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.error_code(), "unauthorized");
  EXPECT_EQ(none.header("www-authenticate"), "Bearer");
  EXPECT_EQ(one(get("/v1/admin/tags", "Authorization: Bearer s3cre\r\n")).status, 401);
  EXPECT_EQ(one(get("/v1/admin/tags", "Authorization: Bearer s3cret2\r\n")).status, 401);
  EXPECT_EQ(one(get("/v1/admin/tags", "Authorization: Basic s3cret\r\n")).status, 401);
  EXPECT_EQ(service_->metrics().requests(0, Route::kAdmin, 401), 4u);

  Response listed = one(get("/v1/admin/tags", "Authorization: bearer s3cret\r\n"));
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.json(), Json::parse(R"({"tags":[{"tag":"order","max_id":"1000","step":100,
                                                     "serial_template":"","description":""}]})"));
  Response worker = one(get("/v1/admin/worker", "Authorization: Bearer s3cret\r\n"));
  EXPECT_EQ(worker.status, 200);
  EXPECT_EQ(worker.json()["held"], true);
  EXPECT_EQ(worker.json()["worker"], 1);
}

TEST_F(HttpRoutesTest, AdminCreatesTagsAndChangesSteps) {
  start("tok");
  auto post = [&](const std::string& body) {
    return one(
        "POST /v1/admin/tags HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer tok\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  Response created =
      post(R"({"tag":"user","step":500,"start":"7","description":"users","serial_template":""})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json(), Json::parse(R"({"tag":"user","max_id":"6","step":500,
                                            "serial_template":"","description":"users"})"));
  EXPECT_EQ(one_get("/api/segment/get/user").body, "7");  // usable at once
  Response again = post(R"({"tag":"user"})");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.error_code(), "already_exists");
  EXPECT_EQ(post("not json").status, 400);
  EXPECT_EQ(post("[1]").status, 400);
  EXPECT_EQ(post(R"({"step":5})").status, 400);             // no tag
  EXPECT_EQ(post(R"({"tag":"x","stpe":5})").status, 400);   // unknown key
  EXPECT_EQ(post(R"({"tag":"x","step":-5})").status, 400);  // not a count
  EXPECT_EQ(post(R"({"tag":"bad name"})").status, 400);     // the store says why

  auto put_step = [&](const std::string& tag, const std::string& body) {
    return one("PUT /v1/admin/tags/" + tag + "/step HTTP/1.1\r\nHost: t\r\n" +
               "Authorization: Bearer tok\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body);
  };
  Response stepped = put_step("user", R"({"step":5000})");
  ASSERT_EQ(stepped.status, 200) << stepped.body;
  EXPECT_EQ(stepped.json()["step"], 5000);
  EXPECT_EQ(put_step("missing", R"({"step":5000})").status, 404);
  EXPECT_EQ(put_step("user", R"({"step":0})").status, 400);
  EXPECT_EQ(put_step("user", R"({"step":5,"x":1})").status, 400);
}

}  // namespace
}  // namespace idforge::server::http_test
