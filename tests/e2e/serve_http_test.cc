// Every HTTP route of docs/api.md through curl, against one `idforge serve` on free
// loopback ports: the ID routes and their formats, decode and compose, the Leaf routes,
// /metrics, health, status, the web page, the admin routes, and the error answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "presets.h"
#include "serve_process.h"
#include "support/ordering.h"

namespace idforge::e2e {
namespace {

using test::strictly_increasing;

constexpr const char* kAdminToken = "e2e-admin-token";
constexpr uint64_t kKnownId = 910499571847892992ULL;

bool is_decimal(const std::string& text) {
  return !text.empty() && text.size() <= 20 &&
         text.find_first_not_of("0123456789") == std::string::npos;
}

class ServeHttpTest : public SharedServeSuite<ServeHttpTest> {
 public:
  static ServeOptions suite_options() {
    ServeOptions options;
    options.env = {std::string("IDFORGE_ADMIN_TOKEN=") + kAdminToken};
    options.setup = {{"tag", "create", "order", "--step", "1000"},
                     {"tag", "create", "dense", "--start", "1000", "--step", "100"},
                     {"tag", "create", "leaf", "--step", "100"},
                     {"tag", "create", "plain"},
                     {"tag", "create", "pay", "--template", "PAY{seq:06}"}};
    return options;
  }

 protected:
  static const ServeProcess& server() { return *server_; }
  static HttpAnswer get(const std::string& path, const std::vector<std::string>& extra = {}) {
    return server_->http(path, extra);
  }
  // A 200 JSON answer with {"kind":kind,"ids":[...]}: the IDs as strings.
  static std::vector<std::string> id_strings(const std::string& path, const std::string& kind) {
    HttpAnswer a = get(path);
    EXPECT_EQ(a.status, 200) << a.summary();
    EXPECT_NE(a.header("content-type").find("application/json"), std::string::npos) << a.summary();
    nlohmann::json body = a.json();
    std::vector<std::string> ids;
    if (!body.is_object() || !body.contains("ids") || !body["ids"].is_array()) {
      ADD_FAILURE() << "want {\"kind\":..,\"ids\":[...]}" << a.summary();
      return ids;
    }
    EXPECT_EQ(body["kind"], kind) << a.summary();
    for (const nlohmann::json& id : body["ids"]) {
      if (!id.is_string()) {
        ADD_FAILURE() << "IDs are strings in JSON" << a.summary();
        continue;
      }
      ids.push_back(id.get<std::string>());
    }
    return ids;
  }
  // The same for 64-bit IDs, checked to be decimal strings.
  static std::vector<uint64_t> numeric_ids(const std::string& path, const std::string& kind) {
    std::vector<uint64_t> ids;
    for (const std::string& id : id_strings(path, kind)) {
      EXPECT_TRUE(is_decimal(id)) << "not a decimal ID: " << id;
      if (is_decimal(id)) ids.push_back(std::stoull(id));
    }
    return ids;
  }
  static nlohmann::json status() {
    HttpAnswer a = get("/v1/status");
    EXPECT_EQ(a.status, 200) << a.summary();
    return a.json();
  }
  static std::vector<std::string> admin_auth() {
    return {"-H", std::string("Authorization: Bearer ") + kAdminToken};
  }
};

TEST_F(ServeHttpTest, SnowflakeCountDefaultsToOne) {
  std::vector<uint64_t> ids = numeric_ids("/v1/snowflake", "snowflake");
  EXPECT_EQ(ids.size(), 1u);
}

TEST_F(ServeHttpTest, SnowflakeIdsAreDistinctAndIncreasingAcrossRequests) {
  std::vector<uint64_t> first = numeric_ids("/v1/snowflake?count=500", "snowflake");
  std::vector<uint64_t> second = numeric_ids("/v1/snowflake?count=500", "snowflake");
  ASSERT_EQ(first.size(), 500u);
  ASSERT_EQ(second.size(), 500u);
  std::vector<uint64_t> all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_TRUE(strictly_increasing(all));
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 1000u);
  // Made now: the twitter layout's time field is close to the clock.
  const Preset& twitter = presets().front();
  EXPECT_NEAR(static_cast<double>(twitter.unix_ms(all.back())), static_cast<double>(now_unix_ms()),
              5'000.0);
}

TEST_F(ServeHttpTest, SnowflakeMaxCountIsServedAndOneMoreIsRefused) {
  std::vector<uint64_t> ids = numeric_ids("/v1/snowflake?count=10000", "snowflake");
  EXPECT_EQ(ids.size(), 10000u);
  EXPECT_TRUE(strictly_increasing(ids));
  EXPECT_TRUE(is_json_error(get("/v1/snowflake?count=10001"), 400, "out_of_range"));
}

TEST_F(ServeHttpTest, SnowflakeTextFormatIsOneIdPerLine) {
  HttpAnswer a = get("/v1/snowflake?count=5&format=text");
  ASSERT_EQ(a.status, 200) << a.summary();
  EXPECT_NE(a.header("content-type").find("text/plain"), std::string::npos) << a.summary();
  RunResult lines;
  lines.out = a.body;
  std::vector<uint64_t> ids = parse_ids(lines.lines());
  EXPECT_EQ(ids.size(), 5u) << a.summary();
  EXPECT_TRUE(strictly_increasing(ids));
}

TEST_F(ServeHttpTest, SnowflakeCarriesTheLeasedWorker) {
  nlohmann::json lease = status()["lease"];
  ASSERT_TRUE(lease.is_object()) << lease;
  std::vector<uint64_t> ids = numeric_ids("/v1/snowflake", "snowflake");
  ASSERT_EQ(ids.size(), 1u);
  HttpAnswer decoded = get("/v1/decode/" + std::to_string(ids[0]));
  ASSERT_EQ(decoded.status, 200) << decoded.summary();
  nlohmann::json body = decoded.json();
  EXPECT_EQ(body["datacenter"], lease["datacenter"]) << body << lease;
  EXPECT_EQ(body["worker"], lease["worker"]) << body << lease;
  EXPECT_EQ(body["layout"], "twitter");
}

TEST_F(ServeHttpTest, SegmentIsDenseWithinASegmentAndIncreasing) {
  HttpAnswer first = get("/v1/segment/dense?count=10");
  ASSERT_EQ(first.status, 200) << first.summary();
  EXPECT_EQ(first.json()["tag"], "dense") << first.summary();
  std::vector<uint64_t> ids = numeric_ids("/v1/segment/dense?count=10", "segment");
  std::vector<uint64_t> more = numeric_ids("/v1/segment/dense?count=30", "segment");
  ids.insert(ids.end(), more.begin(), more.end());
  ASSERT_EQ(ids.size(), 40u);
  // Step 100 from 1000: the first request took 1000..1009, these are the next 40.
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], 1010 + i) << "index " << i;
}

TEST_F(ServeHttpTest, SegmentAcrossSegmentsKeepsIncreasing) {
  // Step 100: 250 IDs span three segments; the text format says the same.
  std::vector<uint64_t> ids = numeric_ids("/v1/segment/leaf?count=250", "segment");
  ASSERT_EQ(ids.size(), 250u);
  EXPECT_TRUE(strictly_increasing(ids));
  HttpAnswer text = get("/v1/segment/leaf?count=3&format=text");
  ASSERT_EQ(text.status, 200) << text.summary();
  EXPECT_NE(text.header("content-type").find("text/plain"), std::string::npos);
  RunResult lines;
  lines.out = text.body;
  std::vector<uint64_t> next = parse_ids(lines.lines());
  ASSERT_EQ(next.size(), 3u) << text.summary();
  EXPECT_GT(next.front(), ids.back());
  EXPECT_TRUE(strictly_increasing(next));
}

TEST_F(ServeHttpTest, SegmentUnknownTagIs404AndBadTagNameIs400) {
  EXPECT_TRUE(is_json_error(get("/v1/segment/no-such-tag"), 404, "not_found"));
  EXPECT_TRUE(is_json_error(get("/v1/segment/bad%20tag%21"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/segment/" + std::string(65, 'a')), 400, "invalid_argument"));
}

TEST_F(ServeHttpTest, Uuid7IsCanonicalVersion7AndOrdered) {
  std::vector<std::string> ids = id_strings("/v1/uuid7?count=50", "uuid7");
  ASSERT_EQ(ids.size(), 50u);
  const std::regex canonical("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (const std::string& id : ids) EXPECT_TRUE(std::regex_match(id, canonical)) << id;
  EXPECT_TRUE(strictly_increasing(ids));
  // The first 48 bits are Unix milliseconds.
  const std::string hex = ids.front().substr(0, 8) + ids.front().substr(9, 4);
  EXPECT_NEAR(static_cast<double>(std::stoll(hex, nullptr, 16)), static_cast<double>(now_unix_ms()),
              5'000.0);
  EXPECT_EQ(id_strings("/v1/uuid7", "uuid7").size(), 1u);
}

TEST_F(ServeHttpTest, UlidIsCrockfordBase32AndOrdered) {
  std::vector<std::string> ids = id_strings("/v1/ulid?count=50", "ulid");
  ASSERT_EQ(ids.size(), 50u);
  const std::regex crockford("[0-7][0-9A-HJKMNP-TV-Z]{25}");
  for (const std::string& id : ids) EXPECT_TRUE(std::regex_match(id, crockford)) << id;
  EXPECT_TRUE(strictly_increasing(ids));
  HttpAnswer text = get("/v1/ulid?count=2&format=text");
  ASSERT_EQ(text.status, 200) << text.summary();
  EXPECT_NE(text.header("content-type").find("text/plain"), std::string::npos);
  EXPECT_TRUE(std::regex_match(text.body, std::regex("([0-7][0-9A-HJKMNP-TV-Z]{25}\n){2}")))
      << text.summary();
}

TEST_F(ServeHttpTest, SerialFollowsTheTemplate) {
  std::vector<std::string> ids = id_strings("/v1/serial/pay?count=3", "serial");
  ASSERT_EQ(ids.size(), 3u);
  for (const std::string& id : ids)
    EXPECT_TRUE(std::regex_match(id, std::regex("PAY\\d{6}"))) << id;
  EXPECT_TRUE(strictly_increasing(ids));
  HttpAnswer one = get("/v1/serial/pay");
  ASSERT_EQ(one.status, 200) << one.summary();
  EXPECT_EQ(one.json()["tag"], "pay") << one.summary();
  ASSERT_EQ(one.json()["ids"].size(), 1u) << one.summary();
  EXPECT_GT(one.json()["ids"][0].get<std::string>(), ids.back());
  EXPECT_TRUE(is_json_error(get("/v1/serial/no-such-tag"), 404, "not_found"));
}

TEST_F(ServeHttpTest, SerialOfATagWithoutTemplateIsAClientError) {
  HttpAnswer a = get("/v1/serial/plain");
  EXPECT_GE(a.status, 400) << a.summary();
  EXPECT_LT(a.status, 500) << a.summary();
  EXPECT_TRUE(a.json().contains("error")) << a.summary();
}

TEST_F(ServeHttpTest, DecodeKnownTwitterId) {
  HttpAnswer a = get("/v1/decode/910499571847892992");
  ASSERT_EQ(a.status, 200) << a.summary();
  EXPECT_NE(a.header("content-type").find("application/json"), std::string::npos);
  nlohmann::json d = a.json();
  EXPECT_EQ(d["id"], "910499571847892992");
  EXPECT_EQ(d["layout"], "twitter");
  EXPECT_TRUE(d["spec"].is_string() && !d["spec"].get<std::string>().empty()) << d;
  EXPECT_EQ(d["unix_ms"], 1505914988849);
  EXPECT_EQ(d["time"], "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(d["datacenter"], 17);
  // docs/api.md's example says worker 1 and a binary with worker bits 00001, which is
  // 910499571847794688; the ID's own bits say 25 (as README's `idforge parse` shows).
  EXPECT_EQ(d["worker"], 25);
  EXPECT_EQ(d["sequence"], 0);
  EXPECT_EQ(d["unused_bits"], 1);
  EXPECT_EQ(d["binary"], "0000110010100010101111101000100101011100001000111001000000000000");
  EXPECT_TRUE(d["diagram"].is_string() && !d["diagram"].get<std::string>().empty()) << d;
  const nlohmann::json fields = nlohmann::json::parse(R"([
    {"name": "time", "role": "time", "bits": 41, "shift": 22, "value": "217080014192"},
    {"name": "datacenter", "role": "node", "bits": 5, "shift": 17, "value": "17"},
    {"name": "worker", "role": "node", "bits": 5, "shift": 12, "value": "25"},
    {"name": "sequence", "role": "sequence", "bits": 12, "shift": 0, "value": "0"}])");
  EXPECT_EQ(d["fields"], fields) << d;
}

TEST_F(ServeHttpTest, DecodeWithAnotherLayout) {
  HttpAnswer a = get("/v1/decode/910499571847892992?layout=sonyflake");
  ASSERT_EQ(a.status, 200) << a.summary();
  nlohmann::json d = a.json();
  const Preset& sony = *std::find_if(presets().begin(), presets().end(),
                                     [](const Preset& p) { return p.name == "sonyflake"; });
  std::map<std::string, uint64_t> want = sony.decode(kKnownId);
  EXPECT_EQ(d["layout"], "sonyflake");
  EXPECT_EQ(d["machine"], want["machine"]) << d;
  EXPECT_EQ(d["sequence"], want["sequence"]) << d;
  EXPECT_EQ(d["unix_ms"], sony.unix_ms(kKnownId)) << d;
  ASSERT_TRUE(d["fields"].is_array()) << d;
  ASSERT_EQ(d["fields"].size(), 3u) << d;
  EXPECT_EQ(d["fields"][2]["name"], "machine");
  EXPECT_EQ(d["fields"][2]["bits"], 16);
  EXPECT_FALSE(d.contains("datacenter")) << d;
}

TEST_F(ServeHttpTest, DecodeRefusesWhatIsNotAnId) {
  EXPECT_TRUE(is_json_error(get("/v1/decode/abc"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/decode/-1"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/decode/12x4"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/decode/0x10"), 400, "invalid_argument"));
  for (const char* too_big : {"18446744073709551616", "99999999999999999999999999"}) {
    HttpAnswer a = get(std::string("/v1/decode/") + too_big);
    EXPECT_EQ(a.status, 400) << too_big << a.summary();
    const std::string code = a.json()["error"].value("code", "");
    EXPECT_TRUE(code == "invalid_argument" || code == "out_of_range") << a.summary();
  }
  EXPECT_TRUE(
      is_json_error(get("/v1/decode/910499571847892992?layout=nonsense"), 400, "invalid_argument"));
}

TEST_F(ServeHttpTest, ComposeRoundTripsThroughDecode) {
  HttpAnswer a = get("/v1/compose?time=2017-09-20T13:43:08.849Z&datacenter=17&worker=25");
  ASSERT_EQ(a.status, 200) << a.summary();
  nlohmann::json c = a.json();
  EXPECT_EQ(c["id"], "910499571847892992") << c;
  EXPECT_EQ(c["layout"], "twitter");
  EXPECT_EQ(c["datacenter"], 17);
  EXPECT_EQ(c["worker"], 25);
  EXPECT_EQ(c["sequence"], 0);
  EXPECT_EQ(c["unix_ms"], 1505914988849);

  // The same instant as Unix milliseconds and with an offset.
  EXPECT_EQ(get("/v1/compose?time=1505914988849&datacenter=17&worker=25").json()["id"],
            "910499571847892992");
  EXPECT_EQ(
      get("/v1/compose?time=2017-09-20T21:43:08.849%2B08:00&datacenter=17&worker=25").json()["id"],
      "910499571847892992");

  HttpAnswer sony = get("/v1/compose?time=1700000000000&machine=513&sequence=7&layout=sonyflake");
  ASSERT_EQ(sony.status, 200) << sony.summary();
  const std::string id = sony.json().value("id", "");
  ASSERT_TRUE(is_decimal(id)) << sony.summary();
  nlohmann::json back = get("/v1/decode/" + id + "?layout=sonyflake").json();
  EXPECT_EQ(back["machine"], 513) << back;
  EXPECT_EQ(back["sequence"], 7) << back;
  EXPECT_EQ(back["unix_ms"], 1700000000000) << back;
}

TEST_F(ServeHttpTest, ComposeRefusesBadTimeAndFieldsThatDoNotFit) {
  EXPECT_TRUE(is_json_error(get("/v1/compose?time=yesterday&worker=1"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/compose?time=2017-13-40T00:00:00Z"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/compose?time=1505914988849&worker=32"), 400, "out_of_range"));
  EXPECT_TRUE(
      is_json_error(get("/v1/compose?time=1505914988849&sequence=4096"), 400, "out_of_range"));
  EXPECT_TRUE(
      is_json_error(get("/v1/compose?time=1505914988849&worker=-1"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(get("/v1/compose?time=1505914988849&layout=nonsense"), 400,
                            "invalid_argument"));
}

TEST_F(ServeHttpTest, LeafRoutesAnswerBareNumbers) {
  HttpAnswer seg = get("/api/segment/get/leaf");
  ASSERT_EQ(seg.status, 200) << seg.summary();
  EXPECT_NE(seg.header("content-type").find("text/plain"), std::string::npos) << seg.summary();
  EXPECT_TRUE(is_decimal(seg.body)) << seg.summary();
  HttpAnswer seg2 = get("/api/segment/get/leaf");
  ASSERT_TRUE(is_decimal(seg2.body)) << seg2.summary();
  EXPECT_GT(std::stoull(seg2.body), std::stoull(seg.body));

  HttpAnswer snow = get("/api/snowflake/get/anything-at-all");
  ASSERT_EQ(snow.status, 200) << snow.summary();
  EXPECT_NE(snow.header("content-type").find("text/plain"), std::string::npos) << snow.summary();
  ASSERT_TRUE(is_decimal(snow.body)) << snow.summary();
  nlohmann::json decoded = get("/v1/decode/" + snow.body).json();
  EXPECT_EQ(decoded["worker"], status()["lease"]["worker"]) << decoded;

  EXPECT_TRUE(is_json_error(get("/api/segment/get/no-such-tag"), 404, "not_found"));
}

// The value of the sample whose line starts with `series` (name and labels); -1 if absent.
double metric(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      size_t end = text.find('\n', at);
      return std::stod(text.substr(at + series.size() + 1, end - at - series.size() - 1));
    }
    at += series.size();
  }
  return -1;
}

TEST_F(ServeHttpTest, MetricsArePrometheusTextAndCountersMove) {
  HttpAnswer before = get("/metrics");
  ASSERT_EQ(before.status, 200) << before.summary();
  EXPECT_NE(before.header("content-type").find("text/plain"), std::string::npos);
  EXPECT_NE(before.body.find("# TYPE "), std::string::npos) << before.summary();
  EXPECT_NE(before.body.find("# HELP "), std::string::npos) << before.summary();
  // Every line is a comment or `name{labels} value`.
  const std::regex sample_line(R"(([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEInfa]+|#.*)?)");
  RunResult lines;
  lines.out = before.body;
  for (const std::string& line : lines.lines()) {
    EXPECT_TRUE(std::regex_match(line, sample_line)) << "not Prometheus text: " << line;
  }
  const std::string issued = "idforge_ids_issued_total{kind=\"snowflake\"}";
  const double ids_before = metric(before.body, issued);
  ASSERT_GE(ids_before, 0) << "no " << issued << before.summary();

  ASSERT_EQ(get("/v1/snowflake?count=7").status, 200);
  HttpAnswer after = get("/metrics");
  EXPECT_GE(metric(after.body, issued), ids_before + 7);
  const std::string requests =
      "idforge_requests_total{protocol=\"http\",route=\"snowflake\",status=\"200\"}";
  EXPECT_GE(metric(after.body, requests), 1) << after.summary();
}

TEST_F(ServeHttpTest, HealthAndReadiness) {
  HttpAnswer health = get("/healthz");
  EXPECT_EQ(health.status, 200) << health.summary();
  EXPECT_EQ(health.body.substr(0, health.body.find_last_not_of("\r\n") + 1), "ok");
  HttpAnswer ready = get("/readyz");
  EXPECT_EQ(ready.status, 200) << ready.summary();
  EXPECT_EQ(ready.body.substr(0, ready.body.find_last_not_of("\r\n") + 1), "ready");
}

TEST_F(ServeHttpTest, StatusHasTheDocumentedKeys) {
  nlohmann::json s = status();
  ASSERT_TRUE(s.is_object()) << s;
  for (const char* key : {"version", "uptime_ms", "layout", "policy", "lease", "clock", "fenced",
                          "segments", "ids", "requests"}) {
    EXPECT_TRUE(s.contains(key)) << "no '" << key << "' in " << s;
  }
  EXPECT_EQ(s["layout"]["name"], "twitter");
  EXPECT_TRUE(s["layout"]["spec"].is_string());
  EXPECT_EQ(s["policy"], "logical");
  EXPECT_EQ(s["fenced"], false);
  for (const char* key : {"held", "state", "slot", "datacenter", "worker", "ttl_ms", "seconds_left",
                          "renewals", "failures", "last_error", "leases_taken"}) {
    EXPECT_TRUE(s["lease"].contains(key)) << "no lease." << key << " in " << s["lease"];
  }
  EXPECT_EQ(s["lease"]["held"], true);
  EXPECT_EQ(s["lease"]["state"], "held");
  for (const char* key : {"offset_ms", "borrowed_ms", "rollbacks", "waited_ms", "time_left_ms"}) {
    EXPECT_TRUE(s["clock"].contains(key)) << "no clock." << key << " in " << s["clock"];
  }
  EXPECT_EQ(s["segments"]["ok"], true);
  EXPECT_TRUE(s["segments"]["tags"].is_array()) << s["segments"];
  for (const char* key : {"snowflake", "segment", "uuid7", "ulid", "serial"}) {
    EXPECT_TRUE(s["ids"][key].is_number_unsigned()) << "ids." << key << " in " << s["ids"];
  }
  const uint64_t total = s["requests"]["total"].get<uint64_t>();
  ASSERT_EQ(get("/healthz").status, 200);
  EXPECT_GT(status()["requests"]["total"].get<uint64_t>(), total);
}

TEST_F(ServeHttpTest, WebPageAndItsAssets) {
  HttpAnswer page = get("/");
  ASSERT_EQ(page.status, 200) << page.summary();
  EXPECT_NE(page.header("content-type").find("text/html"), std::string::npos) << page.summary();
  EXPECT_TRUE(std::regex_search(page.body, std::regex("<html", std::regex::icase)))
      << page.summary();
  HttpAnswer index = get("/index.html");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, page.body);
  HttpAnswer js = get("/app.js");
  EXPECT_EQ(js.status, 200) << js.summary();
  EXPECT_NE(js.header("content-type").find("javascript"), std::string::npos) << js.summary();
  EXPECT_FALSE(js.body.empty());
  HttpAnswer css = get("/style.css");
  EXPECT_EQ(css.status, 200) << css.summary();
  EXPECT_NE(css.header("content-type").find("text/css"), std::string::npos) << css.summary();
}

TEST_F(ServeHttpTest, AdminNeedsTheRightToken) {
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags"), 401, "unauthorized"));
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags", {"-H", "Authorization: Bearer wrong"}), 401,
                            "unauthorized"));
  EXPECT_TRUE(
      is_json_error(get("/v1/admin/tags", {"-H", std::string("Authorization: ") + kAdminToken}),
                    401, "unauthorized"));
  EXPECT_TRUE(is_json_error(get("/v1/admin/worker"), 401, "unauthorized"));
  const std::vector<std::string> post = {"-X",
                                         "POST",
                                         "-H",
                                         "Content-Type: application/json",
                                         "--data-binary",
                                         R"({"tag":"sneaky","step":10})"};
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags", post), 401, "unauthorized"));
  EXPECT_TRUE(is_json_error(get("/v1/segment/sneaky"), 404, "not_found"));
}

TEST_F(ServeHttpTest, AdminCreatesListsAndSetsStep) {
  std::vector<std::string> create = admin_auth();
  create.insert(create.end(),
                {"-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
                 R"({"tag":"fresh","step":50,"start":"7","serial_template":"",)"
                 R"("description":"made by e2e"})"});
  HttpAnswer created = get("/v1/admin/tags", create);
  ASSERT_EQ(created.status, 201) << created.summary();
  EXPECT_EQ(created.json()["tag"], "fresh") << created.summary();
  EXPECT_EQ(created.json()["step"], 50) << created.summary();
  EXPECT_EQ(created.json()["description"], "made by e2e") << created.summary();
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags", create), 409, "already_exists"));

  std::vector<uint64_t> ids = numeric_ids("/v1/segment/fresh?count=3", "segment");
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 8, 9}));

  HttpAnswer list = get("/v1/admin/tags", admin_auth());
  ASSERT_EQ(list.status, 200) << list.summary();
  nlohmann::json tags = list.json()["tags"];
  ASSERT_TRUE(tags.is_array()) << list.summary();
  auto fresh = std::find_if(tags.begin(), tags.end(),
                            [](const nlohmann::json& t) { return t["tag"] == "fresh"; });
  ASSERT_NE(fresh, tags.end()) << list.summary();
  EXPECT_TRUE((*fresh)["max_id"].is_string()) << *fresh;
  EXPECT_EQ((*fresh)["step"], 50);
  for (const char* key : {"serial_template", "description"}) {
    EXPECT_TRUE(fresh->contains(key)) << *fresh;
  }
  EXPECT_NE(std::find_if(tags.begin(), tags.end(),
                         [](const nlohmann::json& t) { return t["tag"] == "order"; }),
            tags.end())
      << "tags made with `idforge tag create` are listed too" << list.summary();

  std::vector<std::string> set_step = admin_auth();
  set_step.insert(set_step.end(), {"-X", "PUT", "-H", "Content-Type: application/json",
                                   "--data-binary", R"({"step":5000})"});
  HttpAnswer stepped = get("/v1/admin/tags/fresh/step", set_step);
  ASSERT_EQ(stepped.status, 200) << stepped.summary();
  EXPECT_EQ(stepped.json()["tag"], "fresh");
  EXPECT_EQ(stepped.json()["step"], 5000);
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags/missing/step", set_step), 404, "not_found"));

  HttpAnswer worker = get("/v1/admin/worker", admin_auth());
  ASSERT_EQ(worker.status, 200) << worker.summary();
  EXPECT_EQ(worker.json()["slot"], status()["lease"]["slot"]) << worker.summary();
  EXPECT_EQ(worker.json()["held"], true) << worker.summary();
}

TEST_F(ServeHttpTest, AdminRefusesBadBodies) {
  auto post = [](const std::string& body) {
    std::vector<std::string> args = admin_auth();
    args.insert(args.end(),
                {"-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body});
    return get("/v1/admin/tags", args);
  };
  EXPECT_TRUE(is_json_error(post("{not json"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(post(R"({"tag":"bad tag!"})"), 400, "invalid_argument"));
  EXPECT_TRUE(is_json_error(post(R"({"tag":"neg","step":-5})"), 400, "invalid_argument"));
  std::vector<std::string> set_step = admin_auth();
  set_step.insert(set_step.end(), {"-X", "PUT", "--data-binary", R"({"step":"many"})"});
  EXPECT_TRUE(is_json_error(get("/v1/admin/tags/order/step", set_step), 400, "invalid_argument"));
}

TEST_F(ServeHttpTest, UnknownRouteIs404) {
  EXPECT_TRUE(is_json_error(get("/v1/nope"), 404, "not_found"));
  EXPECT_TRUE(is_json_error(get("/v2/snowflake"), 404, "not_found"));
  EXPECT_TRUE(is_json_error(get("/no-such-asset.png"), 404, "not_found"));
}

TEST_F(ServeHttpTest, WrongMethodIs405WithAllow) {
  for (const char* method : {"DELETE", "POST", "PUT", "PATCH"}) {
    HttpAnswer a = get("/v1/snowflake", {"-X", method});
    EXPECT_TRUE(is_json_error(a, 405, "method_not_allowed")) << method;
    EXPECT_NE(a.header("allow").find("GET"), std::string::npos) << method << a.summary();
  }
}

TEST_F(ServeHttpTest, BadCountsAre400) {
  for (const char* route :
       {"/v1/snowflake", "/v1/segment/order", "/v1/uuid7", "/v1/ulid", "/v1/serial/pay"}) {
    const std::string path = route;
    EXPECT_TRUE(is_json_error(get(path + "?count=0"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(is_json_error(get(path + "?count=-1"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(is_json_error(get(path + "?count=abc"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(is_json_error(get(path + "?count=1.5"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(is_json_error(get(path + "?count=10001"), 400, "out_of_range")) << path;
    HttpAnswer huge = get(path + "?count=99999999999999999999999");
    EXPECT_EQ(huge.status, 400) << path << huge.summary();
  }
}

TEST_F(ServeHttpTest, HeadAnswersWithoutBody) {
  HttpAnswer head = server().head("/v1/snowflake");
  EXPECT_EQ(head.status, 200) << head.summary();
  // A raw HEAD with Connection: close: the headers, then the close, nothing between.
  RawClient client(server().http_port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.send("HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(client.read_until_closed(milliseconds(5'000))) << client.received();
  const std::string& raw = client.received();
  ASSERT_TRUE(raw.starts_with("HTTP/1.1 200")) << raw;
  EXPECT_EQ(raw.find("\r\n\r\n"), raw.size() - 4) << "HEAD answered with a body:\n" << raw;
}

TEST_F(ServeHttpTest, KeepAliveReusesTheConnection) {
  RunResult r =
      server().curl({"-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                     server().url("/v1/snowflake"), server().url("/healthz")});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out, "200 1\n200 0\n") << "the second request reuses the connection";
}

TEST(ServeHttpAdminOffTest, AdminRoutesAre404WithoutAToken) {
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start({}, &error);
  ASSERT_NE(server, nullptr) << error;
  const std::vector<std::string> auth = {"-H", "Authorization: Bearer anything"};
  EXPECT_TRUE(is_json_error(server->http("/v1/admin/tags"), 404, "not_found"));
  EXPECT_TRUE(is_json_error(server->http("/v1/admin/tags", auth), 404, "not_found"));
  EXPECT_TRUE(is_json_error(server->http("/v1/admin/worker", auth), 404, "not_found"));
  std::vector<std::string> post = auth;
  post.insert(post.end(), {"-X", "POST", "--data-binary", R"({"tag":"x"})"});
  EXPECT_TRUE(is_json_error(server->http("/v1/admin/tags", post), 404, "not_found"));
  EXPECT_EQ(server->stop(), 0) << server->stderr_text();
}

}  // namespace
}  // namespace idforge::e2e
