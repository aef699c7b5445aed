// MULTI, EXEC and DISCARD over RESP (src/server/resp/resp_transaction.cc), answered as Redis
// 7 answers them (the expected texts were taken from redis-server 7.0), against a real
// IdService, including an EXEC whose queued commands must wait on the store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "server/resp/resp_session.h"
#include "server/resp_test_support.h"
#include "server/service/id_service.h"
#include "server/service/metrics.h"

namespace idforge::server {
namespace {

using resp_test::drive_byte_by_byte;
using resp_test::Driven;
using resp_test::pairs_of;
using resp_test::replies_of;
using resp_test::Reply;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Next = Session::Next;
using resp_test::numbers;

class RespTransactionTest : public resp_test::RespSessionFixture {};

TEST_F(RespTransactionTest, ExecAnswersTheQueuedCommandsAsOneArrayInOrder) {
  Driven run = send(
      "MULTI\r\nINCR order\r\nPING\r\nINCRBY order 3\r\nID.NEXT order 2\r\nECHO x\r\n"
      "INCR nosuch\r\nINCRBY order x\r\nINCR order\r\nEXEC\r\nINCR order\r\n");
  std::vector<Reply> r = replies_of(run.out);
  ASSERT_EQ(r.size(), 11u) << run.out;
  EXPECT_EQ(r[0].text, "OK");
  for (size_t i = 1; i <= 8; ++i) EXPECT_EQ(r[i].text, "QUEUED") << i;
  const Reply& exec = r[9];
  ASSERT_EQ(exec.type, '*');
  ASSERT_EQ(exec.items.size(), 8u);
  EXPECT_EQ(exec.items[0].text, "1001");
  EXPECT_EQ(exec.items[1].text, "PONG");
  EXPECT_EQ(exec.items[2].text, "1004");
  EXPECT_THAT(numbers(exec.items[3]), ElementsAre(1005, 1006));
  EXPECT_EQ(exec.items[4].text, "x");
  // An error when it runs stays in its place; the others still run, as in Redis.
  EXPECT_EQ(exec.items[5].type, '-');
  EXPECT_THAT(exec.items[5].text, StartsWith("ERR not_found: "));
  EXPECT_EQ(exec.items[6].text, "ERR value is not an integer or out of range");
  EXPECT_EQ(exec.items[7].text, "1007");
  EXPECT_EQ(r[10].text, "1008");

  // Each queued command counts once, when it runs, as if sent alone.
  const Metrics& m = service_->metrics();
  EXPECT_EQ(m.requests(1, Route::kSegment, 200), 5u);  // 4 in EXEC, 1 after
  EXPECT_EQ(m.requests(1, Route::kSegment, 400), 1u);
  EXPECT_EQ(m.requests(1, Route::kSegment, 404), 1u);
  EXPECT_EQ(m.requests(1, Route::kRespOther, 200), 4u);  // MULTI, PING, ECHO, EXEC
  EXPECT_EQ(m.ids(IdKind::kSegment), 8u);
}

TEST_F(RespTransactionTest, AQueuedCommandThatWaitsOnTheStoreMakesTheWholeExecOneJob) {
  const std::string in =
      "MULTI\r\nINCR order\r\nID.NEXT tiny 7\r\nPING\r\nINCRBY tiny 5\r\nEXEC\r\nPING\r\n";
  std::string out;
  Session::Step step = session_->feed(in, out);
  // Everything up to EXEC is answered; EXEC waits: its whole array comes from the job.
  ASSERT_EQ(step.next, Next::kBlocking);
  EXPECT_EQ(step.consumed, in.size() - std::string_view("PING\r\n").size());
  EXPECT_EQ(out, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n");
  out.clear();
  step.blocking(out);
  // "tiny" has a step of 3: 7 and then 5 more IDs wait on the store inside the job.
  EXPECT_EQ(out, "*4\r\n:1001\r\n*7\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n+PONG\r\n:12\r\n");
  out.clear();
  step = session_->feed(std::string_view(in).substr(step.consumed), out);
  EXPECT_EQ(step.next, Next::kNeedMore);
  EXPECT_EQ(out, "+PONG\r\n");
  EXPECT_EQ(service_->metrics().requests(1, Route::kSegment, 200), 3u);
  EXPECT_EQ(service_->metrics().requests(1, Route::kRespOther, 200), 4u);  // MULTI, 2 PING, EXEC
  EXPECT_EQ(service_->metrics().ids(IdKind::kSegment), 13u);
}

TEST_F(RespTransactionTest, ACommandRefusedWhileQueueingAbortsExecAsInRedis) {
  std::vector<Reply> r = ask("MULTI\r\nFOO\r\nINCR order\r\nEXEC\r\nPING\r\n");
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[1].text, "ERR unknown command 'FOO', with args beginning with: ");
  EXPECT_EQ(r[2].text, "QUEUED");
  EXPECT_EQ(r[3].type, '-');
  EXPECT_EQ(r[3].text, "EXECABORT Transaction discarded because of previous errors.");
  EXPECT_EQ(r[4].text, "PONG");  // out of the transaction again

  r = ask("MULTI\r\nINCR\r\nEXEC\r\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].text, "ERR wrong number of arguments for 'incr' command");
  EXPECT_EQ(r[2].text, "EXECABORT Transaction discarded because of previous errors.");
  // The INCR of the aborted transaction never ran.
  EXPECT_EQ(send("INCR order\r\n").out, ":1001\r\n");
}

TEST_F(RespTransactionTest, NestingAndExecOrDiscardWithoutMultiAreRedisErrors) {
  EXPECT_EQ(send("EXEC\r\n").out, "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(send("DISCARD\r\n").out, "-ERR DISCARD without MULTI\r\n");
  EXPECT_EQ(send("MULTI 1\r\n").out, "-ERR wrong number of arguments for 'multi' command\r\n");
  // A nested MULTI is refused but does not abort the transaction.
  EXPECT_EQ(send("MULTI\r\nMULTI\r\nINCR order\r\nEXEC\r\n").out,
            "+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n*1\r\n:1001\r\n");
  // DISCARD drops what was queued and the refusal that would have aborted it.
  EXPECT_EQ(send("MULTI\r\nFOO\r\nINCR order\r\nDISCARD\r\nINCR order\r\n").out,
            "+OK\r\n-ERR unknown command 'FOO', with args beginning with: \r\n+QUEUED\r\n"
            "+OK\r\n:1002\r\n");
  EXPECT_EQ(send("MULTI\r\nEXEC\r\n").out, "+OK\r\n*0\r\n");
  // QUIT is not queued: it answers and closes, as in Redis.
  Driven quit = send("MULTI\r\nINCR order\r\nQUIT\r\n");
  EXPECT_TRUE(quit.closed);
  EXPECT_EQ(quit.out, "+OK\r\n+QUEUED\r\n+OK\r\n");
}

TEST_F(RespTransactionTest, ATransactionIsBoundedLikeARequest) {
  // At most max_count (10,000) IDs in all: the command past it is refused, and EXEC aborts.
  std::vector<Reply> r =
      ask("MULTI\r\nID.NEXT order 6000\r\nID.UUID7 4001\r\nID.UUID7 4000\r\nEXEC\r\n");
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[1].text, "QUEUED");
  EXPECT_EQ(r[2].text,
            "ERR a transaction asks for at most 10000 IDs in all (max_count), as one request "
            "does; this one would ask for 10001");
  EXPECT_EQ(r[3].text, "QUEUED");
  EXPECT_EQ(r[4].text, "EXECABORT Transaction discarded because of previous errors.");

  // At most 1,024 commands.
  std::string many = "MULTI\r\n";
  for (int i = 0; i < 1025; ++i) many += "PING\r\n";
  many += "EXEC\r\n";
  r = ask(many);
  ASSERT_EQ(r.size(), 1027u);
  EXPECT_EQ(r[1024].text, "QUEUED");
  EXPECT_EQ(r[1025].text, "ERR a transaction holds at most 1024 commands");
  EXPECT_EQ(r[1026].text, "EXECABORT Transaction discarded because of previous errors.");

  // At most 1 MiB of arguments.
  const std::string big(60000, 'x');
  std::string echoes = "MULTI\r\n";
  for (int i = 0; i < 18; ++i) echoes += "ECHO " + big + "\r\n";
  echoes += "EXEC\r\n";
  r = ask(echoes);
  ASSERT_EQ(r.size(), 20u);
  EXPECT_EQ(r[17].text, "QUEUED");
  EXPECT_EQ(r[18].text, "ERR a transaction holds at most 1048576 bytes of arguments in all");
  EXPECT_EQ(r[19].text, "EXECABORT Transaction discarded because of previous errors.");

  // Within the limits, the same pipeline runs.
  r = ask("MULTI\r\nID.NEXT order 6000\r\nID.UUID7 4000\r\nEXEC\r\n");
  ASSERT_EQ(r.size(), 4u);
  ASSERT_EQ(r[3].items.size(), 2u);
  EXPECT_EQ(r[3].items[0].items.size(), 6000u);
  EXPECT_EQ(r[3].items[1].items.size(), 4000u);
}

TEST_F(RespTransactionTest, UnderResp3TheArrayHoldsResp3AnswersAndHelloMayBeQueued) {
  ASSERT_EQ(ask_one("HELLO 3\r\n").type, '%');
  std::vector<Reply> r = ask("MULTI\r\nID.DECODE 910499571847892992\r\nCLIENT GETNAME\r\nEXEC\r\n");
  ASSERT_EQ(r.size(), 4u);
  ASSERT_EQ(r[3].type, '*');
  ASSERT_EQ(r[3].items.size(), 2u);
  EXPECT_EQ(r[3].items[0].type, '%');
  EXPECT_EQ(pairs_of(r[3].items[0])[0],
            std::make_pair(std::string("id"), std::string("910499571847892992")));
  EXPECT_EQ(r[3].items[1].type, '_');
  // HELLO runs when EXEC reaches it: the answers after it are in the new protocol.
  r = ask("MULTI\r\nHELLO 2\r\nCLIENT GETNAME\r\nEXEC\r\nCLIENT GETNAME\r\n");
  ASSERT_EQ(r.size(), 5u);
  ASSERT_EQ(r[3].items.size(), 2u);
  EXPECT_EQ(r[3].items[0].type, '*');  // HELLO's answer, already as RESP2
  EXPECT_EQ(r[3].items[1].type, '$');
  EXPECT_TRUE(r[3].items[1].null);
  EXPECT_TRUE(r[4].null);
  EXPECT_EQ(r[4].type, '$');
}

TEST_F(RespTransactionTest, PipelinedTransactionsByteByByteGiveTheSameAnswers) {
  const std::string pipeline =
      "MULTI\r\nINCR order\r\nINCRBY order 2\r\nEXEC\r\n"
      "*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$4\r\ntiny\r\n*3\r\n$6\r\nINCRBY\r\n$4\r\ntiny\r\n"
      "$1\r\n4\r\n*1\r\n$4\r\nEXEC\r\nPING\r\n";
  auto fresh = factory_();
  const Driven slow = drive_byte_by_byte(*fresh, pipeline);
  ASSERT_FALSE(slow.closed);
  EXPECT_EQ(slow.leftover, 0u);
  EXPECT_EQ(slow.out,
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1001\r\n:1003\r\n"
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:5\r\n+PONG\r\n");
}

}  // namespace
}  // namespace idforge::server
