// The tokens file and the token table (server/auth/auth.h, server/auth/auth_tokens.h): parsing and
// its errors, scopes, lookup, reload, and the limits (rate on a hand-driven clock,
// in_flight, max_ids). No sleeps, no timing.
#include "server/auth/auth.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "log/log.h"
#include "server/auth/auth_tokens.h"
#include "server/auth/rate_limit.h"

namespace idforge::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr std::string_view kSecretA = "alpha-secret-0123456789";
constexpr std::string_view kSecretB = "bravo-secret-0123456789";

std::shared_ptr<Auth> auth_of(std::string_view text) {
  Result<std::shared_ptr<Auth>> auth = Auth::from_text(text, "tokens.txt");
  EXPECT_TRUE(auth.ok()) << auth.status().to_string();
  return auth.ok() ? std::move(auth).value() : nullptr;
}

const TokenSpec* spec_of(const Auth& auth, std::string_view secret) {
  const std::shared_ptr<const TokenTable> table = auth.table();
  const Token* token = table->find_secret(secret);
  return token != nullptr ? &token->spec : nullptr;  // the Auth keeps the table alive
}

TEST(AuthTokensTest, ParsesScopesOptionsAndDefaults) {
  std::shared_ptr<Auth> auth = auth_of(
      "# the test's tokens\n"
      "\n"
      "alpha-secret-0123456789 snowflake,segment:order name=ci rate=2.5 max_ids=100 in_flight=4\n"
      "  bravo-secret-0123456789\tmetrics   # a comment after the token\n"
      "charlie-secret-0123456789 * rate=10 burst=3\r\n");
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->token_count(), 3u);

  const TokenSpec* a = spec_of(*auth, kSecretA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "ci");
  EXPECT_EQ(a->line, 3u);
  EXPECT_TRUE(a->scopes.snowflake);
  EXPECT_EQ(a->scopes.segments, std::vector<std::string>{"order"});
  EXPECT_DOUBLE_EQ(a->limits.rate, 2.5);
  EXPECT_EQ(a->limits.burst, 2u);  // max(1, rate) when not given
  EXPECT_EQ(a->limits.max_ids, 100u);
  EXPECT_EQ(a->limits.in_flight, 4u);

  const TokenSpec* b = spec_of(*auth, kSecretB);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name, "line4");  // no name=: its line
  EXPECT_TRUE(b->scopes.metrics);
  EXPECT_EQ(b->limits.rate, 0);
  EXPECT_EQ(b->limits.burst, 0u);

  const TokenSpec* c = spec_of(*auth, "charlie-secret-0123456789");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->scopes.everything);
  EXPECT_EQ(c->limits.burst, 3u);
}

TEST(AuthTokensTest, AHashInsideASecretIsPartOfIt) {
  // Only a word that begins with '#' starts a comment: a secret is never cut short.
  std::shared_ptr<Auth> auth = auth_of("hash#in-the-secret-0123 uuid\n#whole-line comment\n");
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->token_count(), 1u);
  EXPECT_NE(spec_of(*auth, "hash#in-the-secret-0123"), nullptr);
  EXPECT_EQ(spec_of(*auth, "hash"), nullptr);
}

TEST(AuthTokensTest, EveryErrorNamesFileAndLineAndNeverTheSecret) {
  struct Case {
    std::string line;
    std::string secret;  // must not appear in the error
    std::string says;    // what the error says is wrong
  };
  const std::vector<Case> cases = {
      {"delta-secret-0123456789 snowflake,bogus", "delta-secret-0123456789",
       "unknown scope 'bogus'"},
      {"delta-secret-0123456789 snowflake,,uuid", "delta-secret-0123456789", "empty scope"},
      {"delta-secret-0123456789 segment:bad/tag", "delta-secret-0123456789", "segment:bad/tag"},
      {"short-secret snowflake", "short-secret", "shorter than 16"},
      {"delta-secret-\x01-0123456789 snowflake", "delta-secret-\x01-0123456789", "printable ASCII"},
      {"delta-secret-0123456789", "delta-secret-0123456789", "no scopes"},
      {"delta-secret-0123456789 name=x", "delta-secret-0123456789", "no scopes"},
      {"delta-secret-0123456789 uuid colour=red", "delta-secret-0123456789",
       "unknown option 'colour'"},
      {"delta-secret-0123456789 uuid rate=fast", "delta-secret-0123456789", "rate="},
      {"delta-secret-0123456789 uuid rate=0", "delta-secret-0123456789", "rate="},
      {"delta-secret-0123456789 uuid rate=1 burst=0", "delta-secret-0123456789", "burst="},
      {"delta-secret-0123456789 uuid burst=5", "delta-secret-0123456789", "burst= needs rate="},
      {"delta-secret-0123456789 uuid max_ids=-1", "delta-secret-0123456789", "max_ids="},
      {"delta-secret-0123456789 uuid in_flight=x", "delta-secret-0123456789", "in_flight="},
      {"delta-secret-0123456789 uuid name=a name=b", "delta-secret-0123456789", "given twice"},
      {"delta-secret-0123456789 uuid name=bad/name", "delta-secret-0123456789", "name="},
      {"delta-secret-0123456789 uuid stray", "delta-secret-0123456789", "not an option"},
      {std::string(kSecretA) + " uuid", std::string(kSecretA), "the same secret as line 2"},
      {"delta-secret-0123456789 uuid name=first", "delta-secret-0123456789", "already used"},
  };
  for (const Case& c : cases) {
    // Line 2 holds a good token named "first", line 3 a comment: the bad line is line 4.
    const std::string text = "\n" + std::string(kSecretA) + " snowflake name=first\n# x\n" + c.line;
    Result<std::shared_ptr<Auth>> auth = Auth::from_text(text, "/etc/idforge/tokens");
    ASSERT_FALSE(auth.ok()) << c.line;
    EXPECT_EQ(auth.status().code(), StatusCode::kInvalidArgument) << c.line;
    const std::string message = auth.status().message();
    EXPECT_THAT(message, StartsWith("/etc/idforge/tokens:4: ")) << c.line;
    EXPECT_THAT(message, HasSubstr(c.says)) << c.line;
    EXPECT_THAT(message, Not(HasSubstr(c.secret))) << c.line;
    EXPECT_THAT(message, Not(HasSubstr(kSecretA))) << c.line;
    EXPECT_THAT(auth.status().to_string(), Not(HasSubstr(c.secret))) << c.line;
  }
}

TEST(AuthTokensTest, ScopesAllowWhatTheyName) {
  auto scopes_of = [](std::string_view list) {
    std::shared_ptr<Auth> auth = auth_of("echo-secret-0123456789 " + std::string(list));
    const TokenSpec* spec = auth ? spec_of(*auth, "echo-secret-0123456789") : nullptr;
    return spec != nullptr ? spec->scopes : TokenScopes{};
  };
  const TokenScopes everything = scopes_of("*");
  for (Need need : {Need::kSnowflake, Need::kUuid, Need::kSegment, Need::kMetrics, Need::kAdmin}) {
    EXPECT_TRUE(everything.allows(need, "any-tag")) << scope_name(need, "any-tag");
  }
  const TokenScopes order = scopes_of("segment:order,uuid");
  EXPECT_TRUE(order.allows(Need::kSegment, "order"));
  EXPECT_FALSE(order.allows(Need::kSegment, "orders"));
  EXPECT_FALSE(order.allows(Need::kSegment, "orde"));
  EXPECT_TRUE(order.allows(Need::kUuid));
  EXPECT_FALSE(order.allows(Need::kSnowflake));
  EXPECT_FALSE(order.allows(Need::kMetrics));
  EXPECT_TRUE(order.allows(Need::kAnyToken));
  EXPECT_TRUE(scopes_of("segment:*").allows(Need::kSegment, "whatever"));
  EXPECT_FALSE(scopes_of("segment:*").allows(Need::kSnowflake));
  const TokenScopes admin = scopes_of("admin");
  EXPECT_TRUE(admin.allows(Need::kAdmin));
  EXPECT_TRUE(admin.allows(Need::kMetrics));  // admin implies metrics
  EXPECT_FALSE(admin.allows(Need::kSnowflake));
  EXPECT_FALSE(scopes_of("metrics").allows(Need::kAdmin));
  EXPECT_EQ(scope_name(Need::kSegment, "order"), "segment:order");
}

TEST(AuthTokensTest, LookupFindsTheRightTokenAmongManyAndNothingElse) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += fmt::format("token-number-{:04}-abcdef uuid name=t{}\n", i, i);
  std::shared_ptr<Auth> auth = auth_of(text);
  ASSERT_NE(auth, nullptr);
  const std::shared_ptr<const TokenTable> table = auth->table();
  for (int i : {0, 1, 99, 137, 199}) {
    const Token* token = table->find_secret(fmt::format("token-number-{:04}-abcdef", i));
    ASSERT_NE(token, nullptr) << i;
    EXPECT_EQ(token->spec.name, fmt::format("t{}", i));
  }
  EXPECT_EQ(table->find_secret("token-number-0137-abcde"), nullptr);    // a prefix
  EXPECT_EQ(table->find_secret("token-number-0137-abcdefg"), nullptr);  // longer
  EXPECT_EQ(table->find_secret("token-number-0137-abcdeF"), nullptr);   // one byte off
  EXPECT_EQ(table->find_secret(""), nullptr);
  EXPECT_EQ(table->find_secret("token-number-0200-abcdef"), nullptr);
}

TEST(AuthTokensTest, AnEmptyFileHasNoTokensAndAdmitsNothing) {
  std::shared_ptr<Auth> auth = auth_of("# nothing yet\n");
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->token_count(), 0u);
  AuthView view(auth);
  EXPECT_EQ(view.find(kSecretA), nullptr);
}

class AuthReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "idforge-auth-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/tokens";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(std::string_view text) { std::ofstream(path_, std::ios::trunc) << text; }

  std::string dir_;
  std::string path_;
};

TEST_F(AuthReloadTest, ReloadReplacesTokensAndRevokesRemovedOnesOnOpenViews) {
  write(std::string(kSecretA) + " snowflake name=a\n" + std::string(kSecretB) + " uuid name=b\n");
  Result<std::shared_ptr<Auth>> loaded = Auth::load(path_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  std::shared_ptr<Auth> auth = *loaded;
  AuthView connection(auth);  // a connection that authenticated before the reload
  ASSERT_NE(connection.authenticate(kSecretA), nullptr);
  EXPECT_EQ(connection.token()->spec.name, "a");
  const uint64_t before = auth->generation();

  // a stays with another scope, b goes, c comes.
  write(std::string(kSecretA) + " segment:order name=a\ncharlie-secret-0123456789 uuid name=c\n");
  ASSERT_TRUE(auth->reload().ok());
  EXPECT_NE(auth->generation(), before);
  EXPECT_EQ(auth->token_count(), 2u);
  ASSERT_NE(connection.token(), nullptr);
  EXPECT_TRUE(connection.token()->spec.scopes.allows(Need::kSegment, "order"));
  EXPECT_FALSE(connection.token()->spec.scopes.allows(Need::kSnowflake));
  AuthView fresh(auth);
  EXPECT_EQ(fresh.find(kSecretB), nullptr);
  EXPECT_NE(fresh.find("charlie-secret-0123456789"), nullptr);

  // a goes too: the open connection's token stops working at once.
  write("charlie-secret-0123456789 uuid name=c\n");
  ASSERT_TRUE(auth->reload().ok());
  EXPECT_EQ(connection.token(), nullptr);
  // ... and stays revoked even if the secret comes back: the connection must AUTH again.
  write(std::string(kSecretA) + " snowflake name=a\n");
  ASSERT_TRUE(auth->reload().ok());
  EXPECT_EQ(connection.token(), nullptr);
  EXPECT_NE(connection.authenticate(kSecretA), nullptr);
}

// An HTTP connection's view keeps the last secret it found (AuthView::find): the same
// secret again is the same token, a near miss is still refused, and a reload that removed
// or changed the token is seen at the next request.
TEST_F(AuthReloadTest, AKeptSecretFollowsReloads) {
  write(std::string(kSecretA) + " snowflake name=a\n");
  std::shared_ptr<Auth> auth = Auth::load(path_).value();
  AuthView connection(auth);
  ASSERT_NE(connection.find(kSecretA), nullptr);
  ASSERT_NE(connection.find(kSecretA), nullptr);  // the kept one
  std::string near(kSecretA);
  near.back() ^= 1;
  EXPECT_EQ(connection.find(near), nullptr);
  EXPECT_EQ(connection.find(std::string(kSecretA) + "x"), nullptr);
  EXPECT_EQ(connection.find(std::string(kSecretA).substr(1)), nullptr);
  EXPECT_EQ(connection.find(""), nullptr);

  write(std::string(kSecretA) + " uuid name=a2\n");
  ASSERT_TRUE(auth->reload().ok());
  const Token* changed = connection.find(kSecretA);
  ASSERT_NE(changed, nullptr);
  EXPECT_EQ(changed->spec.name, "a2");
  EXPECT_FALSE(changed->spec.scopes.allows(Need::kSnowflake));

  write(std::string(kSecretB) + " uuid name=b\n");
  ASSERT_TRUE(auth->reload().ok());
  EXPECT_EQ(connection.find(kSecretA), nullptr);
  EXPECT_NE(connection.find(kSecretB), nullptr);
}

TEST_F(AuthReloadTest, AFailedReloadKeepsTheOldTokensAndNamesTheLine) {
  write(std::string(kSecretA) + " snowflake\n");
  std::shared_ptr<Auth> auth = Auth::load(path_).value();
  AuthView view(auth);
  const uint64_t generation = auth->generation();
  write(std::string(kSecretB) + " uuid\n" + std::string(kSecretA) + " snowflake,nonsense\n");
  const Status reloaded = auth->reload();
  EXPECT_EQ(reloaded.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reloaded.message(), StartsWith(path_ + ":2: unknown scope 'nonsense'"));
  EXPECT_THAT(reloaded.message(), Not(HasSubstr(kSecretA)));
  EXPECT_EQ(auth->generation(), generation);
  EXPECT_EQ(auth->token_count(), 1u);
  EXPECT_NE(view.find(kSecretA), nullptr);
  EXPECT_EQ(view.find(kSecretB), nullptr);

  std::filesystem::remove(path_);
  EXPECT_THAT(auth->reload().message(), HasSubstr("cannot read the tokens file"));
  EXPECT_NE(view.find(kSecretA), nullptr);
  EXPECT_FALSE(Auth::load(path_).ok());
  // Tokens given as text have no file to re-read.
  EXPECT_FALSE(auth_of(std::string(kSecretA) + " uuid")->reload().ok());
}

// The file holds secrets: a mode that lets others read it is a warning at each read (the
// tokens still load), naming the file and the fix and never a secret.
TEST_F(AuthReloadTest, AFileOthersMayReadIsAWarningAtEachRead) {
  std::vector<std::string> lines;
  log::set_writer_for_testing([&lines](log::Level level, std::string_view line) {
    if (level == log::Level::kWarn) lines.emplace_back(line);
  });
  write(std::string(kSecretA) + " snowflake\n");
  std::filesystem::permissions(
      path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  Result<std::shared_ptr<Auth>> auth = Auth::load(path_);
  ASSERT_TRUE(auth.ok()) << auth.status().to_string();
  EXPECT_TRUE(lines.empty()) << lines.front();  // 0600: nothing to say

  std::filesystem::permissions(
      path_, std::filesystem::perms::group_read | std::filesystem::perms::others_read,
      std::filesystem::perm_options::add);
  ASSERT_TRUE((*auth)->reload().ok());
  EXPECT_TRUE(Auth::load(path_).ok());
  log::set_writer_for_testing(nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("tokens.file_readable file=" + path_ + " mode=0644"));
  EXPECT_THAT(lines[0], HasSubstr("fix=\"chmod 600 " + path_ + "\""));
  EXPECT_THAT(lines[0], Not(HasSubstr(kSecretA)));
}

TEST(RateLimiterTest, ABucketOfBurstRefillsAtTheRate) {
  RateLimiter bucket;
  constexpr int64_t kSecond = 1'000'000'000;
  // 2 per second, a burst of 3: three at once, then one every 500 ms.
  EXPECT_EQ(bucket.acquire(2, 3, 0), 0);
  EXPECT_EQ(bucket.acquire(2, 3, 0), 0);
  EXPECT_EQ(bucket.acquire(2, 3, 0), 0);
  EXPECT_EQ(bucket.acquire(2, 3, 0), kSecond / 2);  // refused: half a second to wait
  EXPECT_EQ(bucket.acquire(2, 3, kSecond / 4), kSecond / 4);
  EXPECT_EQ(bucket.acquire(2, 3, kSecond / 2), 0);
  EXPECT_GT(bucket.acquire(2, 3, kSecond / 2), 0);
  // After a long pause the bucket is full again, never fuller.
  const int64_t later = 100 * kSecond;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.acquire(2, 3, later), 0) << i;
  EXPECT_GT(bucket.acquire(2, 3, later), 0);
  // Rate 0 is no limit.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(bucket.acquire(0, 0, 0), 0);
  EXPECT_EQ(RateLimiter::effective_burst(0.5, 0), 1u);
  EXPECT_EQ(RateLimiter::effective_burst(20, 0), 20u);
}

TEST(AuthLimitsTest, RateOfATokenIsSharedAndKeptAcrossAReload) {
  std::shared_ptr<Auth> auth = auth_of(std::string(kSecretA) + " * rate=1 burst=2 name=a\n");
  int64_t now = 5'000'000'000;
  auth->set_clock([&now] { return now; });
  AuthView one(auth);
  AuthView two(auth);
  InFlight ticket;
  EXPECT_FALSE(admit(*auth, *one.find(kSecretA), 1, &ticket));
  EXPECT_FALSE(admit(*auth, *two.find(kSecretA), 1, &ticket));
  std::optional<Refusal> refused = admit(*auth, *one.find(kSecretA), 1, &ticket);
  ASSERT_TRUE(refused);  // two connections drew on one bucket of 2
  EXPECT_EQ(refused->limit, Limit::kRate);
  EXPECT_EQ(refused->retry_after_ns, 1'000'000'000);
  EXPECT_THAT(refused->message, HasSubstr("token 'a' may send 1 requests per second (burst 2)"));
  EXPECT_THAT(refused->message, Not(HasSubstr(kSecretA)));
  // A reload that keeps the secret keeps the bucket: still empty.
  ASSERT_TRUE(auth->replace(std::string(kSecretA) + " * rate=1 burst=2 name=a\n").ok());
  EXPECT_TRUE(admit(*auth, *one.find(kSecretA), 1, &ticket));
  now += 1'000'000'000;
  EXPECT_FALSE(admit(*auth, *one.find(kSecretA), 1, &ticket));
}

TEST(AuthLimitsTest, InFlightCountsRequestsUntilTheirTicketsAreGivenBack) {
  std::shared_ptr<Auth> auth = auth_of(std::string(kSecretA) + " * in_flight=2 name=a\n");
  AuthView view(auth);
  const Token& token = *view.find(kSecretA);
  InFlight first, second, third;
  EXPECT_FALSE(admit(*auth, token, 1, &first));
  EXPECT_FALSE(admit(*auth, token, 1, &second));
  EXPECT_TRUE(first.holds());
  std::optional<Refusal> refused = admit(*auth, token, 1, &third);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->limit, Limit::kInFlight);
  EXPECT_FALSE(third.holds());
  EXPECT_EQ(token.state->in_flight.load(), 2u);  // the refused one took no place

  first.release();
  EXPECT_FALSE(admit(*auth, token, 1, &third));
  {
    InFlight moved = std::move(second);  // a job takes the ticket with it
    EXPECT_FALSE(second.holds());
    EXPECT_TRUE(admit(*auth, token, 1, &first));
  }  // the job is gone: its place is given back
  EXPECT_EQ(token.state->in_flight.load(), 1u);
  // A reload that keeps the secret keeps the count of requests under way.
  ASSERT_TRUE(auth->replace(std::string(kSecretA) + " * in_flight=1 name=a\n").ok());
  EXPECT_TRUE(admit(*auth, *view.find(kSecretA), 1, &first));
  third.release();
  EXPECT_FALSE(admit(*auth, *view.find(kSecretA), 1, &first));
}

TEST(AuthLimitsTest, MaxIdsBoundsOneRequest) {
  std::shared_ptr<Auth> auth = auth_of(std::string(kSecretA) + " * max_ids=100 name=a\n");
  AuthView view(auth);
  InFlight ticket;
  EXPECT_FALSE(admit(*auth, *view.find(kSecretA), 100, &ticket));
  EXPECT_FALSE(admit(*auth, *view.find(kSecretA), 0, &ticket));
  std::optional<Refusal> refused = admit(*auth, *view.find(kSecretA), 101, &ticket);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->limit, Limit::kMaxIds);
  EXPECT_EQ(limit_name(refused->limit), "max_ids");
  EXPECT_THAT(refused->message, HasSubstr("at most 100 IDs"));
}

TEST(AuthLimitsTest, AConnectionsRateNamesTheConnection) {
  RateLimiter bucket;
  const ConnectionLimits limits{1, 0};  // burst 0: max(1, rate) = 1
  EXPECT_FALSE(admit_connection(bucket, limits, 0));
  std::optional<Refusal> refused = admit_connection(bucket, limits, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->limit, Limit::kRate);
  EXPECT_THAT(refused->message, StartsWith("this connection may send 1 requests per second"));
  EXPECT_FALSE(admit_connection(bucket, ConnectionLimits{}, 0));  // off
}

}  // namespace
}  // namespace idforge::server
