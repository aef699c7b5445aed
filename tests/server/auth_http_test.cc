// Tokens and limits on the HTTP routes (server/http/http_auth.h): 401 and 403 with their
// WWW-Authenticate challenges for each route's scope, the routes that need no token,
// the admin token beside the tokens file, Tinyid's ?token=, 429 for each limit, a
// token revoked by a reload on an open connection, and the metrics.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "log/log.h"
#include "server/auth/auth.h"
#include "server/http/http_session.h"
#include "server/http_test_support.h"
#include "server/net/access_log.h"

namespace idforge::server::http_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kAll = "all-scopes-secret-0001";
constexpr std::string_view kOrder = "order-only-secret-0002";
constexpr std::string_view kSnowflake = "snowflake-secret-00003";
constexpr std::string_view kUuid = "uuid-only-secret-000004";
constexpr std::string_view kMetrics = "metrics-only-secret-005";
constexpr std::string_view kAdmin = "admin-only-secret-00006";

std::string tokens_text() {
  return fmt::format(
      "{} * name=all\n{} segment:order name=order-app\n{} snowflake name=sf\n{} uuid name=uu\n"
      "{} metrics name=prom\n{} admin name=ops\n",
      kAll, kOrder, kSnowflake, kUuid, kMetrics, kAdmin);
}

std::string bearer(std::string_view secret) {
  return "Authorization: Bearer " + std::string(secret) + "\r\n";
}

class AuthHttpTest : public HttpServiceTest {
 protected:
  void SetUp() override {
    HttpServiceTest::SetUp();
    create_tag("order");
    create_tag("other");
    use_tokens(tokens_text());
  }
  void use_tokens(std::string_view text, ConnectionLimits limits = {}) {
    Result<std::shared_ptr<Auth>> auth = Auth::from_text(text, "tokens");
    ASSERT_TRUE(auth.ok()) << auth.status().to_string();
    auth_ = *auth;
    HttpOptions options;
    options.auth = auth_;
    options.limits = limits;
    factory_ = make_http_session_factory(*service_, options);
  }
  Response with(std::string_view target, std::string_view secret) {
    return one(get(target, bearer(secret)));
  }
  uint64_t failures(AuthFailure reason) { return service_->metrics().auth_failures(0, reason); }

  std::shared_ptr<Auth> auth_;
};

// Every route that needs a token, with a token that has its scope and one that has not.
struct RouteCase {
  std::string target;
  std::string_view allowed;
  std::string_view denied;
  std::string scope;  // in the 403's challenge
};
const std::vector<RouteCase> kRouteCases = {
    {"/v1/snowflake", kSnowflake, kOrder, "snowflake"},
    {"/api/snowflake/get/x", kSnowflake, kUuid, "snowflake"},
    {"/v1/segment/order", kOrder, kSnowflake, "segment:order"},
    {"/v1/segment/other", kAll, kOrder, "segment:other"},
    {"/v1/serial/order", kOrder, kUuid, "segment:order"},
    {"/api/segment/get/order", kOrder, kUuid, "segment:order"},
    {"/tinyid/id/nextIdSimple?bizType=order", kOrder, kSnowflake, "segment:order"},
    {"/tinyid/id/nextSegmentId?bizType=other", kAll, kOrder, "segment:other"},
    {"/v1/uuid7", kUuid, kSnowflake, "uuid"},
    {"/v1/ulid", kUuid, kOrder, "uuid"},
    {"/metrics", kMetrics, kUuid, "metrics"},
    {"/v1/status", kAdmin, kOrder, "metrics"},  // admin implies metrics
    {"/v1/admin/tags", kAdmin, kMetrics, "admin"},
};

TEST_F(AuthHttpTest, NoTokenIs401WithABearerChallengeOnEveryRouteButHealthAndThePage) {
  for (const RouteCase& c : kRouteCases) {
    Response r = one_get(c.target);
    EXPECT_EQ(r.status, 401) << c.target;
    EXPECT_EQ(r.header("www-authenticate"), "Bearer") << c.target;
    EXPECT_EQ(r.error_code(), "unauthorized") << c.target;
    // Another scheme is no bearer token either.
    EXPECT_EQ(one(get(c.target, "Authorization: Basic " + std::string(kAll) + "\r\n")).status, 401);
  }
  for (std::string_view target :
       {"/v1/decode/910499571847892992", "/v1/compose?time=2026-11-22T10:00:00Z"}) {
    EXPECT_EQ(one_get(target).status, 401) << target;
  }
  EXPECT_EQ(failures(AuthFailure::kMissing), 2 * kRouteCases.size() + 2);
  EXPECT_EQ(one_get("/healthz").status, 200);
  EXPECT_NE(one_get("/readyz").status, 401);
  EXPECT_EQ(one_get("/").status, 200);
  EXPECT_EQ(one_get("/app.js").status, 200);
  EXPECT_EQ(one_get("/nosuch").status, 404);
}

TEST_F(AuthHttpTest, AWrongTokenIs401InvalidToken) {
  // A prefix of a token, a token and more, a short guess.
  for (std::string_view wrong : {"all-scopes-secret-000", "all-scopes-secret-00011", "x"}) {
    Response r = with("/v1/snowflake", wrong);
    EXPECT_EQ(r.status, 401) << wrong;
    EXPECT_EQ(r.error_code(), "unauthorized");
    EXPECT_EQ(r.header("www-authenticate"), "Bearer error=\"invalid_token\"") << wrong;
    EXPECT_THAT(r.body, Not(HasSubstr(std::string(wrong) + "\""))) << wrong;
  }
  EXPECT_EQ(failures(AuthFailure::kWrong), 3u);
  EXPECT_EQ(service_->metrics().requests(0, Route::kSnowflake, 401), 3u);
}

TEST_F(AuthHttpTest, EachRouteWantsItsScope) {
  for (const RouteCase& c : kRouteCases) {
    Response ok = with(c.target, c.allowed);
    EXPECT_NE(ok.status, 401) << c.target << " " << ok.body;
    EXPECT_NE(ok.status, 403) << c.target << " " << ok.body;
    Response denied = with(c.target, c.denied);
    EXPECT_EQ(denied.status, 403) << c.target;
    EXPECT_EQ(denied.error_code(), "forbidden") << c.target;
    EXPECT_EQ(denied.header("www-authenticate"),
              "Bearer error=\"insufficient_scope\", scope=\"" + c.scope + "\"")
        << c.target;
    EXPECT_THAT(denied.json()["error"]["message"].get<std::string>(), HasSubstr(c.scope));
    EXPECT_THAT(denied.body, Not(HasSubstr(c.denied)));
  }
  EXPECT_EQ(failures(AuthFailure::kScope), kRouteCases.size());
  // The IDs themselves: the right token gets them.
  EXPECT_EQ(ids_of(with("/v1/segment/order?count=2", kOrder)).size(), 2u);
  // Decode and compose want a token, any token.
  for (std::string_view secret : {kOrder, kUuid, kMetrics}) {
    EXPECT_EQ(with("/v1/decode/910499571847892992", secret).status, 200) << secret;
    EXPECT_EQ(with("/v1/compose?time=2026-11-22T10:00:00Z", secret).status, 200) << secret;
  }
  // A tag that is no plain text stays out of the header (it would split it).
  Response odd = with("/v1/segment/a%0D%0Ab", kOrder);
  EXPECT_EQ(odd.status, 403);
  EXPECT_EQ(odd.header("www-authenticate"), "Bearer error=\"insufficient_scope\"");
}

TEST_F(AuthHttpTest, TinyidTakesTheTokenAsAQueryParameterToo) {
  Response ids =
      one_get("/tinyid/id/nextIdSimple?bizType=order&batchSize=2&token=" + std::string(kOrder));
  EXPECT_EQ(ids.status, 200);
  EXPECT_EQ(ids.body, "1001,1002");
  EXPECT_EQ(one_get("/tinyid/id/nextId?bizType=other&token=" + std::string(kOrder)).status, 403);
  EXPECT_EQ(one_get("/tinyid/id/nextId?bizType=order&token=not-a-token-at-all").status, 401);
  EXPECT_EQ(one_get("/tinyid/id/nextId?bizType=order").status, 401);
}

TEST_F(AuthHttpTest, TheAdminTokenStillOpensTheAdminRoutesOnly) {
  start("the-admin-token");
  create_tag("order");
  use_tokens(tokens_text());
  EXPECT_EQ(with("/v1/admin/tags", "the-admin-token").status, 200);
  EXPECT_EQ(with("/v1/admin/tags", kAdmin).status, 200);
  EXPECT_EQ(with("/v1/admin/tags", kOrder).status, 403);
  EXPECT_EQ(with("/v1/admin/tags", "the-admin-tokeN").status, 401);
  EXPECT_EQ(with("/v1/snowflake", "the-admin-token").status, 401);  // separate from tokens
}

TEST_F(AuthHttpTest, RateIs429WithRetryAfter) {
  use_tokens(fmt::format("{} * rate=0.001 burst=2 name=slow\n{} * name=free\n", kAll, kOrder));
  EXPECT_EQ(with("/v1/uuid7", kAll).status, 200);
  EXPECT_EQ(with("/v1/uuid7", kAll).status, 200);
  Response r = with("/v1/uuid7", kAll);  // a new connection: the bucket is the token's
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.error_code(), "too_many_requests");
  EXPECT_EQ(r.json()["error"]["limit"], "rate");
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("token 'slow'"));
  EXPECT_EQ(r.header("retry-after"), "1000");        // one request per 1000 s
  EXPECT_EQ(with("/v1/uuid7", kOrder).status, 200);  // another token has its own
  EXPECT_EQ(service_->metrics().limit_refusals(0, Limit::kRate, false), 1u);
  EXPECT_EQ(service_->metrics().requests(0, Route::kUuid7, 429), 1u);
}

TEST_F(AuthHttpTest, MaxIdsIs429NamingTheLimit) {
  use_tokens(fmt::format("{} * max_ids=5 name=small\n", kAll));
  EXPECT_EQ(ids_of(with("/v1/snowflake?count=5", kAll)).size(), 5u);
  Response r = with("/v1/snowflake?count=6", kAll);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.json()["error"]["limit"], "max_ids");
  EXPECT_EQ(r.header("retry-after"), "");
  EXPECT_EQ(with("/tinyid/id/nextIdSimple?bizType=order&batchSize=6", kAll).status, 429);
  EXPECT_EQ(with("/v1/segment/order?count=6", kAll).status, 429);
  EXPECT_EQ(with("/api/segment/get/order", kAll).status, 200);
  EXPECT_EQ(service_->metrics().limit_refusals(0, Limit::kMaxIds, false), 3u);
}

TEST_F(AuthHttpTest, InFlightCountsARequestUntilItsJobHasAnswered) {
  use_tokens(fmt::format("{} * in_flight=1 name=one\n", kAll));
  // The tag's first request waits on the store: a job, not run yet.
  std::unique_ptr<Session> waiting = factory_();
  std::string out;
  const std::string request = get("/v1/segment/order", bearer(kAll));
  Session::Step step = waiting->feed(request, out);
  ASSERT_EQ(step.next, Next::kBlocking);

  Response busy = with("/v1/uuid7", kAll);  // another connection, the same token
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.json()["error"]["limit"], "in_flight");
  EXPECT_EQ(busy.header("retry-after"), "");

  step.blocking(out);  // the first answers, and gives its place back
  EXPECT_THAT(out, HasSubstr("1001"));
  EXPECT_EQ(with("/v1/uuid7", kAll).status, 200);
  EXPECT_EQ(with("/v1/uuid7", kAll).status, 200);  // an inline answer holds no place after
  EXPECT_EQ(service_->metrics().limit_refusals(0, Limit::kInFlight, false), 1u);
}

TEST_F(AuthHttpTest, AConnectionsRateCountsEveryRequestOnIt) {
  use_tokens(tokens_text(), ConnectionLimits{0.001, 2});
  std::unique_ptr<Session> session = factory_();
  Driven d = drive(*session, get("/healthz") + get("/v1/uuid7", bearer(kUuid)) + get("/healthz"));
  ASSERT_EQ(d.responses.size(), 3u);
  EXPECT_EQ(d.responses[0].status, 200);
  EXPECT_EQ(d.responses[1].status, 200);
  EXPECT_EQ(d.responses[2].status, 429);
  EXPECT_EQ(d.responses[2].json()["error"]["limit"], "rate");
  EXPECT_THAT(d.responses[2].json()["error"]["message"].get<std::string>(),
              HasSubstr("this connection"));
  EXPECT_EQ(one_get("/healthz").status, 200);  // another connection
  EXPECT_EQ(service_->metrics().limit_refusals(0, Limit::kRate, true), 1u);
}

TEST_F(AuthHttpTest, AConnectionRateWorksWithoutTokens) {
  HttpOptions options;
  options.limits = ConnectionLimits{0.001, 1};
  factory_ = make_http_session_factory(*service_, options);
  std::unique_ptr<Session> session = factory_();
  Driven d = drive(*session, get("/v1/snowflake") + get("/v1/snowflake"));
  ASSERT_EQ(d.responses.size(), 2u);
  EXPECT_EQ(d.responses[0].status, 200);  // no token needed without a tokens file
  EXPECT_EQ(d.responses[1].status, 429);
}

TEST_F(AuthHttpTest, ATokenRemovedByAReloadStopsWorkingOnAnOpenConnection) {
  std::unique_ptr<Session> session = factory_();
  Driven before = drive(*session, get("/v1/segment/order", bearer(kOrder)));
  ASSERT_EQ(before.responses.size(), 1u);
  EXPECT_EQ(before.responses[0].status, 200);
  ASSERT_TRUE(auth_->replace(fmt::format("{} * name=all\n", kAll)).ok());
  Driven after = drive(
      *session, get("/v1/segment/order", bearer(kOrder)) + get("/v1/segment/order", bearer(kAll)));
  ASSERT_EQ(after.responses.size(), 2u);
  EXPECT_EQ(after.responses[0].status, 401);
  EXPECT_EQ(after.responses[1].status, 200);
}

TEST_F(AuthHttpTest, MetricsCountRefusalsAndTokensButNeverASecret) {
  one_get("/v1/snowflake");
  with("/v1/snowflake", "not-a-token-at-all");
  with("/v1/snowflake", kOrder);
  Response metrics = with("/metrics", kMetrics);
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("idforge_tokens 6\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_token_refusals_total{token=\"order-app\",reason=\"scope\"} 1\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_token_refusals_total{token=\"sf\",reason=\"rate\"} 0\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_auth_failures_total{protocol=\"http\",reason=\"missing\"} 1\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_auth_failures_total{protocol=\"http\",reason=\"wrong\"} 1\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_auth_failures_total{protocol=\"http\",reason=\"scope\"} 1\n"));
  EXPECT_THAT(metrics.body, HasSubstr("idforge_limit_refusals_total{protocol=\"resp\",limit="
                                      "\"rate\",scope=\"connection\"} 0\n"));
  EXPECT_THAT(metrics.body,
              HasSubstr("idforge_requests_total{protocol=\"http\",route=\"snowflake\","
                        "status=\"403\"} 1\n"));
  for (std::string_view secret : {kAll, kOrder, kSnowflake, kUuid, kMetrics, kAdmin}) {
    EXPECT_THAT(metrics.body, Not(HasSubstr(secret)));
  }
  Response status = with("/v1/status", kMetrics);
  for (std::string_view secret : {kAll, kOrder, kMetrics}) {
    EXPECT_THAT(status.body, Not(HasSubstr(secret)));
  }
}

TEST_F(AuthHttpTest, TheAccessLogNamesTheTokenAndNeverItsSecret) {
  std::vector<std::string> lines;
  log::set_writer_for_testing([&lines](log::Level, std::string_view line) {
    if (line.find(" access ") != std::string_view::npos) lines.emplace_back(line);
  });
  AccessLog access(1);  // every request
  std::unique_ptr<Session> session = factory_();
  session->set_access_log(&access);
  drive(*session, get("/v1/uuid7", bearer(kUuid)) + get("/v1/snowflake", bearer(kUuid)) +
                      get("/v1/segment/order", bearer(kOrder)) + get("/healthz"));
  log::set_writer_for_testing(nullptr);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("token=uu"));
  EXPECT_THAT(lines[1], HasSubstr("status=403"));
  EXPECT_THAT(lines[1], HasSubstr("token=uu"));         // refused, and who was
  EXPECT_THAT(lines[2], HasSubstr("token=order-app"));  // answered by a job
  EXPECT_THAT(lines[3], Not(HasSubstr("token=")));
  for (const std::string& line : lines) {
    for (std::string_view secret : {kUuid, kOrder}) EXPECT_THAT(line, Not(HasSubstr(secret)));
  }
}

TEST_F(AuthHttpTest, WithoutTokensNothingChanges) {
  factory_ = make_http_session_factory(*service_);
  EXPECT_EQ(one_get("/v1/snowflake").status, 200);
  EXPECT_EQ(one_get("/metrics").status, 200);
  EXPECT_EQ(with("/v1/uuid7", "anything-at-all-here").status, 200);
  EXPECT_EQ(one_get("/v1/admin/tags").status, 404);  // no admin token, no tokens file
}

}  // namespace
}  // namespace idforge::server::http_test
