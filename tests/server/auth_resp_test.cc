// Tokens and limits over RESP (server/resp/resp_auth.cc): Redis 7's NOAUTH, WRONGPASS and
// NOPERM in Redis's order, AUTH and HELLO AUTH, MULTI with a command outside the
// token's scope, a token revoked (the connection closed) or narrowed by a reload on an
// open connection, the limits, and AUTH without tokens. The texts are those of a real
// redis-server 7.0 (tests/redis_clients/auth_compare.sh checks them against one).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "log/log.h"
#include "server/auth/auth.h"
#include "server/net/access_log.h"
#include "server/resp/resp_session.h"
#include "server/resp_test_support.h"

namespace idforge::server {
namespace {

using resp_test::Driven;
using resp_test::pairs_of;
using resp_test::replies_of;
using resp_test::Reply;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Next = Session::Next;

constexpr std::string_view kAll = "all-scopes-secret-0001";
constexpr std::string_view kOrder = "order-only-secret-0002";

constexpr std::string_view kNoAuth = "-NOAUTH Authentication required.\r\n";
constexpr std::string_view kWrongPass =
    "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
constexpr std::string_view kNoPermKey =
    "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n";
constexpr std::string_view kHelloNoAuth =
    "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "AUTH <user> <pass> option can be used to authenticate the client and select the RESP "
    "protocol version at the same time\r\n";

std::string noperm_command(std::string_view name) {
  return fmt::format("-NOPERM this user has no permissions to run the '{}' command\r\n", name);
}

class AuthRespTest : public resp_test::RespSessionFixture {
 protected:
  void SetUp() override {
    RespSessionFixture::SetUp();
    use_tokens(fmt::format("{} * name=all\n{} segment:order name=order-app\n", kAll, kOrder));
  }
  void use_tokens(std::string_view text, ConnectionLimits limits = {}) {
    Result<std::shared_ptr<Auth>> auth = Auth::from_text(text, "tokens");
    ASSERT_TRUE(auth.ok()) << auth.status().to_string();
    auth_ = *auth;
    RespOptions options;
    options.auth = auth_;
    options.limits = limits;
    factory_ = make_resp_session_factory(*service_, options);
    session_ = factory_();
  }
  std::string auth_line(std::string_view secret) { return "AUTH " + std::string(secret) + "\r\n"; }
  uint64_t failures(AuthFailure reason) { return service_->metrics().auth_failures(1, reason); }

  std::shared_ptr<Auth> auth_;
};

TEST_F(AuthRespTest, BeforeAuthEveryCommandButAuthHelloAndQuitIsNoauth) {
  for (std::string_view command :
       {"PING\r\n", "INCR order\r\n", "ID.SNOWFLAKE\r\n", "ID.DECODE 1\r\n", "INFO\r\n",
        "MULTI\r\n", "CLIENT ID\r\n", "SELECT 0\r\n", "COMMAND\r\n", "GET order\r\n"}) {
    EXPECT_EQ(send(std::string(command)).out, kNoAuth) << command;
  }
  // As Redis: an unknown command and a wrong arity are answered before NOAUTH.
  EXPECT_THAT(send("NOSUCH\r\n").out, StartsWith("-ERR unknown command 'NOSUCH'"));
  EXPECT_EQ(send("ECHO\r\n").out, "-ERR wrong number of arguments for 'echo' command\r\n");
  EXPECT_EQ(send("EXEC\r\n").out,
            "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n");
  EXPECT_EQ(send("HELLO\r\n").out, kHelloNoAuth);
  EXPECT_EQ(send("HELLO 3 SETNAME app\r\n").out, kHelloNoAuth);
  EXPECT_EQ(send("HELLO 4\r\n").out, "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(failures(AuthFailure::kMissing), 13u);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSnowflake), 0u);
  Driven quit = send("QUIT\r\n");
  EXPECT_EQ(quit.out, "+OK\r\n");
  EXPECT_TRUE(quit.closed);
}

TEST_F(AuthRespTest, AuthAnswersOkOrWrongpassAndIgnoresTheUserName) {
  EXPECT_EQ(send("AUTH not-a-token-at-all\r\n").out, kWrongPass);
  EXPECT_EQ(send("AUTH default not-a-token-at-all\r\n").out, kWrongPass);
  EXPECT_EQ(send("PING\r\n").out, kNoAuth);
  EXPECT_EQ(send("AUTH\r\n").out, "-ERR wrong number of arguments for 'auth' command\r\n");
  EXPECT_EQ(send("AUTH a b c\r\n").out, "-ERR syntax error\r\n");
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");
  EXPECT_EQ(send("PING\r\n").out, "+PONG\r\n");
  // A wrong AUTH later leaves the connection as it was, as in Redis.
  EXPECT_EQ(send("AUTH not-a-token-at-all\r\n").out, kWrongPass);
  EXPECT_EQ(send("ID.SNOWFLAKE\r\n").out.front(), ':');
  // AUTH USER SECRET: any user name.
  EXPECT_EQ(send("AUTH someone " + std::string(kOrder) + "\r\n").out, "+OK\r\n");
  EXPECT_EQ(send("ID.SNOWFLAKE\r\n").out, noperm_command("id.snowflake"));
  EXPECT_EQ(failures(AuthFailure::kWrong), 3u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kRespOther, 401), 4u);  // 3 WRONGPASS + PING
}

TEST_F(AuthRespTest, HelloAuthAuthenticatesAndAWrongOneKeepsTheProtocol) {
  EXPECT_EQ(send("HELLO 3 AUTH default wrong-secret-0123456789\r\n").out, kWrongPass);
  EXPECT_EQ(send("PING\r\n").out, kNoAuth);
  EXPECT_EQ(send("HELLO 3 AUTH default\r\n").out, "-ERR Syntax error in HELLO option 'AUTH'\r\n");
  Reply three = ask_one("HELLO 3 AUTH default " + std::string(kAll) + " SETNAME app\r\n");
  ASSERT_EQ(three.type, '%');
  EXPECT_EQ(pairs_of(three)[2], std::make_pair(std::string("proto"), std::string("3")));
  EXPECT_EQ(send("CLIENT GETNAME\r\n").out, "$3\r\napp\r\n");

  // A wrong secret does not switch the protocol of a connection that authenticated.
  session_ = factory_();
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");
  EXPECT_EQ(send("HELLO 3 AUTH u wrong-secret-0123456789\r\n").out, kWrongPass);
  EXPECT_EQ(ask_one("HELLO\r\n").type, '*');  // still RESP2
}

TEST_F(AuthRespTest, CommandsOutsideTheScopeAreNoperm) {
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  EXPECT_EQ(send("INCR order\r\n").out, ":1001\r\n");
  EXPECT_EQ(send("INCRBY order 2\r\n").out, ":1003\r\n");
  EXPECT_EQ(send("INCR tiny\r\n").out, kNoPermKey);
  EXPECT_EQ(send("INCRBY tiny 2\r\n").out, kNoPermKey);
  EXPECT_EQ(send("ID.NEXT tiny 2\r\n").out, kNoPermKey);
  EXPECT_EQ(send("ID.SNOWFLAKE\r\n").out, noperm_command("id.snowflake"));
  EXPECT_EQ(send("id.uuid7 2\r\n").out, noperm_command("id.uuid7"));
  EXPECT_EQ(send("ID.ULID\r\n").out, noperm_command("id.ulid"));
  EXPECT_EQ(send("INFO\r\n").out, noperm_command("info"));
  // What any token may do.
  EXPECT_EQ(send("PING\r\n").out, "+PONG\r\n");
  EXPECT_EQ(ask_one("ID.DECODE 910499571847892992\r\n").type, '*');
  EXPECT_EQ(ask_one("CLIENT ID\r\n").type, ':');
  EXPECT_EQ(failures(AuthFailure::kScope), 7u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 403), 3u);
  EXPECT_EQ(service_->metrics().ids(IdKind::kSnowflake), 0u);
}

TEST_F(AuthRespTest, MultiChecksEachCommandWhenQueuedAndExecAborts) {
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  Driven run = send("MULTI\r\nINCR order\r\nID.SNOWFLAKE\r\nINCR tiny\r\nEXEC\r\nINCR order\r\n");
  std::vector<Reply> r = replies_of(run.out);
  ASSERT_EQ(r.size(), 6u) << run.out;
  EXPECT_EQ(r[0].text, "OK");
  EXPECT_EQ(r[1].text, "QUEUED");
  EXPECT_EQ(r[2].text, "NOPERM this user has no permissions to run the 'id.snowflake' command");
  EXPECT_EQ(r[3].text,
            "NOPERM this user has no permissions to access one of the keys used as arguments");
  EXPECT_EQ(r[4].text, "EXECABORT Transaction discarded because of previous errors.");
  EXPECT_EQ(r[5].text, "1001");  // nothing of the transaction ran
}

// As Redis closes the connections of a deleted user, a connection whose token a reload
// removed is closed at its next command, unanswered; pipelined commands after it are not
// run. A connection that authenticates again first goes on with the new token.
TEST_F(AuthRespTest, ARevokedTokensConnectionIsClosedAtItsNextCommand) {
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  EXPECT_EQ(send("INCR order\r\n").out, ":1001\r\n");
  std::unique_ptr<Session> other = factory_();
  EXPECT_EQ(resp_test::drive(*other, auth_line(kOrder)).out, "+OK\r\n");
  ASSERT_TRUE(auth_->replace(fmt::format("{} * name=all\n", kAll)).ok());
  const uint64_t wrong_before = failures(AuthFailure::kWrong);
  resp_test::Driven closed = send("INCR order\r\nPING\r\n");
  EXPECT_TRUE(closed.closed);
  EXPECT_EQ(closed.out, "");
  EXPECT_EQ(failures(AuthFailure::kWrong), wrong_before + 1);

  resp_test::Driven again = resp_test::drive(*other, auth_line(kOrder) + auth_line(kAll));
  EXPECT_EQ(again.out, std::string(kWrongPass) + "+OK\r\n");
  EXPECT_EQ(resp_test::drive(*other, "INCR order\r\n").out, ":1002\r\n");
}

TEST_F(AuthRespTest, AScopeTakenAwayBetweenQueueAndExecIsNopermInTheAnswer) {
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  EXPECT_EQ(send("INCR order\r\n").out, ":1001\r\n");
  std::vector<Reply> queued = replies_of(send("MULTI\r\nINCR order\r\nPING\r\n").out);
  ASSERT_EQ(queued.size(), 3u);
  ASSERT_TRUE(auth_->replace(fmt::format("{} segment:tiny name=order-app\n", kOrder)).ok());
  Reply exec = ask_one("EXEC\r\n");
  ASSERT_EQ(exec.type, '*');
  ASSERT_EQ(exec.items.size(), 2u);
  EXPECT_EQ(exec.items[0].text,
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and "
            "the EXEC call. This command is no longer allowed for the following reason: no "
            "permission to touch the specified keys");
  EXPECT_EQ(exec.items[1].text, "PONG");
  EXPECT_EQ(send("INCR tiny\r\n").out.front(), ':');
}

TEST_F(AuthRespTest, TokenLimitsAnswerErrorsNamingTheLimit) {
  use_tokens(
      fmt::format("{} * rate=0.001 burst=3 name=slow\n{} * max_ids=5 name=small\n", kAll, kOrder));
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");  // AUTH draws on no token's bucket
  EXPECT_EQ(send("PING\r\nPING\r\nPING\r\n").out, "+PONG\r\n+PONG\r\n+PONG\r\n");
  EXPECT_THAT(send("PING\r\n").out,
              StartsWith("-ERR rate: token 'slow' may send 0.001 requests per second (burst 3)"));
  EXPECT_THAT(send("MULTI\r\nEXEC\r\n").out,
              HasSubstr("-EXECABORT Transaction discarded because of: ERR rate: token 'slow'"));

  session_ = factory_();
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  EXPECT_EQ(ask_one("ID.NEXT order 5\r\n").items.size(), 5u);
  EXPECT_THAT(send("ID.NEXT order 6\r\n").out, StartsWith("-ERR max_ids: token 'small' may ask"));
  EXPECT_THAT(send("INCRBY order 6\r\n").out, StartsWith("-ERR max_ids: "));
  // A transaction is bounded as one request.
  std::vector<Reply> r =
      replies_of(send("MULTI\r\nID.NEXT order 3\r\nID.NEXT order 3\r\nEXEC\r\n").out);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[1].text, "QUEUED");
  EXPECT_THAT(r[2].text, StartsWith("ERR max_ids: token 'small'"));
  EXPECT_EQ(r[3].text, "EXECABORT Transaction discarded because of previous errors.");
  EXPECT_EQ(service_->metrics().limit_refusals(1, Limit::kRate, false), 3u);  // PING, MULTI, EXEC
  EXPECT_EQ(service_->metrics().limit_refusals(1, Limit::kMaxIds, false), 3u);
}

// The limits' clock is read for a token with a rate and for no other (admit): a
// clock read per command was 4% of the server's CPU at pipeline 16 (docs/benchmarks.md).
TEST_F(AuthRespTest, OnlyATokenWithARateReadsTheClock) {
  use_tokens(fmt::format("{} * name=free\n{} * rate=1000 name=paced\n", kAll, kOrder));
  int reads = 0;
  auth_->set_clock([&reads] {
    ++reads;
    return int64_t{1'000'000'000};
  });
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");
  EXPECT_EQ(send("PING\r\nINCR order\r\nID.SNOWFLAKE\r\n").out.substr(0, 7), "+PONG\r\n");
  EXPECT_EQ(reads, 0);

  session_ = factory_();
  EXPECT_EQ(send(auth_line(kOrder)).out, "+OK\r\n");
  EXPECT_EQ(send("PING\r\nPING\r\n").out, "+PONG\r\n+PONG\r\n");
  EXPECT_EQ(reads, 2);
}

TEST_F(AuthRespTest, InFlightHoldsACommandUntilItsJobHasAnswered) {
  use_tokens(fmt::format("{} * in_flight=1 name=one\n", kAll));
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");
  std::unique_ptr<Session> other = factory_();
  EXPECT_EQ(resp_test::drive(*other, auth_line(kAll)).out, "+OK\r\n");
  // The tag's first request waits on the store: a job, not run yet.
  std::string out;
  Session::Step step = session_->feed("INCR order\r\n", out);
  ASSERT_EQ(step.next, Next::kBlocking);
  EXPECT_EQ(resp_test::drive(*other, "PING\r\n").out,
            "-ERR in_flight: token 'one' may have at most 1 requests being answered at once\r\n");
  step.blocking(out);
  EXPECT_EQ(out, ":1001\r\n");
  EXPECT_EQ(resp_test::drive(*other, "PING\r\nPING\r\n").out, "+PONG\r\n+PONG\r\n");
  EXPECT_EQ(service_->metrics().limit_refusals(1, Limit::kInFlight, false), 1u);
}

TEST_F(AuthRespTest, AConnectionsRateCountsEveryCommandButQuit) {
  use_tokens(fmt::format("{} * name=all\n", kAll), ConnectionLimits{0.001, 2});
  EXPECT_EQ(send(auth_line(kAll)).out, "+OK\r\n");
  EXPECT_EQ(send("PING\r\n").out, "+PONG\r\n");
  EXPECT_THAT(send("PING\r\n").out, StartsWith("-ERR rate: this connection may send 0.001"));
  EXPECT_THAT(send(auth_line(kAll)).out, StartsWith("-ERR rate: this connection"));
  EXPECT_EQ(resp_test::drive(*factory_(), "PING\r\n").out, kNoAuth);  // its own bucket
  Driven quit = send("QUIT\r\n");
  EXPECT_EQ(quit.out, "+OK\r\n");
  EXPECT_EQ(service_->metrics().limit_refusals(1, Limit::kRate, true), 2u);
}

TEST_F(AuthRespTest, TheAccessLogAndMetricsNameTheTokenAndNeverItsSecret) {
  std::vector<std::string> lines;
  log::set_writer_for_testing([&lines](log::Level, std::string_view line) {
    if (line.find(" access ") != std::string_view::npos) lines.emplace_back(line);
  });
  AccessLog access(1);  // every command
  session_->set_access_log(&access);
  send("PING\r\n" + auth_line(kOrder) + "INCR order\r\nID.SNOWFLAKE\r\n");
  log::set_writer_for_testing(nullptr);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], Not(HasSubstr("token=")));  // not authenticated yet
  EXPECT_THAT(lines[1], HasSubstr("command=auth"));
  EXPECT_THAT(lines[2], HasSubstr("token=order-app"));  // answered by a job
  EXPECT_THAT(lines[3], HasSubstr("status=403"));
  EXPECT_THAT(lines[3], HasSubstr("token=order-app"));
  for (const std::string& line : lines) EXPECT_THAT(line, Not(HasSubstr(kOrder)));
  const std::string metrics = service_->metrics().render(*service_);
  EXPECT_THAT(metrics, HasSubstr("idforge_tokens 2\n"));
  EXPECT_THAT(metrics,
              HasSubstr("idforge_token_refusals_total{token=\"order-app\",reason=\"scope\"} 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("idforge_auth_failures_total{protocol=\"resp\",reason=\"missing\"} 1\n"));
  EXPECT_THAT(metrics, Not(HasSubstr(kOrder)));
  EXPECT_THAT(metrics, Not(HasSubstr(kAll)));
}

TEST_F(AuthRespTest, WithoutTokensAuthIsRefusedInRedissWordsAndNothingElseChanges) {
  RespOptions options;
  factory_ = make_resp_session_factory(*service_, options);
  session_ = factory_();
  EXPECT_EQ(send("AUTH some-secret\r\n").out,
            "-ERR AUTH <password> called without any password configured for the default user. "
            "Are you sure your configuration is correct?\r\n");
  EXPECT_EQ(send("AUTH default some-secret\r\n").out, kWrongPass);
  EXPECT_EQ(send("HELLO 3 AUTH default some-secret\r\n").out, kWrongPass);
  EXPECT_EQ(ask_one("HELLO\r\n").type, '*');  // the failed HELLO 3 switched nothing
  EXPECT_EQ(send("AUTH\r\n").out, "-ERR wrong number of arguments for 'auth' command\r\n");
  EXPECT_EQ(send("INCR order\r\nPING\r\n").out, ":1001\r\n+PONG\r\n");
  EXPECT_EQ(ask_one("ID.SNOWFLAKE\r\n").type, ':');
  EXPECT_EQ(failures(AuthFailure::kWrong), 0u);  // nothing to fail against
}

}  // namespace
}  // namespace idforge::server
