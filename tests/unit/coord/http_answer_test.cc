// The HTTP/1.1 answer parser of the etcd client: the bodies etcd's gateway sends (by
// Content-Length, chunked, to the close), fed whole and a byte at a time, and the
// answers it refuses with a reason.
#include "coord/etcd/http_answer.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace idforge::coord {
namespace {

using Step = HttpAnswerParser::Step;

constexpr uint64_t kLimit = 1000;

struct Parsed {
  Step step = Step::kMore;
  HttpAnswer answer;
  std::string error;
  size_t extra = 0;
};

// `bytes` fed in pieces of `piece` bytes (0: at once), then a close when `closed`.
Parsed parse(std::string_view bytes, size_t piece = 0, bool closed = false,
             uint64_t limit = kLimit) {
  HttpAnswerParser parser(limit);
  Parsed out;
  if (piece == 0) piece = bytes.size() + 1;
  for (size_t at = 0; at < bytes.size() && out.step == Step::kMore; at += piece) {
    out.step = parser.feed(bytes.substr(at, piece));
  }
  if (closed && out.step == Step::kMore) out.step = parser.close();
  out.answer = parser.answer();
  out.error = parser.error();
  out.extra = parser.extra();
  return out;
}

// The same answer whether it comes at once or a byte at a time.
Parsed parse_both_ways(std::string_view bytes, bool closed = false) {
  const Parsed whole = parse(bytes, 0, closed);
  const Parsed bytewise = parse(bytes, 1, closed);
  EXPECT_EQ(whole.step, bytewise.step);
  EXPECT_EQ(whole.answer.status, bytewise.answer.status);
  EXPECT_EQ(whole.answer.body, bytewise.answer.body);
  EXPECT_EQ(whole.answer.keep_alive, bytewise.answer.keep_alive);
  EXPECT_EQ(whole.error, bytewise.error);
  return whole;
}

TEST(HttpAnswerTest, ReadsABodyByContentLength) {
  const Parsed p = parse_both_ways(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-LENGTH: 11\r\n"
      "Date: Sun, 29 Nov 2026 06:00:00 GMT\r\n\r\n{\"a\":\"b c\"}");
  ASSERT_EQ(p.step, Step::kDone) << p.error;
  EXPECT_EQ(p.answer.status, 200);
  EXPECT_EQ(p.answer.body, "{\"a\":\"b c\"}");
  EXPECT_TRUE(p.answer.keep_alive);
  EXPECT_EQ(p.extra, 0u);
}

TEST(HttpAnswerTest, ReadsAChunkedBodyWithExtensionsAndTrailers) {
  const Parsed p = parse_both_ways(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "4;name=value\r\n{\"a\"\r\n"
      "00000A ; x=\"y;z\"\r\n:[1,2,3,4]\r\n"
      "1\r\n}\r\n"
      "0;last\r\nGrpc-Status: 0\r\nX-Other: yes\r\n\r\n");
  ASSERT_EQ(p.step, Step::kDone) << p.error;
  EXPECT_EQ(p.answer.body, "{\"a\":[1,2,3,4]}");
  EXPECT_TRUE(p.answer.keep_alive);
}

TEST(HttpAnswerTest, ReadsTheAnswerAfterInformationalOnes) {
  const Parsed p = parse_both_ways(
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_EQ(p.step, Step::kDone) << p.error;
  EXPECT_EQ(p.answer.status, 404);
  EXPECT_EQ(p.answer.body, "{}");
}

TEST(HttpAnswerTest, TellsWhenTheServerCloses) {
  // Said, or implied by HTTP/1.0 and by a body that runs to the close.
  EXPECT_FALSE(parse_both_ways("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n")
                   .answer.keep_alive);
  EXPECT_FALSE(parse_both_ways("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").answer.keep_alive);
  EXPECT_TRUE(
      parse_both_ways("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
          .answer.keep_alive);
  const Parsed to_close = parse_both_ways("HTTP/1.1 500 Oops\r\n\r\nno leader", /*closed=*/true);
  ASSERT_EQ(to_close.step, Step::kDone) << to_close.error;
  EXPECT_EQ(to_close.answer.status, 500);
  EXPECT_EQ(to_close.answer.body, "no leader");
  EXPECT_FALSE(to_close.answer.keep_alive);
  // A chunked body that also has a Content-Length: not trusted again.
  const Parsed both = parse_both_ways(
      "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: "
      "chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n");
  ASSERT_EQ(both.step, Step::kDone) << both.error;
  EXPECT_EQ(both.answer.body, "x");
  EXPECT_FALSE(both.answer.keep_alive);
}

TEST(HttpAnswerTest, NoContentHasNoBody) {
  const Parsed p = parse("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1");
  ASSERT_EQ(p.step, Step::kDone);
  EXPECT_EQ(p.answer.body, "");
  EXPECT_EQ(p.extra, 8u);  // bytes past the answer, which nobody asked for
}

TEST(HttpAnswerTest, AcceptsBareLineFeeds) {
  const Parsed p = parse_both_ways("HTTP/1.1 200 OK\nContent-Length: 2\n\n{}");
  ASSERT_EQ(p.step, Step::kDone) << p.error;
  EXPECT_EQ(p.answer.body, "{}");
}

TEST(HttpAnswerTest, ACloseBeforeAnyByteIsNotAnAnswer) {
  HttpAnswerParser parser(kLimit);
  EXPECT_EQ(parser.close(), Step::kBad);
  EXPECT_FALSE(parser.got_some());  // the request may not have been read: worth a resend
  EXPECT_EQ(parser.error(), "the connection closed before any answer");
}

TEST(HttpAnswerTest, ACloseWithinTheAnswerIsAnError) {
  for (const std::string_view cut :
       {"H", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\n"}) {
    HttpAnswerParser parser(kLimit);
    EXPECT_EQ(parser.feed(cut), Step::kMore) << cut;
    EXPECT_EQ(parser.close(), Step::kBad) << cut;
    EXPECT_TRUE(parser.got_some());
    EXPECT_EQ(parser.error(), "the connection closed in the middle of the answer");
  }
}

TEST(HttpAnswerTest, RefusesABodyOverTheLimit) {
  const auto error_of = [](std::string_view bytes, bool closed = false) {
    const Parsed p = parse(bytes, 7, closed, /*limit=*/10);
    EXPECT_EQ(p.step, Step::kBad) << bytes;
    return p.error;
  };
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 3, false, 10).step,
            Step::kDone);
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"),
            "a body of 11 bytes, over the limit of 10");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n"),
            "a chunked body over the limit of 10 bytes");
  EXPECT_EQ(
      error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n"),
      "a chunk over the body limit of 10 bytes");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\n\r\n0123456789x"), "a body over the limit of 10 bytes");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nX: " + std::string(HttpAnswerParser::kMaxHeadBytes, 'x')),
            "a head or line over 65536 bytes");
}

TEST(HttpAnswerTest, RefusesWhatIsNotHttp) {
  const auto error_of = [](std::string_view bytes) {
    const Parsed p = parse_both_ways(bytes);
    EXPECT_EQ(p.step, Step::kBad) << bytes;
    return p.error;
  };
  EXPECT_EQ(error_of("SSH-2.0-OpenSSH_9.2\r\n"),
            "not an HTTP/1.x status line: 'SSH-2.0-OpenSSH_9.2'");
  EXPECT_EQ(error_of("HTTP/2 200\r\n"), "not an HTTP/1.x status line: 'HTTP/2 200'");
  EXPECT_EQ(error_of("HTTP/1.1 2x0 OK\r\n"), "not an HTTP/1.x status line: 'HTTP/1.1 2x0 OK'");
  EXPECT_EQ(error_of("HTTP/1.1 099 Low\r\n"), "status 99");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nno colon\r\n"), "a malformed header line: 'no colon'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\n folded: x\r\n"), "a malformed header line: ' folded: x'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n"), "Content-Length '-1'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n"),
            "Content-Length '2'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n"),
            "Transfer-Encoding 'gzip, chunked' (chunked alone is read)");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            "a malformed chunk size line: 'zz'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n"),
            "a malformed chunk size line: '1 x'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"),
            "chunk data runs on: 'b'");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\n\x01\x02: x\r\n"), "a malformed header line: '??: x'");
}

TEST(HttpAnswerTest, TakesNothingAfterAnError) {
  HttpAnswerParser parser(kLimit);
  EXPECT_EQ(parser.feed("nonsense\r\n"), Step::kBad);
  EXPECT_EQ(parser.feed("HTTP/1.1 200 OK\r\n\r\n"), Step::kBad);
  EXPECT_EQ(parser.feed(""), Step::kBad);
  EXPECT_EQ(parser.close(), Step::kBad);
}

}  // namespace
}  // namespace idforge::coord
