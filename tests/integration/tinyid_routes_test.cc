// Tinyid's HTTP routes on idforge (docs/migrating.md): the tokens of Tinyid's own
// tiny_id_token table, Tinyid's response formats, and segments handed to a client.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "integration/mysql_schemas.h"
#include "integration/serve_node.h"
#include "integration/services.h"

namespace idforge::integration {
namespace {

std::vector<int64_t> split(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

class TinyidRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Server> db = Services::get().start_private(ServerKind::kMariadb, "tinyid-routes");
    ASSERT_TRUE(db.ok()) << db.status().to_string();
    db_ = *db;
    for (const char* ddl : {mysql_schema::kTinyIdInfo, mysql_schema::kTinyIdToken}) {
      ASSERT_EQ(Services::get().client(db_, {"-e", ddl}).exit_code, 0);
    }
    ASSERT_EQ(
        Services::get()
            .client(db_, {"-e",
                          "INSERT INTO tiny_id_info (biz_type, max_id, step, delta, remainder)"
                          " VALUES ('pay', 0, 100, 1, 0), ('ship', 0, 100, 1, 0);"
                          " INSERT INTO tiny_id_token (token, biz_type) VALUES"
                          " ('0f673adf80504e2eaa552f5d791b644c', 'pay')"})
            .exit_code,
        0);
    auto node =
        ServeNode::start(Services::get().make_dir("tinyid-node"),
                         {"--store", db_.url + "?table=tiny_id_info", "--tinyid-tokens", db_.url});
    ASSERT_TRUE(node.ok()) << node.status().to_string();
    node_ = std::move(node).value();
  }

  HttpReply get(const std::string& target) {
    HttpClient http(node_->http_port());
    Result<HttpReply> r = http.get(target, std::chrono::seconds(10));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : HttpReply{};
  }

  static constexpr const char* kToken = "0f673adf80504e2eaa552f5d791b644c";
  Server db_;
  std::unique_ptr<ServeNode> node_;
};

TEST_F(TinyidRoutesTest, SimpleRoutesAnswerAsTinyidDoes) {
  const std::string q = std::string("bizType=pay&token=") + kToken;
  HttpReply one = get("/tinyid/id/nextIdSimple?" + q);
  EXPECT_EQ(one.status, 200);
  ASSERT_EQ(split(one.body).size(), 1u) << one.body;
  HttpReply three = get("/tinyid/id/nextIdSimple?" + q + "&batchSize=3");
  const std::vector<int64_t> ids = split(three.body);
  ASSERT_EQ(ids.size(), 3u) << three.body;
  EXPECT_GT(ids[0], split(one.body)[0]);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  // A wrong token, or a right one for another business type: an empty 200, as Tinyid.
  const std::vector<std::string> refused_queries = {
      "bizType=pay&token=nope", std::string("bizType=ship&token=") + kToken, "bizType=pay"};
  for (const std::string& bad : refused_queries) {
    HttpReply refused = get("/tinyid/id/nextIdSimple?" + bad);
    EXPECT_EQ(refused.status, 200) << bad;
    EXPECT_EQ(refused.body, "") << bad;
  }
}

TEST_F(TinyidRoutesTest, JsonRoutesUseTinyidsCodes) {
  HttpReply ok = get(std::string("/tinyid/id/nextId?bizType=pay&batchSize=2&token=") + kToken);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body.rfind(R"({"data":[)", 0), 0u) << ok.body;
  EXPECT_NE(ok.body.find(R"(],"code":200,"message":""})"), std::string::npos) << ok.body;
  HttpReply bad = get("/tinyid/id/nextId?bizType=pay&token=nope");
  EXPECT_EQ(bad.status, 200);
  EXPECT_EQ(bad.body, R"({"data":null,"code":5,"message":"token is error"})");
}

TEST_F(TinyidRoutesTest, ASegmentHandedToAClientIsNeverServedAgain) {
  const std::string q = std::string("bizType=pay&token=") + kToken;
  HttpReply seg = get("/tinyid/id/nextSegmentIdSimple?" + q);
  const std::vector<int64_t> f = split(seg.body);  // currentId,loadingId,maxId,delta,remainder
  ASSERT_EQ(f.size(), 5u) << seg.body;
  EXPECT_EQ(f[2] - f[0], 100);  // one step of the tag, delta 1
  EXPECT_EQ(f[1], f[0] + 20);   // the client loads the next one 20% in
  EXPECT_EQ(f[3], 1);
  EXPECT_EQ(f[4], 0);
  HttpReply json = get("/tinyid/id/nextSegmentId?" + q);
  EXPECT_NE(json.body.find(R"("delta":1,"remainder":0},"code":200)"), std::string::npos)
      << json.body;
  // The client's numbers are (currentId, maxId]; the server's own never fall in them.
  const std::vector<int64_t> served =
      split(get("/tinyid/id/nextIdSimple?" + q + "&batchSize=500").body);
  ASSERT_EQ(served.size(), 500u);
  for (int64_t id : served) EXPECT_FALSE(id > f[0] && id <= f[2]) << id;
}

TEST(TinyidRoutesNoTokensTest, WithoutATokenTableEveryTokenIsRefused) {
  auto node = ServeNode::start(Services::get().make_dir("tinyid-none"), {});
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  HttpClient http((*node)->http_port());
  Result<HttpReply> r = http.get("/tinyid/id/nextId?bizType=pay&token=x", std::chrono::seconds(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, R"({"data":null,"code":5,"message":"token is error"})");
}

}  // namespace
}  // namespace idforge::integration
