// The log of a real `idforge serve` through real faults (docs/operations.md, "Logs"):
// each change of state is logged once, with its fields, however often the failure
// behind it repeats. Redis comes from scripts/test-services (a private server per test,
// stopped at the end); the clock is moved with libfaketime, as the torture run does.
//
// Each test takes a few seconds: a TTL of 3 s and a store probe every 2 s set the pace.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.h"
#include "support/faketime.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::e2e {
namespace {

using test::trim;

using Clock = std::chrono::steady_clock;

std::string script(const std::string& name) {
  return std::string(IDFORGE_SCRIPTS_DIR) + "/" + name;
}

// A private Redis of the test's own (scripts/test-services start redis DIR), stopped
// with the object; a watchdog stops it if the test binary dies first.
class TestRedis {
 public:
  TestRedis() : dir_("idforge-log-redis") {}
  ~TestRedis() {
    if (!url_.empty()) run({"stop", server_dir()});
  }
  TestRedis(const TestRedis&) = delete;
  TestRedis& operator=(const TestRedis&) = delete;

  // Starts it; "" on success, else why not.
  std::string start() {
    RunResult r = run({"start", "redis", server_dir(), "--owner", std::to_string(::getpid())});
    if (r.exit_code != 0) return "test-services start redis: " + r.summary();
    url_ = trim(r.out);
    return "";
  }
  const std::string& url() const { return url_; }
  // SIGSTOP / SIGCONT: a hung server whose port still accepts connections.
  bool pause() { return run({"pause", server_dir()}).exit_code == 0; }
  bool resume() { return run({"resume", server_dir()}).exit_code == 0; }
  // SIGKILL, and back with its data on the same port.
  bool kill() { return run({"kill", server_dir()}).exit_code == 0; }
  bool restart() {
    return run({"restart", server_dir(), "--owner", std::to_string(::getpid())}).exit_code == 0;
  }

 private:
  std::string server_dir() const { return dir_.path() + "/redis"; }
  static RunResult run(std::vector<std::string> args) {
    args.insert(args.begin(), script("test-services"));
    return run_program(args, {}, milliseconds(30'000));
  }

  TempDir dir_;
  std::string url_;
};

// The lines of `event` that are not a count of repeats (repeats=N window_s=S).
std::vector<LogLine> firsts(const std::vector<LogLine>& lines) {
  std::vector<LogLine> out;
  for (const LogLine& l : lines) {
    if (!l.has("repeats")) out.push_back(l);
  }
  return out;
}
std::vector<LogLine> counts(const std::vector<LogLine>& lines) {
  std::vector<LogLine> out;
  for (const LogLine& l : lines) {
    if (l.has("repeats")) out.push_back(l);
  }
  return out;
}

// Where `event` first appears among all the log lines; -1 when it does not.
int position(const std::vector<LogLine>& all, std::string_view event) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].event == event) return static_cast<int>(i);
  }
  return -1;
}

std::string dump(const ServeProcess& server) { return "\n--- stderr:\n" + server.stderr_text(); }

// A Redis registry frozen for longer than the lease's TTL: the renewals fail (one line,
// then a count), the keeper fences the generator before the TTL ends, the lease is
// found lost once Redis answers again, and a new one replaces it.
TEST(ServeLogTest, AFrozenRegistryLogsTheFailingRenewalOnceThenFencedLostAndReplaced) {
  TestRedis redis;
  ASSERT_EQ(redis.start(), "");
  ServeOptions options;
  // ttl 3 s: renew every 1 s, retry every 300 ms, a command times out after 1.5 s; the
  // keeper fences 1.85 s after the last renewal it sent (logical, Redis: max_drift_ms
  // earlier).
  options.flags = {"--registry", redis.url() + "?ttl_ms=3000"};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
  ASSERT_EQ(server->log_lines("lease.acquired").size(), 1U) << dump(*server);

  ASSERT_TRUE(redis.pause());
  const Clock::time_point paused = Clock::now();
  EXPECT_TRUE(server->wait_for_log("lease.fenced", milliseconds(8'000))) << dump(*server);
  // Past the TTL, so Redis expires the key the moment it runs again.
  std::this_thread::sleep_until(paused + milliseconds(5'000));
  ASSERT_TRUE(redis.resume());
  EXPECT_TRUE(server->wait_for_log("lease.replaced", milliseconds(10'000))) << dump(*server);
  EXPECT_EQ(server->stop(), 0) << dump(*server);

  const std::vector<LogLine> all = server->log_lines();
  // The renewal failed several times and said so once, then once with the count.
  const std::vector<LogLine> failed = server->log_lines("lease.renew_failed");
  ASSERT_EQ(firsts(failed).size(), 1U) << dump(*server);
  const LogLine first = firsts(failed)[0];
  EXPECT_EQ(first.level, "warn");
  EXPECT_EQ(first.get("slot"), "0");
  EXPECT_EQ(first.get("registry").rfind("redis://127.0.0.1:", 0), 0U) << first.raw;
  EXPECT_FALSE(first.get("error").empty()) << first.raw;
  EXPECT_GE(first.number("since_renew_ms"), 0) << first.raw;
  EXPECT_GT(first.number("fence_after_ms"), 0) << first.raw;
  ASSERT_EQ(counts(failed).size(), 1U) << dump(*server);
  EXPECT_GE(counts(failed)[0].number("repeats"), 1) << counts(failed)[0].raw;
  EXPECT_GE(counts(failed)[0].number("window_s"), 1) << counts(failed)[0].raw;

  // Fenced once, lost once, replaced once: each with its fields, in that order.
  const std::vector<LogLine> fenced = server->log_lines("lease.fenced");
  ASSERT_EQ(fenced.size(), 1U) << dump(*server);
  EXPECT_EQ(fenced[0].level, "error");
  EXPECT_EQ(fenced[0].get("slot"), "0");
  EXPECT_NE(fenced[0].get("reason").find("not renewed for"), std::string::npos) << fenced[0].raw;
  const std::vector<LogLine> lost = server->log_lines("lease.lost");
  ASSERT_EQ(lost.size(), 1U) << dump(*server);
  EXPECT_EQ(lost[0].level, "error");
  EXPECT_EQ(lost[0].get("slot"), "0");
  EXPECT_FALSE(lost[0].get("error").empty());
  const std::vector<LogLine> replaced = server->log_lines("lease.replaced");
  ASSERT_EQ(replaced.size(), 1U) << dump(*server);
  EXPECT_EQ(replaced[0].level, "info");
  EXPECT_EQ(replaced[0].get("old_slot"), "0");
  EXPECT_GE(replaced[0].number("slot"), 0);
  EXPECT_EQ(replaced[0].get("leases_taken"), "2");
  // The new lease was acquired (a second lease.acquired) and released at the end.
  EXPECT_EQ(server->log_lines("lease.acquired").size(), 2U) << dump(*server);
  EXPECT_EQ(server->log_lines("lease.released").size(), 1U) << dump(*server);
  EXPECT_LT(position(all, "lease.renew_failed"), position(all, "lease.fenced"));
  EXPECT_LT(position(all, "lease.fenced"), position(all, "lease.lost"));
  EXPECT_LT(position(all, "lease.lost"), position(all, "lease.replaced"));
  // A lost lease is not "unfenced": the old generator stays fenced for good.
  EXPECT_TRUE(server->log_lines("lease.unfenced").empty()) << dump(*server);
}

// A segment store killed and restarted: down once (the probes every 2 s that keep
// failing are counted, not logged), up once; the restarted Redis is a new history,
// which the failover guard logs once as it moves the tags forward.
TEST(ServeLogTest, AKilledSegmentStoreIsLoggedDownOnceAndUpOnce) {
  TestRedis redis;
  ASSERT_EQ(redis.start(), "");
  ServeOptions options;
  options.setup = {{"tag", "create", "order", "--store", redis.url()}};
  options.flags = {"--store", redis.url()};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
  ASSERT_EQ(server->http("/v1/segment/order?count=3").status, 200) << dump(*server);
  EXPECT_TRUE(server->log_lines("store.down").empty()) << dump(*server);

  ASSERT_TRUE(redis.kill());
  EXPECT_TRUE(server->wait_for_log("store.down", milliseconds(6'000))) << dump(*server);
  // Two more probes fail meanwhile: counted, not written.
  std::this_thread::sleep_for(milliseconds(4'500));
  EXPECT_EQ(server->log_lines("store.down").size(), 1U) << dump(*server);
  ASSERT_TRUE(redis.restart());
  EXPECT_TRUE(server->wait_for_log("store.up", milliseconds(6'000))) << dump(*server);
  EXPECT_EQ(server->http("/v1/segment/order?count=3").status, 200) << dump(*server);
  EXPECT_EQ(server->stop(), 0) << dump(*server);

  const std::vector<LogLine> down = server->log_lines("store.down");
  ASSERT_EQ(firsts(down).size(), 1U) << dump(*server);
  EXPECT_EQ(firsts(down)[0].level, "warn");
  EXPECT_EQ(firsts(down)[0].get("store").rfind("redis://127.0.0.1:", 0), 0U) << down[0].raw;
  EXPECT_FALSE(firsts(down)[0].get("error").empty()) << down[0].raw;
  // The count of the probes that failed after the first, written as the store came back.
  ASSERT_EQ(counts(down).size(), 1U) << dump(*server);
  EXPECT_GE(counts(down)[0].number("repeats"), 1);
  const std::vector<LogLine> up = server->log_lines("store.up");
  ASSERT_EQ(up.size(), 1U) << dump(*server);
  EXPECT_EQ(up[0].level, "info");
  EXPECT_EQ(up[0].get("store"), firsts(down)[0].get("store"));
  EXPECT_GE(up[0].number("failures"), 2) << up[0].raw;
  EXPECT_GE(up[0].number("down_ms"), 3'000) << up[0].raw;
  // The restarted Redis is another history: the guard moved the tags on, once.
  const std::vector<LogLine> changed = server->log_lines("store.history_changed");
  ASSERT_EQ(changed.size(), 1U) << dump(*server);
  EXPECT_NE(changed[0].get("from"), changed[0].get("to")) << changed[0].raw;
  EXPECT_GT(changed[0].number("margin"), 0) << changed[0].raw;
  const std::vector<LogLine> all = server->log_lines();
  EXPECT_LT(position(all, "store.down"), position(all, "store.up"));
}

// A server whose wall clock is its real one moved by the offset in a file, which
// libfaketime reads again every second (the monotonic clock stays real, as under an
// NTP step).
class FakedClock {
 public:
  FakedClock() : dir_("idforge-log-clock") { set_offset_s(0); }
  void set_offset_s(int seconds) {
    test_support::write_file_atomically(path(),
                                        test_support::faketime_offset_text(seconds * 1000LL));
  }
  std::vector<std::string> env() const { return test_support::faketime_env(path()); }

 private:
  std::string path() const { return dir_.path() + "/offset"; }
  TempDir dir_;
};

// A server on `clock`. scripts/install-deps installs libfaketime: a machine without it
// fails rather than skips.
void start_under(const FakedClock& clock, std::unique_ptr<ServeProcess>& server) {
  ASSERT_FALSE(test_support::faketime_library().empty())
      << "libfaketime not installed (package faketime)";
  ServeOptions options;
  options.env = clock.env();
  std::string error;
  server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
}

// Asks for Snowflake IDs every 50 ms (the generator only sees the clock when it issues)
// until `event` is logged; false after `timeout`.
bool request_until_logged(ServeProcess& server, std::string_view event, milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    server.http("/v1/snowflake");
    if (!server.log_lines(event).empty()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

// The clock set back 3 s under the logical policy (1 s of drift allowed): one line when
// the generator sees it, saying what the policy does, and one when the clock caught up,
// saying what it did (requests refused meanwhile).
TEST(ServeLogTest, AClockSetBackLogsThePolicysActionOnceAndTheCatchUpOnce) {
  FakedClock clock;
  std::unique_ptr<ServeProcess> server;
  ASSERT_NO_FATAL_FAILURE(start_under(clock, server));
  ASSERT_EQ(server->http("/v1/snowflake").status, 200) << dump(*server);

  clock.set_offset_s(-3);
  EXPECT_TRUE(request_until_logged(*server, "clock.set_back", milliseconds(5'000)))
      << dump(*server);
  // Still behind: more requests, no more lines. A batch that needs more than the last
  // tick's sequences would run more than max_drift_ms ahead of the clock: refused.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(server->http("/v1/snowflake?count=5000").status, 503) << dump(*server);
  }
  clock.set_offset_s(0);
  EXPECT_TRUE(request_until_logged(*server, "clock.caught_up", milliseconds(5'000)))
      << dump(*server);
  EXPECT_EQ(server->stop(), 0) << dump(*server);

  const std::vector<LogLine> back = server->log_lines("clock.set_back");
  ASSERT_EQ(back.size(), 1U) << dump(*server);
  EXPECT_EQ(back[0].level, "warn");
  EXPECT_EQ(back[0].get("policy"), "logical");
  EXPECT_GE(back[0].number("behind_ms"), 1'500) << back[0].raw;
  EXPECT_EQ(back[0].get("max_drift_ms"), "1000");
  EXPECT_NE(back[0].get("action").find("up to max_drift_ms ahead of the clock"), std::string::npos)
      << back[0].raw;
  const std::vector<LogLine> caught_up = server->log_lines("clock.caught_up");
  ASSERT_EQ(caught_up.size(), 1U) << dump(*server);
  EXPECT_EQ(caught_up[0].level, "info");
  EXPECT_GE(caught_up[0].number("steps"), 1);
  EXPECT_GE(caught_up[0].number("failed_requests"), 5) << caught_up[0].raw;  // beyond the drift
  EXPECT_GE(caught_up[0].number("took_ms"), 0);
  const std::vector<LogLine> all = server->log_lines();
  EXPECT_LT(position(all, "clock.set_back"), position(all, "clock.caught_up"));
}

// A forward jump past max_clock_step_ms (10 s): not followed, logged once, and its end.
TEST(ServeLogTest, AClockJumpIsLoggedOnceAndItsEndOnce) {
  FakedClock clock;
  std::unique_ptr<ServeProcess> server;
  ASSERT_NO_FATAL_FAILURE(start_under(clock, server));

  clock.set_offset_s(60);
  EXPECT_TRUE(request_until_logged(*server, "clock.jumped", milliseconds(5'000))) << dump(*server);
  for (int i = 0; i < 5; ++i) server->http("/v1/snowflake");
  clock.set_offset_s(0);
  EXPECT_TRUE(request_until_logged(*server, "clock.jump_ended", milliseconds(5'000)))
      << dump(*server);
  EXPECT_EQ(server->stop(), 0) << dump(*server);

  const std::vector<LogLine> jumped = server->log_lines("clock.jumped");
  ASSERT_EQ(jumped.size(), 1U) << dump(*server);
  EXPECT_EQ(jumped[0].level, "warn");
  EXPECT_GE(jumped[0].number("ahead_ms"), 40'000) << jumped[0].raw;
  EXPECT_EQ(jumped[0].get("max_clock_step_ms"), "10000");
  EXPECT_NE(jumped[0].get("action").find("trusted time"), std::string::npos) << jumped[0].raw;
  const std::vector<LogLine> ended = server->log_lines("clock.jump_ended");
  ASSERT_EQ(ended.size(), 1U) << dump(*server);
  EXPECT_GE(ended[0].number("jumps"), 1);
  // The wall clock ran ahead of the IDs' time: no false "ran out" meanwhile.
  EXPECT_TRUE(server->log_lines("reservation.ran_out").empty()) << dump(*server);
}

// The admin routes log what they changed, and the sampled access log shows requests
// without their Authorization header or query string.
TEST(ServeLogTest, TagChangesAreLoggedAndTheAccessLogShowsNoSecret) {
  ServeOptions options;
  options.flags = {"--access-log-sample", "1"};
  options.env = {"IDFORGE_ADMIN_TOKEN=s3cret-token"};
  std::string error;
  std::unique_ptr<ServeProcess> server = ServeProcess::start(options, &error);
  ASSERT_NE(server, nullptr) << error;
  const std::vector<std::string> auth = {"-H", "Authorization: Bearer s3cret-token", "-H",
                                         "Content-Type: application/json"};
  std::vector<std::string> create = auth;
  create.insert(create.end(),
                {"-X", "POST", "--data", R"({"tag":"order","step":500,"start":"10"})"});
  EXPECT_EQ(server->http("/v1/admin/tags", create).status, 201) << dump(*server);
  std::vector<std::string> step = auth;
  step.insert(step.end(), {"-X", "PUT", "--data", R"({"step":2000})"});
  EXPECT_EQ(server->http("/v1/admin/tags/order/step", step).status, 200) << dump(*server);
  EXPECT_EQ(server->http("/v1/segment/order?count=2&token=query-s3cret").status, 200);
  EXPECT_EQ(server->redis({"ID.NEXT", "order", "2"}).exit_code, 0);
  EXPECT_EQ(server->stop(), 0) << dump(*server);

  const std::vector<LogLine> created = server->log_lines("tag.created");
  ASSERT_EQ(created.size(), 1U) << dump(*server);
  EXPECT_EQ(created[0].get("tag"), "order");
  EXPECT_EQ(created[0].get("start"), "10");
  EXPECT_EQ(created[0].get("step"), "500");
  const std::vector<LogLine> stepped = server->log_lines("tag.step_changed");
  ASSERT_EQ(stepped.size(), 1U) << dump(*server);
  EXPECT_EQ(stepped[0].get("step"), "2000");

  const std::vector<LogLine> access = server->log_lines("access");
  ASSERT_EQ(access.size(), 4U) << dump(*server);
  EXPECT_EQ(access[0].get("method"), "POST");
  EXPECT_EQ(access[0].get("path"), "/v1/admin/tags");
  EXPECT_EQ(access[0].get("status"), "201");
  EXPECT_EQ(access[2].get("path"), "/v1/segment/order");
  EXPECT_GE(access[2].number("duration_us"), 0);
  EXPECT_EQ(access[3].get("proto"), "resp");
  EXPECT_EQ(access[3].get("command"), "id.next");
  EXPECT_EQ(server->stderr_text().find("s3cret"), std::string::npos) << dump(*server);
}

}  // namespace
}  // namespace idforge::e2e
