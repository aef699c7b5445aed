#include "server/resp/resp_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::server {
namespace {

using Kind = RespParser::Kind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> args_of(const RespParser& parser) {
  std::vector<std::string> out;
  for (std::string_view a : parser.args()) out.emplace_back(a);
  return out;
}

std::string encode_array(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// Parses a whole buffer as a session does: command after command, dropping consumed
// bytes. Returns the commands; stops at kNeedMore or kError (reported in `last`).
std::vector<std::vector<std::string>> parse_all(RespParser& parser, std::string_view in,
                                                RespParser::Outcome* last = nullptr) {
  std::vector<std::vector<std::string>> commands;
  while (true) {
    RespParser::Outcome r = parser.parse(in);
    if (last != nullptr) *last = r;
    if (r.kind == Kind::kNeedMore || r.kind == Kind::kError) return commands;
    EXPECT_GT(r.consumed, 0u);
    EXPECT_LE(r.consumed, in.size());
    if (r.kind == Kind::kCommand) commands.push_back(args_of(parser));
    in.remove_prefix(r.consumed);
  }
}

RespParser::Outcome parse_one(RespParser& parser, std::string_view in) { return parser.parse(in); }

TEST(RespParserTest, ArrayOfBulkStrings) {
  RespParser parser;
  const std::string in = "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n";
  RespParser::Outcome r = parser.parse(in);
  ASSERT_EQ(r.kind, Kind::kCommand);
  EXPECT_EQ(r.consumed, in.size());
  EXPECT_THAT(args_of(parser), ElementsAre("INCR", "order"));
}

TEST(RespParserTest, BulkStringsAreBinarySafe) {
  RespParser parser;
  const std::string arg("a\r\nb\0c*$", 8);
  const std::string in = encode_array({"PING", arg, ""});
  ASSERT_EQ(parser.parse(in).kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("PING", arg, ""));
}

TEST(RespParserTest, InlineCommands) {
  RespParser parser;
  RespParser::Outcome r = parser.parse("PING\r\n");
  ASSERT_EQ(r.kind, Kind::kCommand);
  EXPECT_EQ(r.consumed, 6u);
  EXPECT_THAT(args_of(parser), ElementsAre("PING"));

  r = parser.parse("INCR order\nrest");
  ASSERT_EQ(r.kind, Kind::kCommand);
  EXPECT_EQ(r.consumed, 11u);
  EXPECT_THAT(args_of(parser), ElementsAre("INCR", "order"));

  ASSERT_EQ(parser.parse("  ID.NEXT \t order   5  \r\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("ID.NEXT", "order", "5"));
}

TEST(RespParserTest, InlineQuoting) {
  RespParser parser;
  ASSERT_EQ(parser.parse("ECHO \"a b\" 'c d' \"\" ''\r\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("ECHO", "a b", "c d", "", ""));

  ASSERT_EQ(parser
                .parse(R"(ECHO "x\n\r\t\"\\\x41\x7a\q" 'it\'s' '\n')"
                       "\n")
                .kind,
            Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("ECHO", "x\n\r\t\"\\Azq", "it's", "\\n"));

  // A quote in the middle of a word opens a quoted part, as in Redis.
  ASSERT_EQ(parser.parse("ECHO a\"b c\"\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("ECHO", "ab c"));

  // An incomplete \x escape is taken literally.
  ASSERT_EQ(parser.parse("ECHO \"\\x4g\"\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("ECHO", "x4g"));
}

TEST(RespParserTest, UnbalancedQuotesAreAProtocolError) {
  for (std::string_view in :
       {"ECHO \"abc\r\n", "ECHO 'abc\n", "ECHO \"a\"b\n", "ECHO 'a'b\n", "ECHO \"abc\\\"\n"}) {
    RespParser parser;
    RespParser::Outcome r = parser.parse(in);
    ASSERT_EQ(r.kind, Kind::kError) << in;
    EXPECT_EQ(r.error, "unbalanced quotes in request");
  }
}

TEST(RespParserTest, EmptyCommandsAreSkipped) {
  for (std::string_view in : {"*0\r\n", "*-1\r\n", "*-7\r\n", "\r\n", "\n", "   \t \r\n"}) {
    RespParser parser;
    RespParser::Outcome r = parser.parse(in);
    EXPECT_EQ(r.kind, Kind::kEmpty) << in;
    EXPECT_EQ(r.consumed, in.size()) << in;
  }
  RespParser parser;
  auto commands = parse_all(parser, "*0\r\n\r\nPING\r\n*-1\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(commands.size(), 2u);
}

TEST(RespParserTest, PipelinedCommandsComeOutInOrder) {
  RespParser parser;
  const std::string in = encode_array({"INCR", "a"}) + "PING\r\n" +
                         encode_array({"ID.NEXT", "b", "3"}) + "ECHO 'x y'\n" + "*1\r\n$4\r\nPI";
  RespParser::Outcome last;
  auto commands = parse_all(parser, in, &last);
  EXPECT_EQ(last.kind, Kind::kNeedMore);
  ASSERT_EQ(commands.size(), 4u);
  EXPECT_THAT(commands[0], ElementsAre("INCR", "a"));
  EXPECT_THAT(commands[1], ElementsAre("PING"));
  EXPECT_THAT(commands[2], ElementsAre("ID.NEXT", "b", "3"));
  EXPECT_THAT(commands[3], ElementsAre("ECHO", "x y"));
}

// Every prefix of a command needs more; the whole command parses to the same args.
void expect_byte_by_byte(const std::string& in, const std::vector<std::string>& want) {
  RespParser parser;
  for (size_t n = 0; n < in.size(); ++n) {
    RespParser::Outcome r = parser.parse(std::string_view(in).substr(0, n));
    ASSERT_EQ(r.kind, Kind::kNeedMore) << "prefix " << n << " of " << in;
  }
  RespParser::Outcome r = parser.parse(in);
  ASSERT_EQ(r.kind, Kind::kCommand) << in;
  EXPECT_EQ(r.consumed, in.size());
  EXPECT_EQ(args_of(parser), want);
}

TEST(RespParserTest, ByteByByte) {
  expect_byte_by_byte(encode_array({"ID.NEXT", "order", "10"}), {"ID.NEXT", "order", "10"});
  expect_byte_by_byte(encode_array({"X", std::string(3000, 'z'), ""}),
                      {"X", std::string(3000, 'z'), ""});
  expect_byte_by_byte("INCR \"my tag\"\r\n", {"INCR", "my tag"});
  expect_byte_by_byte("PING\n", {"PING"});
}

// A command that arrives whole takes a one-pass path; one that trickles in takes the
// incremental one. Both must give the same commands, byte counts and errors.
TEST(RespParserTest, WholeAndTricklingCommandsAgree) {
  const std::vector<std::string> inputs = {
      "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n",
      "*02\r\n$00004\r\nINCR\r\n$000005\r\norder\r\n",  // leading zeros: 5 and 6 digits
      "*1\r\n$0\r\n\r\n",
      "*3\r\n$3\r\nSET\r\n$1\r\n\n\r\n$2\r\n\r\n\r\n",  // CR and LF inside bulk strings
      encode_array({"PING", std::string(kRespMaxBulkBytes, 'x')}),
      encode_array(std::vector<std::string>(kRespMaxArgs, "a")),
      encode_array(std::vector<std::string>(kRespMaxArgs + 1, "a")),
      "*1\r\n$65537\r\n" + std::string(65537, 'x') + "\r\n",
      "*0\r\n",
      "*-1\r\n",
      "*1\r\n$-1\r\n",
      "*2\r\n$4\r\nINCR\r\n:5\r\n",
      "*1\r\n$4\r\nINCRxx",
      "*1\r\n$4x\r\nINCR\r\n",
      "*1\n$4\r\nINCR\r\n",
  };
  for (const std::string& in : inputs) {
    SCOPED_TRACE(in.substr(0, 40));
    RespParser whole;
    const RespParser::Outcome a = whole.parse(in);
    std::vector<std::string> a_args = args_of(whole);

    RespParser trickle;
    RespParser::Outcome b;
    for (size_t n = 1; n <= in.size(); ++n) {
      b = trickle.parse(std::string_view(in).substr(0, n));
      if (b.kind != Kind::kNeedMore) break;
    }
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.consumed, b.consumed);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a_args, args_of(trickle));
  }
}

TEST(RespParserTest, StartsOverWhenTheCallerPassesOtherBytes) {
  RespParser parser;
  ASSERT_EQ(parser.parse("*2\r\n$4\r\nINCR\r\n$5\r\nord").kind, Kind::kNeedMore);
  // Not the pending command: a different first byte, then a shorter buffer.
  ASSERT_EQ(parser.parse("PING\r\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("PING"));
  ASSERT_EQ(parser.parse("*2\r\n$4\r\nINCR\r\n$5\r\nord").kind, Kind::kNeedMore);
  ASSERT_EQ(parser.parse("*1\r\n$1\r\nx\r\n").kind, Kind::kCommand);
  EXPECT_THAT(args_of(parser), ElementsAre("x"));
}

TEST(RespParserTest, BulkLimit) {
  RespParser parser;
  const std::string max(kRespMaxBulkBytes, 'b');
  ASSERT_EQ(parser.parse(encode_array({"ECHO", max})).kind, Kind::kCommand);
  EXPECT_EQ(parser.args()[1].size(), kRespMaxBulkBytes);

  // Refused at the header, before any of the data arrives.
  RespParser::Outcome r = parser.parse("*2\r\n$4\r\nECHO\r\n$65537\r\n");
  ASSERT_EQ(r.kind, Kind::kError);
  EXPECT_EQ(r.error, "invalid bulk length");
}

TEST(RespParserTest, ArrayLimit) {
  RespParser parser;
  std::vector<std::string> args(kRespMaxArgs, "a");
  ASSERT_EQ(parser.parse(encode_array(args)).kind, Kind::kCommand);
  EXPECT_EQ(parser.args().size(), kRespMaxArgs);

  RespParser::Outcome r = parser.parse("*1025\r\n");
  ASSERT_EQ(r.kind, Kind::kError);
  EXPECT_EQ(r.error, "invalid multibulk length");
}

TEST(RespParserTest, InlineLimit) {
  RespParser parser;
  std::string line(kRespMaxInlineBytes, 'a');
  ASSERT_EQ(parser.parse(line + "\r\n").kind, Kind::kCommand);
  EXPECT_EQ(parser.args()[0].size(), kRespMaxInlineBytes);

  // One byte more, with its newline.
  RespParser::Outcome r = parser.parse(line + "a\n");
  ASSERT_EQ(r.kind, Kind::kError);
  EXPECT_EQ(r.error, "too big inline request");

  // No newline yet: waits while a line could still fit, fails once it cannot.
  EXPECT_EQ(parser.parse(line + "\r").kind, Kind::kNeedMore);
  r = parser.parse(line + "aa");
  ASSERT_EQ(r.kind, Kind::kError);
  EXPECT_EQ(r.error, "too big inline request");

  // Many arguments on one line.
  std::string many = "ECHO";
  for (size_t i = 0; i < kRespMaxArgs; ++i) many += " a";
  r = parser.parse(many + "\n");
  ASSERT_EQ(r.kind, Kind::kError);
  EXPECT_THAT(std::string(r.error), HasSubstr("too many arguments"));
}

TEST(RespParserTest, MalformedHeaders) {
  struct Case {
    std::string in;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"*abc\r\n", "invalid multibulk length"},
      {"*abc", "invalid multibulk length"},  // known bad before the line ends
      {"*\r\n", "invalid multibulk length"},
      {"*-\r\n", "invalid multibulk length"},
      {"*2\n", "invalid multibulk length"},
      {"*2\rX", "invalid multibulk length"},
      {"*12345678901\r\n", "invalid multibulk length"},
      {"*1\r\n$-5\r\n", "invalid bulk length"},
      {"*1\r\n$-1\r\n", "invalid bulk length"},
      {"*1\r\n$x\r\n", "invalid bulk length"},
      {"*1\r\n$\r\n", "invalid bulk length"},
      {"*1\r\n$99999999999999999999", "invalid bulk length"},
      {"*1\r\n:5\r\n", "expected '$', got ':'"},
      {"*1\r\n\r\n", "expected '$', got '\\x0d'"},
      {"*1\r\n$3\r\nabcXY", "expected CRLF after bulk string"},
      {"*1\r\n$3\r\nabc\rX", "expected CRLF after bulk string"},
      {"*1\r\n$3\r\nabcd", "expected CRLF after bulk string"},
  };
  for (const Case& c : cases) {
    RespParser parser;
    RespParser::Outcome r = parser.parse(c.in);
    ASSERT_EQ(r.kind, Kind::kError) << c.in;
    EXPECT_EQ(r.error, c.error) << c.in;
    EXPECT_EQ(r.consumed, 0u);
    // Usable after an error (the session closes anyway, but nothing is left half-set).
    ASSERT_EQ(parser.parse("PING\r\n").kind, Kind::kCommand);
  }
}

TEST(RespParserTest, ArrayRoundTripInRandomChunks) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::vector<std::string>> want;
    std::string in;
    for (int c = 0; c < 5; ++c) {
      std::vector<std::string> args(1 + rng() % 6);
      for (std::string& a : args) {
        a.resize(rng() % 40);
        for (char& ch : a) ch = static_cast<char>(rng() & 0xff);
      }
      in += encode_array(args);
      want.push_back(std::move(args));
    }
    // Deliver the bytes in random chunks, keeping the unconsumed tail like the runtime.
    RespParser parser;
    std::vector<std::vector<std::string>> got;
    std::string pending;
    size_t sent = 0;
    while (sent < in.size()) {
      const size_t chunk = std::min<size_t>(in.size() - sent, 1 + rng() % 17);
      pending.append(in, sent, chunk);
      sent += chunk;
      RespParser::Outcome last;
      std::string_view view = pending;
      while (true) {
        last = parser.parse(view);
        if (last.kind != Kind::kCommand && last.kind != Kind::kEmpty) break;
        if (last.kind == Kind::kCommand) got.push_back(args_of(parser));
        view.remove_prefix(last.consumed);
      }
      ASSERT_EQ(last.kind, Kind::kNeedMore);
      pending.erase(0, pending.size() - view.size());
    }
    EXPECT_TRUE(pending.empty());
    EXPECT_EQ(got, want);
  }
}

TEST(RespParserTest, InlineRoundTripWithEscapes) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> args(1 + rng() % 5);
    std::string line;
    for (std::string& a : args) {
      a.resize(rng() % 20);
      for (char& ch : a) ch = static_cast<char>(rng() & 0xff);
      line += " \"";
      for (unsigned char ch : a) {
        static constexpr char kHex[] = "0123456789abcdef";
        line += "\\x";
        line += kHex[ch >> 4];
        line += kHex[ch & 15];
      }
      line += "\"";
    }
    RespParser parser;
    ASSERT_EQ(parser.parse(line + "\r\n").kind, Kind::kCommand) << line;
    EXPECT_EQ(args_of(parser), args);
  }
}

TEST(RespParserTest, BinaryGarbageNeverBreaksIt) {
  std::mt19937_64 rng(1234);
  // Bytes biased towards the protocol's own characters, so headers get exercised.
  constexpr std::string_view kAlphabet = "*$\r\n-0123456789 \"'\\xaZ";
  for (int round = 0; round < 3000; ++round) {
    std::string in(rng() % 300, '\0');
    for (char& ch : in) {
      ch = rng() % 3 == 0 ? static_cast<char>(rng() & 0xff) : kAlphabet[rng() % kAlphabet.size()];
    }
    RespParser parser;
    std::string_view view = in;
    for (int steps = 0; steps < 1000; ++steps) {
      RespParser::Outcome r = parse_one(parser, view);
      if (r.kind == Kind::kNeedMore || r.kind == Kind::kError) break;
      ASSERT_GT(r.consumed, 0u);
      ASSERT_LE(r.consumed, view.size());
      if (r.kind == Kind::kCommand) {
        ASSERT_FALSE(parser.args().empty());
        ASSERT_LE(parser.args().size(), kRespMaxArgs);
      }
      view.remove_prefix(r.consumed);
    }
  }
}

}  // namespace
}  // namespace idforge::server
