// idforge::Client::parse without a server: every vector of tests/data/snowflake_vectors.txt
// decodes to its documented time and fields, the JSON line is the CLI's shape, and bad
// input is InvalidArgument. Client::open's checks of its options and URLs.
#include <gtest/gtest.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "idforge/client.h"

#ifndef IDFORGE_TEST_DATA_DIR
#error "IDFORGE_TEST_DATA_DIR must name tests/data"
#endif

namespace idforge {
namespace {

template <typename T>
bool number(const std::string& token, T* out) {
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

TEST(ClientParseTest, EveryVectorDecodesToItsFields) {
  std::ifstream in(std::string(IDFORGE_TEST_DATA_DIR) + "/snowflake_vectors.txt");
  ASSERT_TRUE(in.good());
  int checked = 0;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find('#') != std::string::npos) line.erase(line.find('#'));
    std::istringstream words(line);
    std::vector<std::string> t;
    for (std::string w; words >> w;) t.push_back(w);
    if (t.empty()) continue;
    ASSERT_GE(t.size(), 5u) << "line " << n;
    std::string layout = t[0];
    std::optional<int64_t> tick;
    if (const size_t at = layout.find('@'); at != std::string::npos) {
      int64_t v = 0;
      ASSERT_TRUE(number(layout.substr(at + 1), &v)) << "line " << n;
      tick = v;
      layout.erase(at);
    }
    int64_t epoch = 0;
    uint64_t id = 0;
    int64_t unix_ms = 0;
    ASSERT_TRUE(number(t[1], &epoch) && number(t[2], &id) && number(t[3], &unix_ms)) << n;
    Result<ParsedId> parsed = Client::parse(id, layout, epoch, tick);
    ASSERT_TRUE(parsed.ok()) << "line " << n << ": " << parsed.status().to_string();
    EXPECT_EQ(parsed->id, id);
    EXPECT_EQ(parsed->unix_ms, unix_ms) << "line " << n;
    ASSERT_EQ(parsed->fields.size(), t.size() - 4) << "line " << n;
    for (size_t i = 4; i < t.size(); ++i) {
      uint64_t want = 0;
      ASSERT_TRUE(number(t[i], &want));
      EXPECT_EQ(parsed->fields[i - 4].second, want) << "line " << n << " field " << i - 4;
    }
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(ClientParseTest, TheJsonLineIsTheCliOne) {
  Result<ParsedId> twitter = Client::parse(910499571847892992);
  ASSERT_TRUE(twitter.ok());
  EXPECT_EQ(twitter->to_json(),
            R"({"id":"910499571847892992","layout":"twitter","unix_ms":1505914988849,)"
            R"("time":"2017-09-20T13:43:08.849Z","datacenter":17,"worker":25,"sequence":0})");
  EXPECT_EQ(twitter->get("worker"), 25u);
  EXPECT_EQ(twitter->get("no_such_field"), 0u);

  Result<ParsedId> discord = Client::parse(175928847299117063, "DISCORD");
  ASSERT_TRUE(discord.ok());
  EXPECT_EQ(discord->layout, "discord");
  EXPECT_EQ(discord->time, "2016-04-30T11:18:25.796Z");
  EXPECT_EQ(discord->get("increment"), 7u);

  // A custom field named like a fixed key gets a prefix; a time past 9999 is the number.
  Result<ParsedId> custom = Client::parse(910499571847892992, "time:41,id:10,sequence:12", 1);
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(custom->layout, "custom");
  EXPECT_EQ(custom->fields.front().first, "field_id");
  Result<ParsedId> late = Client::parse(uint64_t{1} << 62, "time:63,sequence:1", 0);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->time, std::to_string(late->unix_ms));
}

TEST(ClientParseTest, BadInputIsInvalidArgumentNamingIt) {
  struct Case {
    uint64_t id;
    std::string layout;
    std::optional<int64_t> epoch;
    std::optional<int64_t> tick;
    std::string says;
  };
  const std::vector<Case> cases = {
      {1, "nosuch", {}, {}, "unknown layout 'nosuch' (presets: "},
      {1, "time:41,worker:5", {}, {}, "no sequence field"},
      {1, "time:41,sequence:0", {}, {}, "width 0"},
      {1, "twitter", -1, {}, "epoch_ms must not be before 1970"},
      {1, "twitter", {}, 0, "tick_ms must be from 1 to 86400000"},
      {1, "twitter", {}, 86'400'001, "tick_ms must be from 1 to 86400000"},
      {uint64_t{1} << 63, "twitter", {}, {}, "does not fit layout 'twitter'"},
  };
  for (const Case& c : cases) {
    Result<ParsedId> parsed = Client::parse(c.id, c.layout, c.epoch, c.tick);
    ASSERT_FALSE(parsed.ok()) << c.layout;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.layout;
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ClientOpenTest, BadOptionsAndUrlsAreInvalidArgumentNamingThem) {
  struct Case {
    std::vector<std::string> servers;
    void (*change)(ClientOptions&);
    std::string says;
  };
  const auto none = [](ClientOptions&) {};
  const std::vector<Case> cases = {
      {{}, none, "at least one server"},
      {{"ftp://h:1"}, none, "the scheme must be http://"},
      {{"127.0.0.1:8080"}, none, "is not a URL"},
      {{"http://h:0"}, none, "port '0' is not in 1..65535"},
      {{"http://h:99999"}, none, "is not in 1..65535"},
      {{"http://h:8080/prefix"}, none, "give only scheme://HOST:PORT"},
      {{"redis://user:pw@h:6380"}, none, "no user or password"},
      {{"http://:8080"}, none, "has no host"},
      {{"http://::1:8080"}, none, "in brackets"},
      {{"http://h"}, [](ClientOptions& o) { o.timeout_ms = 0; }, "timeout_ms must be >= 1"},
      {{"http://h"}, [](ClientOptions& o) { o.batch = 0; }, "batch must be >= 1"},
      {{"http://h"}, [](ClientOptions& o) { o.refill_below = 300; }, "refill_below must be"},
      {{"http://h"}, [](ClientOptions& o) { o.max_age_ms = -1; }, "max_age_ms must be >= 0"},
      {{"http://h"}, [](ClientOptions& o) { o.max_backoff_ms = 10; }, "max_backoff_ms must be"},
  };
  for (const Case& c : cases) {
    ClientOptions options;
    options.servers = c.servers;
    c.change(options);
    Result<std::unique_ptr<Client>> client = Client::open(options);
    ASSERT_FALSE(client.ok()) << c.says;
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(client.status().message().find(c.says), std::string::npos)
        << client.status().message();
  }
  ClientOptions good;
  good.servers = {"http://[::1]", "REDIS://localhost/", " http://127.0.0.1:8080 "};
  Result<std::unique_ptr<Client>> client = Client::open(good);
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  const ClientStats stats = (*client)->stats();
  ASSERT_EQ(stats.servers.size(), 3u);
  EXPECT_EQ(stats.servers[0].url, "http://[::1]:80");
  EXPECT_EQ(stats.servers[1].url, "redis://localhost:6380");
  EXPECT_EQ(stats.servers[2].url, "http://127.0.0.1:8080");
  EXPECT_TRUE(stats.servers[0].current);
}

}  // namespace
}  // namespace idforge
