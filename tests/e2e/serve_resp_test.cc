// Every RESP command of docs/api.md through redis-cli against one `idforge serve`, and
// over raw sockets what redis-cli would not send: errors that leave the connection
// usable, pipelining, inline commands, RESP3 framing, protocol errors that close, and
// binary garbage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "serve_process.h"
#include "support/ordering.h"

namespace idforge::e2e {
namespace {

using test::strictly_increasing;

// redis-cli's formatted output split into lines.
std::vector<std::string> lines_of(const RunResult& r) { return r.lines(); }

// "(integer) N" -> N; fails the test for anything else.
uint64_t integer_of(const std::string& line) {
  static const std::regex integer(R"((?:\s*\d+\) )?\(integer\) (\d+))");
  std::smatch m;
  if (!std::regex_match(line, m, integer)) {
    ADD_FAILURE() << "not an integer reply: '" << line << "'";
    return 0;
  }
  return std::stoull(m[1]);
}

// "1) \"abc\"" or "\"abc\"" -> abc.
std::string string_of(const std::string& line) {
  static const std::regex quoted(R"lit((?:\s*\d+\) )?"(.*)")lit");
  std::smatch m;
  if (!std::regex_match(line, m, quoted)) {
    ADD_FAILURE() << "not a string reply: '" << line << "'";
    return "";
  }
  return m[1];
}

// Does `raw` hold `n` complete RESP replies?
auto has_replies(size_t n) {
  return [n](std::string_view raw) { return parse_resp_replies(raw).size() >= n; };
}

class ServeRespTest : public SharedServeSuite<ServeRespTest> {
 public:
  static ServeOptions suite_options() {
    ServeOptions options;
    options.setup = {{"tag", "create", "order", "--step", "1000"},
                     {"tag", "create", "shared", "--step", "100"},
                     {"tag", "create", "piped", "--step", "10"}};
    return options;
  }

 protected:
  void TearDown() override {
    if (server_ != nullptr) {
      RunResult ping = server_->redis({"PING"});
      EXPECT_EQ(ping.out, "PONG\n")
          << "server unwell after the test: " << ping.summary() << server_->stderr_text();
    }
  }

  static RunResult cli(const std::vector<std::string>& args, std::string_view input = {}) {
    RunResult r = server_->redis(args, input);
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    return r;
  }
  // One command's output, which must be exactly one line.
  static std::string one_line(const std::vector<std::string>& args) {
    RunResult r = cli(args);
    std::vector<std::string> lines = lines_of(r);
    EXPECT_EQ(lines.size(), 1u) << r.summary();
    return lines.empty() ? "" : lines.front();
  }
  // An array of integers, as redis-cli prints it.
  static std::vector<uint64_t> integers(const std::vector<std::string>& args) {
    std::vector<uint64_t> out;
    for (const std::string& line : lines_of(cli(args))) out.push_back(integer_of(line));
    return out;
  }
  static std::unique_ptr<RawClient> connect() {
    auto client = std::make_unique<RawClient>(server_->resp_port());
    EXPECT_TRUE(client->connected());
    return client;
  }
};

TEST_F(ServeRespTest, Ping) {
  EXPECT_EQ(one_line({"PING"}), "PONG");
  EXPECT_EQ(one_line({"PING", "hello world"}), "\"hello world\"");
  EXPECT_EQ(one_line({"ping"}), "PONG") << "command names are case-insensitive";
}

TEST_F(ServeRespTest, HelloSwitchesToResp3) {
  RunResult resp3 = cli({"-3", "HELLO", "3"});
  EXPECT_TRUE(std::regex_search(resp3.out, std::regex(R"(1# "server" => )"))) << resp3.summary();
  EXPECT_NE(resp3.out.find("\"proto\" => (integer) 3"), std::string::npos) << resp3.summary();

  RunResult resp2 = cli({"HELLO", "2"});
  std::vector<std::string> lines = lines_of(resp2);
  auto proto = std::find_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.ends_with("\"proto\""); });
  ASSERT_NE(proto, lines.end()) << resp2.summary();
  ASSERT_NE(proto + 1, lines.end()) << resp2.summary();
  EXPECT_EQ(integer_of(*(proto + 1)), 2u);

  // A version it does not speak is an error (Redis says NOPROTO) on a usable connection.
  RunResult bad = cli({}, "HELLO 4\nPING\n");
  ASSERT_EQ(lines_of(bad).size(), 2u) << bad.summary();
  EXPECT_TRUE(lines_of(bad)[0].starts_with("(error) ")) << bad.summary();
  EXPECT_EQ(lines_of(bad)[1], "PONG");
}

TEST_F(ServeRespTest, IncrHandsOutTheNextSegmentIdSharedWithHttp) {
  const uint64_t first = integer_of(one_line({"INCR", "order"}));
  const uint64_t second = integer_of(one_line({"INCR", "order"}));
  EXPECT_EQ(second, first + 1);

  // Both protocols draw on the same IdService.
  HttpAnswer http = server_->http("/v1/segment/shared");
  ASSERT_EQ(http.status, 200) << http.summary();
  const uint64_t from_http = std::stoull(http.json()["ids"][0].get<std::string>());
  EXPECT_EQ(integer_of(one_line({"INCR", "shared"})), from_http + 1);
}

TEST_F(ServeRespTest, IdNextWithAndWithoutCount) {
  const uint64_t one = integer_of(one_line({"ID.NEXT", "order"}));
  std::vector<uint64_t> five = integers({"ID.NEXT", "order", "5"});
  ASSERT_EQ(five.size(), 5u);
  for (size_t i = 0; i < five.size(); ++i) EXPECT_EQ(five[i], one + 1 + i);
  EXPECT_TRUE(lines_of(cli({"ID.NEXT", "order", "1"}))[0].starts_with("1) (integer) "))
      << "with a count the answer is an array, even of one";
}

TEST_F(ServeRespTest, IdSnowflake) {
  const uint64_t one = integer_of(one_line({"ID.SNOWFLAKE"}));
  std::vector<uint64_t> three = integers({"ID.SNOWFLAKE", "3"});
  ASSERT_EQ(three.size(), 3u);
  EXPECT_TRUE(strictly_increasing(three));
  EXPECT_GT(three.front(), one);
  // The IDs carry this server's worker, as HTTP's status tells it.
  nlohmann::json lease = server_->http("/v1/status").json()["lease"];
  nlohmann::json decoded = server_->http("/v1/decode/" + std::to_string(three[0])).json();
  EXPECT_EQ(decoded["worker"], lease["worker"]) << decoded << lease;
  EXPECT_EQ(decoded["datacenter"], lease["datacenter"]) << decoded << lease;
  EXPECT_EQ(integers({"ID.SNOWFLAKE", "10000"}).size(), 10000u);
}

TEST_F(ServeRespTest, IdUuid7AndUlid) {
  const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  EXPECT_TRUE(std::regex_match(string_of(one_line({"ID.UUID7"})), uuid));
  std::vector<std::string> uuids = lines_of(cli({"ID.UUID7", "2"}));
  ASSERT_EQ(uuids.size(), 2u);
  EXPECT_TRUE(uuids[0].starts_with("1) ")) << uuids[0];
  for (const std::string& line : uuids) EXPECT_TRUE(std::regex_match(string_of(line), uuid));
  EXPECT_LT(string_of(uuids[0]), string_of(uuids[1]));

  const std::regex ulid("[0-7][0-9A-HJKMNP-TV-Z]{25}");
  EXPECT_TRUE(std::regex_match(string_of(one_line({"ID.ULID"})), ulid));
  std::vector<std::string> ulids = lines_of(cli({"ID.ULID", "2"}));
  ASSERT_EQ(ulids.size(), 2u);
  for (const std::string& line : ulids) EXPECT_TRUE(std::regex_match(string_of(line), ulid));
  EXPECT_LT(string_of(ulids[0]), string_of(ulids[1]));
}

TEST_F(ServeRespTest, IdDecode) {
  std::vector<std::string> lines = lines_of(cli({"ID.DECODE", "910499571847892992"}));
  ASSERT_EQ(lines.size(), 14u) << ::testing::PrintToString(lines);
  const std::vector<std::string> names = {"id",         "layout", "unix_ms", "time",
                                          "datacenter", "worker", "sequence"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(string_of(lines[2 * i]), names[i]);
  EXPECT_EQ(string_of(lines[1]), "910499571847892992");
  EXPECT_EQ(string_of(lines[3]), "twitter");
  EXPECT_NE(lines[5].find("1505914988849"), std::string::npos) << lines[5];
  EXPECT_EQ(string_of(lines[7]), "2017-09-20T13:43:08.849Z");
  EXPECT_TRUE(std::regex_search(lines[9], std::regex(R"(\b17"?$)"))) << lines[9];
  EXPECT_TRUE(std::regex_search(lines[11], std::regex(R"(\b25"?$)"))) << lines[11];
  EXPECT_TRUE(std::regex_search(lines[13], std::regex(R"(\b0"?$)"))) << lines[13];

  std::vector<std::string> sony = lines_of(cli({"ID.DECODE", "910499571847892992", "sonyflake"}));
  ASSERT_EQ(sony.size(), 12u) << ::testing::PrintToString(sony);
  EXPECT_EQ(string_of(sony[3]), "sonyflake");
  EXPECT_EQ(string_of(sony[8]), "sequence");
  EXPECT_EQ(string_of(sony[10]), "machine");
  // 910499571847892992 & 0xffff = 36864; (>> 16) & 0xff = 35.
  EXPECT_TRUE(std::regex_search(sony[11], std::regex(R"(\b36864"?$)"))) << sony[11];
  EXPECT_TRUE(std::regex_search(sony[9], std::regex(R"(\b35"?$)"))) << sony[9];
}

TEST_F(ServeRespTest, IdDecodeIsAMapUnderResp3) {
  RunResult r = cli({"-3", "ID.DECODE", "910499571847892992"});
  std::vector<std::string> lines = lines_of(r);
  ASSERT_EQ(lines.size(), 7u) << r.summary();
  EXPECT_EQ(lines[0], R"(1# "id" => "910499571847892992")");
  EXPECT_EQ(lines[1], R"(2# "layout" => "twitter")");
  EXPECT_TRUE(lines[5].starts_with(R"(6# "worker" => )")) << lines[5];
  EXPECT_NE(lines[5].find("25"), std::string::npos) << lines[5];

  // On the wire: HELLO 3 then a map of the seven fields.
  auto client = connect();
  ASSERT_TRUE(client->send("HELLO 3\r\nID.DECODE 910499571847892992\r\n"));
  ASSERT_TRUE(client->read_until(has_replies(2), milliseconds(5'000))) << client->received();
  std::vector<std::string> replies = parse_resp_replies(client->received());
  EXPECT_TRUE(replies[0].starts_with("%")) << "HELLO 3 answers a map: " << replies[0];
  EXPECT_TRUE(replies[1].starts_with("%7\r\n")) << replies[1];
}

TEST_F(ServeRespTest, InfoIsKeyValueLines) {
  RunResult raw = server_->redis({"--raw", "INFO"});
  ASSERT_EQ(raw.exit_code, 0) << raw.summary();
  ASSERT_FALSE(raw.out.empty());
  // Redis ends INFO lines with CRLF.
  const std::regex line_form(R"((# \w[^\r]*|[A-Za-z0-9_]+:[^\r]*|)\r?)");
  size_t pairs = 0;
  for (const std::string& line : raw.lines()) {
    EXPECT_TRUE(std::regex_match(line, line_form)) << "not an INFO line: '" << line << "'";
    pairs += line.find(':') != std::string::npos && !line.starts_with("#");
  }
  EXPECT_GT(pairs, 3u) << raw.out;
  RunResult server = server_->redis({"--raw", "INFO", "server"});
  EXPECT_NE(server.out.find("# Server"), std::string::npos) << server.summary();
}

TEST_F(ServeRespTest, CommandIsEnoughForRedisCli) {
  EXPECT_GT(integer_of(one_line({"COMMAND", "COUNT"})), 0u);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"COMMAND"}, std::vector<std::string>{"COMMAND", "DOCS"}}) {
    RunResult r = cli(args);
    EXPECT_EQ(r.out.find("(error)"), std::string::npos) << r.summary();
  }
}

TEST_F(ServeRespTest, QuitAnswersOkThenCloses) {
  EXPECT_EQ(one_line({"QUIT"}), "OK");
  auto client = connect();
  ASSERT_TRUE(client->send("QUIT\r\nPING\r\n"));
  ASSERT_TRUE(client->read_until_closed(milliseconds(5'000))) << client->received();
  EXPECT_EQ(client->received(), "+OK\r\n") << "nothing after QUIT is answered";
}

TEST_F(ServeRespTest, ErrorsLeaveTheConnectionUsable) {
  // redis-cli sends each stdin line as a command on its one connection.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"FOO", "(error) ERR "},
      {"ID.NEXT", "(error) ERR "},
      {"INCR", "(error) ERR "},
      {"PING a b", "(error) ERR "},
      {"ID.SNOWFLAKE 0", "(error) ERR "},
      {"ID.SNOWFLAKE -1", "(error) ERR "},
      {"ID.SNOWFLAKE 10001", "(error) ERR "},
      {"ID.SNOWFLAKE abc", "(error) ERR "},
      {"ID.SNOWFLAKE 99999999999999999999999", "(error) ERR "},
      {"ID.NEXT order 0", "(error) ERR "},
      {"ID.NEXT order 10001", "(error) ERR "},
      {"ID.UUID7 -1", "(error) ERR "},
      {"ID.ULID abc", "(error) ERR "},
      {"INCR no-such-tag", "(error) ERR not_found: "},
      {"ID.NEXT no-such-tag 2", "(error) ERR not_found: "},
      {"INCR bad!tag", "(error) ERR "},
      {"ID.DECODE abc", "(error) ERR "},
      {"ID.DECODE -1", "(error) ERR "},
      {"ID.DECODE 18446744073709551616", "(error) ERR "},
      {"ID.DECODE 1 nonsense", "(error) ERR "},
  };
  std::string input;
  for (const auto& [command, want] : cases) input += command + "\nPING\n";
  RunResult r = cli({}, input);
  std::vector<std::string> lines = lines_of(r);
  ASSERT_EQ(lines.size(), 2 * cases.size()) << r.summary();
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(lines[2 * i].starts_with(cases[i].second))
        << cases[i].first << " -> " << lines[2 * i];
    EXPECT_EQ(lines[2 * i + 1], "PONG") << "after " << cases[i].first;
  }

  // The same on one raw connection, so no reconnect can hide a close.
  auto client = connect();
  ASSERT_TRUE(
      client->send("*1\r\n$3\r\nFOO\r\n*2\r\n$12\r\nID.SNOWFLAKE\r\n$2\r\n-1\r\n"
                   "*2\r\n$4\r\nINCR\r\n$7\r\nmissing\r\n*1\r\n$4\r\nPING\r\n"));
  ASSERT_TRUE(client->read_until(has_replies(4), milliseconds(5'000))) << client->received();
  std::vector<std::string> replies = parse_resp_replies(client->received());
  EXPECT_TRUE(replies[0].starts_with("-ERR ")) << replies[0];
  EXPECT_TRUE(replies[1].starts_with("-ERR ")) << replies[1];
  EXPECT_TRUE(replies[2].starts_with("-ERR not_found: ")) << replies[2];
  EXPECT_EQ(replies[3], "+PONG\r\n");
  EXPECT_FALSE(client->closed());
}

TEST_F(ServeRespTest, PipelinedCommandsAreAnsweredInOrder) {
  std::string batch;
  for (int i = 0; i < 100; ++i) {
    batch += i % 10 == 5 ? "*2\r\n$4\r\nINCR\r\n$5\r\npiped\r\n" : "*1\r\n$12\r\nID.SNOWFLAKE\r\n";
  }
  batch += "*2\r\n$4\r\nPING\r\n$4\r\nlast\r\n";
  auto client = connect();
  ASSERT_TRUE(client->send(batch));
  ASSERT_TRUE(client->read_until(has_replies(101), milliseconds(10'000)))
      << parse_resp_replies(client->received()).size() << " replies";
  std::vector<std::string> replies = parse_resp_replies(client->received());
  std::vector<uint64_t> snowflakes;
  std::vector<uint64_t> incrs;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(replies[i].starts_with(":")) << i << ": " << replies[i];
    uint64_t value = std::stoull(replies[i].substr(1));
    (i % 10 == 5 ? incrs : snowflakes).push_back(value);
  }
  EXPECT_TRUE(strictly_increasing(snowflakes));
  ASSERT_EQ(incrs.size(), 10u);
  for (size_t i = 1; i < incrs.size(); ++i) EXPECT_EQ(incrs[i], incrs[i - 1] + 1);
  EXPECT_TRUE(replies[100] == "$4\r\nlast\r\n" || replies[100] == "+last\r\n") << replies[100];

  // redis-cli --pipe: raw protocol on stdin, a summary of the replies.
  RunResult piped = cli({"--pipe"}, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$5\r\npiped\r\n");
  EXPECT_NE(piped.out.find("errors: 0, replies: 2"), std::string::npos) << piped.summary();
}

TEST_F(ServeRespTest, InlineCommands) {
  auto client = connect();
  ASSERT_TRUE(client->send("PING\r\nping hello\r\nID.NEXT order 3\r\nINCR order\r\n"));
  ASSERT_TRUE(client->read_until(has_replies(4), milliseconds(5'000))) << client->received();
  std::vector<std::string> replies = parse_resp_replies(client->received());
  EXPECT_EQ(replies[0], "+PONG\r\n");
  EXPECT_TRUE(replies[1] == "$5\r\nhello\r\n" || replies[1] == "+hello\r\n") << replies[1];
  EXPECT_TRUE(std::regex_match(replies[2], std::regex(R"(\*3\r\n(:\d+\r\n){3})"))) << replies[2];
  EXPECT_TRUE(std::regex_match(replies[3], std::regex(R"(:\d+\r\n)"))) << replies[3];
}

TEST_F(ServeRespTest, ProtocolErrorsAnswerAndClose) {
  const std::vector<std::string> bad = {
      "*abc\r\n",
      "*1\r\n$abc\r\n",
      "*1\r\n$99999999\r\n",  // a bulk string over 64 KiB
      "*1\r\n$" + std::to_string(70'000) + "\r\n" + std::string(70'000, 'x') + "\r\n",
      "*2000\r\n",               // an array over 1,024 elements
      "*1\r\n+PING\r\n",         // not a bulk string inside the array
      std::string(70'000, 'A'),  // an inline command over 64 KiB
  };
  for (const std::string& bytes : bad) {
    SCOPED_TRACE(testing::Message() << "sent: " << bytes.substr(0, 40));
    auto client = connect();
    client->send(bytes);
    EXPECT_TRUE(client->read_until_closed(milliseconds(5'000))) << client->received();
    std::vector<std::string> replies = parse_resp_replies(client->received());
    ASSERT_EQ(replies.size(), 1u) << client->received();
    EXPECT_TRUE(replies[0].starts_with("-ERR Protocol error")) << replies[0];
  }
}

TEST_F(ServeRespTest, BinaryGarbageNeverTakesTheServerDown) {
  std::mt19937 random(6380);
  for (size_t size : {size_t{16}, size_t{4096}, size_t{100'000}}) {
    std::string garbage(size, '\0');
    for (char& c : garbage) c = static_cast<char>(random() & 0xff);
    SCOPED_TRACE(testing::Message() << size << " random bytes");
    auto client = connect();
    client->send(garbage);
    client->send("\r\n");
    client->read_until_closed(milliseconds(2'000));
    // Whatever came back is errors only: garbage is never a command that succeeds.
    for (const std::string& reply : parse_resp_replies(client->received())) {
      EXPECT_TRUE(reply.starts_with("-ERR")) << reply.substr(0, 200);
    }
    EXPECT_EQ(server_->redis({"PING"}).out, "PONG\n") << server_->stderr_text();
  }
  // A NUL in a command name is just an unknown command.
  auto client = connect();
  constexpr char kNulCommand[] = "*1\r\n$4\r\nPI\0G\r\n*1\r\n$4\r\nPING\r\n";
  ASSERT_TRUE(client->send(std::string(kNulCommand, sizeof kNulCommand - 1)));
  ASSERT_TRUE(client->read_until(has_replies(2), milliseconds(5'000))) << client->received();
  std::vector<std::string> replies = parse_resp_replies(client->received());
  EXPECT_TRUE(replies[0].starts_with("-ERR ")) << replies[0];
  EXPECT_EQ(replies[1], "+PONG\r\n");
}

}  // namespace
}  // namespace idforge::e2e
