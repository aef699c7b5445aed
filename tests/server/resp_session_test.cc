// The RESP session against a real IdService (SQLite store, static worker id) in a
// temporary directory, driven with plain strings as the network runtime would.
#include "server/resp/resp_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/resp_test_support.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Next = Session::Next;

using resp_test::drive;
using resp_test::drive_byte_by_byte;
using resp_test::Driven;
using resp_test::pairs_of;
using resp_test::replies_of;
using resp_test::Reply;

class RespSessionTest : public resp_test::RespSessionFixture {};

TEST_F(RespSessionTest, PingEchoAndCaseInsensitiveNames) {
  EXPECT_EQ(send("PING\r\n").out, "+PONG\r\n");
  EXPECT_EQ(send("*2\r\n$4\r\nping\r\n$5\r\nhello\r\n").out, "$5\r\nhello\r\n");
  EXPECT_EQ(send("pInG\r\n").out, "+PONG\r\n");
  EXPECT_EQ(send("ECHO \"a b\"\r\n").out, "$3\r\na b\r\n");
}

TEST_F(RespSessionTest, IncrHandsOutTheTagsNextNumbers) {
  // The first request of a tag must ask the store: a kBlocking step that answers it.
  Session::Step step;
  std::string out;
  const std::string first = "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n";
  step = session_->feed(first, out);
  ASSERT_EQ(step.next, Next::kBlocking);
  EXPECT_EQ(step.consumed, first.size());
  EXPECT_EQ(out, "");
  step.blocking(out);
  EXPECT_EQ(out, ":1001\r\n");

  // Then the buffer answers at once.
  out.clear();
  step = session_->feed("INCR order\r\nincr order\n", out);
  EXPECT_EQ(step.next, Next::kNeedMore);
  EXPECT_EQ(out, ":1002\r\n:1003\r\n");
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 3u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 200), 3u);
}

TEST_F(RespSessionTest, IdNextWithAndWithoutCount) {
  Reply five = ask_one("ID.NEXT order 5\r\n");
  ASSERT_EQ(five.type, '*');
  std::vector<uint64_t> ids;
  for (const Reply& r : five.items) {
    ASSERT_EQ(r.type, ':');
    ids.push_back(r.number());
  }
  EXPECT_THAT(ids, ElementsAre(1001, 1002, 1003, 1004, 1005));
  EXPECT_EQ(send("ID.NEXT order\r\n").out, ":1006\r\n");
  EXPECT_EQ(send("ID.NEXT order 1\r\n").out, "*1\r\n:1007\r\n");
}

TEST_F(RespSessionTest, RequestsLargerThanTheBufferWaitForTheRest) {
  // Step 3: five IDs span two segments or more; the answer holds them all, in order.
  std::vector<uint64_t> ids;
  for (const char* cmd : {"ID.NEXT tiny 2\r\n", "ID.NEXT tiny 5\r\n", "ID.NEXT tiny 7\r\n"}) {
    Reply r = ask_one(cmd);
    ASSERT_EQ(r.type, '*') << r.text;
    for (const Reply& item : r.items) ids.push_back(item.number());
  }
  std::vector<uint64_t> want(14);
  for (size_t i = 0; i < want.size(); ++i) want[i] = i + 1;
  EXPECT_EQ(ids, want);
  // Counted once, by the service, however they were fetched.
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 14u);
}

TEST_F(RespSessionTest, ABlockingCommandIsTheLastOneAFeedHandles) {
  std::string out;
  const std::string in = "INCR order\r\nPING\r\n";
  Session::Step step = session_->feed(in, out);
  ASSERT_EQ(step.next, Next::kBlocking);
  EXPECT_EQ(step.consumed, std::string("INCR order\r\n").size());
  EXPECT_EQ(out, "");  // PING not answered ahead of INCR
  step.blocking(out);
  step = session_->feed(std::string_view(in).substr(step.consumed), out);
  EXPECT_EQ(step.next, Next::kNeedMore);
  EXPECT_EQ(out, ":1001\r\n+PONG\r\n");
}

TEST_F(RespSessionTest, SnowflakesAreDistinctIncreasingAndCarryTheWorker) {
  Reply three = ask_one("ID.SNOWFLAKE 3\r\n");
  ASSERT_EQ(three.type, '*');
  ASSERT_EQ(three.items.size(), 3u);
  std::vector<uint64_t> ids;
  for (const Reply& r : three.items) {
    ASSERT_EQ(r.type, ':');
    ids.push_back(r.number());
  }
  EXPECT_LT(ids[0], ids[1]);
  EXPECT_LT(ids[1], ids[2]);
  Reply one = ask_one("ID.SNOWFLAKE\r\n");
  ASSERT_EQ(one.type, ':');
  EXPECT_GT(one.number(), ids[2]);
  const DecodedId d = Layout::twitter().decode(one.number()).value();
  EXPECT_EQ(d.get("datacenter"), 0u);
  EXPECT_EQ(d.get("worker"), 1u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kSnowflake, 200), 2u);
}

TEST_F(RespSessionTest, Uuid7AndUlidParseBack) {
  Reply uuid = ask_one("ID.UUID7\r\n");
  ASSERT_EQ(uuid.type, '$');
  Result<Uuid> parsed = Uuid::parse(uuid.text);
  ASSERT_TRUE(parsed.ok()) << uuid.text;
  EXPECT_EQ(parsed->version(), 7);
  EXPECT_EQ(parsed->to_string(), uuid.text);

  Reply uuids = ask_one("ID.UUID7 3\r\n");
  ASSERT_EQ(uuids.items.size(), 3u);
  std::set<std::string> distinct;
  for (const Reply& r : uuids.items) {
    ASSERT_TRUE(Uuid::parse(r.text).ok()) << r.text;
    distinct.insert(r.text);
  }
  EXPECT_EQ(distinct.size(), 3u);

  Reply ulid = ask_one("ID.ULID\r\n");
  ASSERT_EQ(ulid.type, '$');
  Result<Ulid> u = Ulid::parse(ulid.text);
  ASSERT_TRUE(u.ok()) << ulid.text;
  EXPECT_EQ(u->to_string(), ulid.text);

  Reply ulids = ask_one("ID.ULID 4\r\n");
  ASSERT_EQ(ulids.items.size(), 4u);
  for (size_t i = 0; i < ulids.items.size(); ++i) {
    ASSERT_TRUE(Ulid::parse(ulids.items[i].text).ok());
    if (i > 0) {
      EXPECT_LT(ulids.items[i - 1].text, ulids.items[i].text);  // monotonic
    }
  }
}

TEST_F(RespSessionTest, DecodeAsFlatArrayThenAsMapUnderResp3) {
  // (910499571847892992 >> 12) & 31 is 25, the worker, though docs/api.md's example says 1.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"id", "910499571847892992"},
      {"layout", "twitter"},
      {"unix_ms", "1505914988849"},
      {"time", "2017-09-20T13:43:08.849Z"},
      {"datacenter", "17"},
      {"worker", "25"},
      {"sequence", "0"}};
  Reply flat = ask_one("ID.DECODE 910499571847892992\r\n");
  ASSERT_EQ(flat.type, '*');
  EXPECT_EQ(pairs_of(flat), want);
  EXPECT_EQ(flat.items[1].type, '$');  // the id is text: a 64-bit ID may not fit a signed integer
  EXPECT_EQ(flat.items[5].type, ':');

  ASSERT_EQ(ask_one("HELLO 3\r\n").type, '%');
  Reply map = ask_one("ID.DECODE 910499571847892992\r\n");
  ASSERT_EQ(map.type, '%');
  EXPECT_EQ(pairs_of(map), want);

  Reply sony = ask_one("ID.DECODE 910499571847892992 sonyflake\r\n");
  auto pairs = pairs_of(sony);
  ASSERT_GE(pairs.size(), 2u);
  EXPECT_EQ(pairs[1], std::make_pair(std::string("layout"), std::string("sonyflake")));
  EXPECT_TRUE(
      std::any_of(pairs.begin(), pairs.end(), [](auto& p) { return p.first == "machine"; }));

  EXPECT_THAT(send("ID.DECODE 12x\r\n").out, StartsWith("-ERR invalid_argument: "));
  EXPECT_THAT(send("ID.DECODE 1 nosuch\r\n").out, StartsWith("-ERR invalid_argument: layout"));
  EXPECT_EQ(service_->metrics().requests(1, Route::kDecode, 400), 2u);
}

TEST_F(RespSessionTest, HelloSwitchesProtocols) {
  Reply two = ask_one("HELLO\r\n");
  ASSERT_EQ(two.type, '*');
  auto pairs = pairs_of(two);
  ASSERT_EQ(pairs.size(), 7u);
  EXPECT_EQ(pairs[0], std::make_pair(std::string("server"), std::string("idforge")));
  EXPECT_EQ(pairs[2], std::make_pair(std::string("proto"), std::string("2")));

  EXPECT_EQ(send("HELLO 4\r\n").out, "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(send("HELLO x\r\n").out, "-ERR Protocol version is not an integer or out of range\r\n");
  EXPECT_THAT(send("HELLO 3 FOO\r\n").out, StartsWith("-ERR Syntax error in HELLO option 'FOO'"));
  EXPECT_EQ(ask_one("CLIENT GETNAME\r\n").null, true);  // failed HELLOs changed nothing
  EXPECT_EQ(send("CLIENT GETNAME\r\n").out, "$-1\r\n");

  // Without tokens there is no user to authenticate as: never a silent OK (auth_resp_test.cc).
  EXPECT_EQ(send("HELLO 3 AUTH default secret SETNAME app-1\r\n").out,
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(send("CLIENT GETNAME\r\n").out, "$-1\r\n");
  Reply three = ask_one("HELLO 3 SETNAME app-1\r\n");
  ASSERT_EQ(three.type, '%');
  EXPECT_EQ(pairs_of(three)[2], std::make_pair(std::string("proto"), std::string("3")));
  EXPECT_EQ(send("CLIENT GETNAME\r\n").out, "$5\r\napp-1\r\n");
  EXPECT_EQ(send("COMMAND DOCS\r\n").out, "%0\r\n");
  EXPECT_EQ(send("COMMAND INFO x\r\n").out, "*1\r\n_\r\n");

  ASSERT_EQ(ask_one("HELLO 2\r\n").type, '*');
  EXPECT_EQ(send("COMMAND DOCS\r\n").out, "*0\r\n");
}

TEST_F(RespSessionTest, ErrorsLeaveTheConnectionUsable) {
  Driven run = send(
      "FOO a b\r\n"
      "INCR\r\n"
      "ID.SNOWFLAKE 0\r\n"
      "ID.SNOWFLAKE 10001\r\n"
      "ID.UUID7 abc\r\n"
      "INCR nosuch\r\n"
      "INCR bad/name\r\n"
      "SELECT 1\r\n"
      "PING\r\n");
  EXPECT_FALSE(run.closed);
  std::vector<Reply> r = replies_of(run.out);
  ASSERT_EQ(r.size(), 9u) << run.out;
  EXPECT_EQ(r[0].text, "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
  EXPECT_EQ(r[1].text, "ERR wrong number of arguments for 'incr' command");
  EXPECT_THAT(r[2].text, StartsWith("ERR invalid_argument: count"));
  EXPECT_THAT(r[3].text, StartsWith("ERR out_of_range: "));
  EXPECT_THAT(r[3].text, HasSubstr("10000"));
  EXPECT_THAT(r[4].text, StartsWith("ERR invalid_argument: "));
  EXPECT_THAT(r[5].text, StartsWith("ERR not_found: "));
  EXPECT_THAT(r[6].text, StartsWith("ERR invalid_argument: "));
  EXPECT_EQ(r[7].text, "ERR DB index is out of range");
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r[i].type, '-') << i;
  EXPECT_EQ(r[8].type, '+');

  const Metrics& m = service_->metrics();
  EXPECT_EQ(m.requests(1, Route::kNotFound, 404), 1u);
  EXPECT_EQ(m.requests(1, Route::kSegment, 400), 2u);  // arity, bad tag name
  EXPECT_EQ(m.requests(1, Route::kSegment, 404), 1u);  // unknown tag
  EXPECT_EQ(m.requests(1, Route::kSnowflake, 400), 2u);
  EXPECT_EQ(m.requests(1, Route::kUuid7, 400), 1u);
  EXPECT_EQ(m.requests(1, Route::kRespOther, 200), 1u);
  // One pipelined batch, counted in runs: every command is in the histogram once.
  EXPECT_THAT(m.render(*service_),
              HasSubstr("idforge_request_duration_seconds_count{protocol=\"resp\"} 9\n"));

  // An error text never breaks the framing, whatever the client sent.
  EXPECT_EQ(send("*2\r\n$3\r\nF\rO\r\n$3\r\na\nb\r\n").out,
            "-ERR unknown command 'F\\x0dO', with args beginning with: 'a\\x0ab' \r\n");
}

TEST_F(RespSessionTest, AProtocolErrorAnswersThenCloses) {
  Driven run = send("PING\r\n*1\r\n$-5\r\nPING\r\n");
  EXPECT_TRUE(run.closed);
  EXPECT_EQ(run.out, "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");
  // Closed for good.
  std::string out;
  EXPECT_EQ(session_->feed("PING\r\n", out).next, Next::kClose);
  EXPECT_EQ(out, "");

  auto fresh = factory_();
  run = drive(*fresh, "ECHO \"open\r\n");
  EXPECT_TRUE(run.closed);
  EXPECT_EQ(run.out, "-ERR Protocol error: unbalanced quotes in request\r\n");

  fresh = factory_();
  run = drive(*fresh, "*abc\r\n");
  EXPECT_TRUE(run.closed);
  EXPECT_EQ(run.out, "-ERR Protocol error: invalid multibulk length\r\n");
}

TEST_F(RespSessionTest, QuitAnswersOkThenCloses) {
  Driven run = send("PING\r\nQUIT\r\nPING\r\n");
  EXPECT_TRUE(run.closed);
  EXPECT_EQ(run.out, "+PONG\r\n+OK\r\n");
  EXPECT_EQ(run.leftover, 6u);  // the PING after QUIT is not consumed or answered
}

TEST_F(RespSessionTest, PipelinedAnswersComeInOrderAlsoByteByByte) {
  const std::string pipeline =
      "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n"
      "PING\r\n"
      "\r\n"    // empty inline line: skipped
      "*0\r\n"  // empty array: skipped
      "ID.NEXT order 2\r\n"
      "*2\r\n$4\r\nECHO\r\n$3\r\nx y\r\n"
      "ID.DECODE 910499571847892992\r\n"
      "INCR order\n"
      "COMMAND COUNT\r\n"
      "SELECT 0\r\n";
  Driven whole = send(pipeline);
  EXPECT_FALSE(whole.closed);
  std::vector<Reply> r = replies_of(whole.out);
  ASSERT_EQ(r.size(), 8u) << whole.out;
  EXPECT_EQ(r[0].text, "1001");
  EXPECT_EQ(r[1].text, "PONG");
  ASSERT_EQ(r[2].items.size(), 2u);
  EXPECT_EQ(r[2].items[0].text, "1002");
  EXPECT_EQ(r[2].items[1].text, "1003");
  EXPECT_EQ(r[3].text, "x y");
  EXPECT_EQ(r[4].items[1].text, "910499571847892992");
  EXPECT_EQ(r[5].text, "1004");
  EXPECT_EQ(r[6].type, ':');
  EXPECT_GE(r[6].number(), 10u);
  EXPECT_EQ(r[7].text, "OK");

  // The same bytes one at a time, as the runtime would hand them over, on a fresh
  // session: the same answers, with the next IDs of the tag.
  auto fresh = factory_();
  const Driven slow = drive_byte_by_byte(*fresh, pipeline);
  ASSERT_FALSE(slow.closed);
  EXPECT_EQ(slow.leftover, 0u);
  std::string want = whole.out;
  for (auto [from, to] : {std::pair<std::string, std::string>{"1001", "1005"},
                          {"1002", "1006"},
                          {"1003", "1007"},
                          {"1004", "1008"}}) {
    want.replace(want.find(from), from.size(), to);
  }
  EXPECT_EQ(slow.out, want);
}

// A pipeline whose answers dwarf it (each ID.UUID7 10000 is ~400 KB of answer) is
// answered in bounded steps, all of it, in order.
TEST_F(RespSessionTest, BigAnswersToAPipelineAreFlushedInSteps) {
  std::string pipeline;
  for (int i = 0; i < 20; ++i) pipeline += "ID.UUID7 10000\r\n";
  pipeline += "PING\r\n";
  Driven run = send(pipeline);
  EXPECT_FALSE(run.closed);
  EXPECT_EQ(run.leftover, 0u);
  EXPECT_GE(run.flushes, 19);
  EXPECT_LT(run.most_out, 2 * Session::kFlushBytes) << "at most one answer past the mark";
  std::vector<Reply> replies = replies_of(run.out);
  ASSERT_EQ(replies.size(), 21u);
  EXPECT_EQ(replies.back().text, "PONG");
}

TEST_F(RespSessionTest, InfoSections) {
  ASSERT_EQ(send("INCR order\r\n").out, ":1001\r\n");
  Reply all = ask_one("INFO\r\n");
  ASSERT_EQ(all.type, '$');
  EXPECT_THAT(all.text, HasSubstr("# Server\r\nidforge_version:"));
  EXPECT_THAT(all.text, HasSubstr("uptime_in_seconds:"));
  EXPECT_THAT(all.text, HasSubstr("# Stats\r\n"));
  EXPECT_THAT(all.text, HasSubstr("ids_issued_segment:1\r\n"));
  EXPECT_THAT(all.text, HasSubstr("# Idforge\r\nlayout:twitter\r\n"));
  EXPECT_THAT(all.text, HasSubstr("lease_worker:1\r\n"));
  EXPECT_THAT(all.text,
              HasSubstr("segment_tag_0:name=order,step=1000,first=1001,count=1000,used=1"));
  // Every line is key:value.
  size_t pos = 0;
  while (pos < all.text.size()) {
    const size_t end = all.text.find("\r\n", pos);
    ASSERT_NE(end, std::string::npos);
    const std::string line = all.text.substr(pos, end - pos);
    EXPECT_TRUE(line.empty() || line[0] == '#' || line.find(':') != std::string::npos) << line;
    pos = end + 2;
  }

  Reply stats = ask_one("INFO Stats\r\n");
  EXPECT_THAT(stats.text, StartsWith("# Stats\r\ntotal_requests:"));
  EXPECT_THAT(stats.text, Not(HasSubstr("# Server")));
  EXPECT_EQ(send("INFO nosuch\r\n").out, "$0\r\n\r\n");
}

TEST_F(RespSessionTest, CommandClientAndSelectForClientLibraries) {
  EXPECT_EQ(send("COMMAND\r\n").out, "*0\r\n");
  EXPECT_EQ(send("COMMAND DOCS\r\n").out, "*0\r\n");
  EXPECT_EQ(send("command count\r\n").out, ":24\r\n");
  EXPECT_THAT(send("COMMAND FOO\r\n").out, StartsWith("-ERR unknown subcommand 'FOO'"));
  Reply list = ask_one("COMMAND LIST\r\n");
  EXPECT_EQ(list.items.size(), 24u);

  EXPECT_EQ(send("CLIENT SETNAME worker-7\r\n").out, "+OK\r\n");
  EXPECT_EQ(send("CLIENT GETNAME\r\n").out, "$8\r\nworker-7\r\n");
  EXPECT_THAT(send("CLIENT SETNAME \"a b\"\r\n").out, StartsWith("-ERR Client names"));
  EXPECT_EQ(send("CLIENT SETINFO LIB-NAME redis-py\r\n").out, "+OK\r\n");
  EXPECT_EQ(send("CLIENT SETNAME\r\n").out,
            "-ERR wrong number of arguments for 'client|setname' command\r\n");
  Reply id = ask_one("CLIENT ID\r\n");
  ASSERT_EQ(id.type, ':');
  EXPECT_EQ(send("SELECT 0\r\n").out, "+OK\r\n");
  EXPECT_EQ(send("SELECT x\r\n").out, "-ERR value is not an integer or out of range\r\n");

  // Each session has its own id.
  auto other = factory_();
  std::vector<Reply> other_id = replies_of(drive(*other, "CLIENT ID\r\n").out);
  ASSERT_EQ(other_id.size(), 1u);
  EXPECT_NE(other_id[0].text, id.text);
}

TEST_F(RespSessionTest, RandomCommandsEachGetOneWellFormedAnswer) {
  const std::vector<std::string> names = {
      "PING",      "ECHO",   "HELLO",   "INCR",   "ID.NEXT", "ID.SNOWFLAKE", "ID.UUID7", "ID.ULID",
      "ID.DECODE", "INFO",   "COMMAND", "CLIENT", "SELECT",  "NOPE",         "id.next",  "hello",
      "",          "INCRBY", "MULTI",   "EXEC",   "DISCARD", "DECR",         "GET",      "multi"};
  const std::vector<std::string> words = {"order",
                                          "tiny",
                                          "1",
                                          "3",
                                          "0",
                                          "-1",
                                          "2",
                                          "x",
                                          "",
                                          "910499571847892992",
                                          "docs",
                                          "count",
                                          "setname",
                                          "getname",
                                          "a b",
                                          "\r\n\x00",
                                          "99999999999999999999",
                                          "sonyflake",
                                          "stats",
                                          "AUTH"};
  std::mt19937_64 rng(99);
  for (int round = 0; round < 200; ++round) {
    auto session = factory_();
    std::string in;
    const size_t commands = 1 + rng() % 8;
    for (size_t c = 0; c < commands; ++c) {
      std::vector<std::string> args = {names[rng() % names.size()]};
      for (size_t n = rng() % 4; n > 0; --n) args.push_back(words[rng() % words.size()]);
      in += "*" + std::to_string(args.size()) + "\r\n";
      for (const std::string& a : args) in += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    }
    Driven run = drive(*session, in);
    ASSERT_FALSE(run.closed) << in;
    ASSERT_EQ(run.leftover, 0u);
    EXPECT_EQ(replies_of(run.out).size(), commands) << in << "\n" << run.out;
  }
}

}  // namespace
}  // namespace idforge::server
