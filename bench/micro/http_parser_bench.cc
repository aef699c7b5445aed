// Our HTTP/1.1 request parser (src/server/http/http_parser.h) against Boost.Beast's on the
// same requests, in the same run (tracker issue 14). Items are requests.
//
//   ours                  HttpRequestParser, one per connection; views into the input
//   beast_request_parser  http::request_parser<string_body>, one per request (what a
//                         Beast server uses: the fields and body are copied out)
//   beast_basic_parser    http::basic_parser<true> keeping views of the method, target,
//                         Host, Authorization and body only: the same work as ours
//
// Both are given the server's limits (header bytes 32 KiB, body 64 KiB).
#include <benchmark/benchmark.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/http_parser.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// A keep-alive client asking for ten Snowflake IDs.
const std::string kGet =
    "GET /v1/snowflake?count=10 HTTP/1.1\r\n"
    "Host: idforge.internal:8080\r\n"
    "User-Agent: order-service/2.3.1 okhttp/4.12.0\r\n"
    "Accept: application/json\r\n"
    "Accept-Encoding: gzip\r\n"
    "Connection: keep-alive\r\n"
    "X-Request-Id: 8d3e2f1a-4b5c-4d6e-9f70-812a3b4c5d6e\r\n"
    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
    "\r\n";

const std::string kPostBody = R"({"tag":"order","step":1000,"start":1})";
// An admin creating a segment tag.
const std::string kPost =
    "POST /v1/admin/tags HTTP/1.1\r\n"
    "Host: idforge.internal:8080\r\n"
    "User-Agent: curl/7.88.1\r\n"
    "Accept: */*\r\n"
    "Authorization: Bearer 3f9c2a7e5b1d4c8e9a0f6b2d7c1e5a3b\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: " +
    std::to_string(kPostBody.size()) + "\r\n\r\n" + kPostBody;

std::string pipelined(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += kGet;
  return out;
}
const std::string kPipelined16 = pipelined(16);

const idforge::server::HttpLimits kLimits;  // the server's defaults

// Parses every request of `in`; the number parsed, or -1 on an error or a partial one.
int parse_ours(idforge::server::HttpRequestParser& parser, std::string_view in) {
  int requests = 0;
  while (!in.empty()) {
    idforge::server::HttpRequest request;
    const idforge::server::ParseResult r = parser.parse(in, &request);
    if (r.kind != idforge::server::ParseResult::Kind::kComplete) return -1;
    benchmark::DoNotOptimize(request);
    in.remove_prefix(r.consumed);
    ++requests;
  }
  return requests;
}

template <class Parser>
bool put_all(Parser& parser, std::string_view& in) {
  parser.eager(true);
  parser.header_limit(static_cast<std::uint32_t>(kLimits.max_header_bytes));
  parser.body_limit(kLimits.max_body);
  beast::error_code ec;
  while (!parser.is_done()) {
    const size_t n = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
    if (ec || n == 0) return false;  // an error, or a request cut short
    in.remove_prefix(n);
  }
  return true;
}

int parse_beast_request_parser(std::string_view in) {
  int requests = 0;
  while (!in.empty()) {
    http::request_parser<http::string_body> parser;  // one message per parser
    if (!put_all(parser, in)) return -1;
    benchmark::DoNotOptimize(parser.get());
    ++requests;
  }
  return requests;
}

// Keeps views, like ours.
class ViewParser : public http::basic_parser<true> {
 public:
  std::string_view method, target, host, authorization, body;

 private:
  static std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }
  void on_request_impl(http::verb, beast::string_view method_str, beast::string_view target_str,
                       int, beast::error_code&) override {
    method = view(method_str);
    target = view(target_str);
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
  void on_field_impl(http::field name, beast::string_view, beast::string_view value,
                     beast::error_code&) override {
    if (name == http::field::host) host = view(value);
    if (name == http::field::authorization && authorization.empty()) authorization = view(value);
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  size_t on_body_impl(beast::string_view s, beast::error_code&) override {
    body = view(s);
    return s.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view s, beast::error_code&) override {
    return s.size();
  }
  void on_finish_impl(beast::error_code&) override {}
};

int parse_beast_basic_parser(std::string_view in) {
  int requests = 0;
  while (!in.empty()) {
    ViewParser parser;
    if (!put_all(parser, in)) return -1;
    benchmark::DoNotOptimize(parser.target);
    benchmark::DoNotOptimize(parser.body);
    ++requests;
  }
  return requests;
}

const std::string& input(int which) {
  return which == 0 ? kGet : which == 1 ? kPost : kPipelined16;
}
int expected_requests(int which) { return which == 2 ? 16 : 1; }

void BM_HttpParse_Ours(benchmark::State& state) {
  const std::string& in = input(static_cast<int>(state.range(0)));
  idforge::server::HttpRequestParser parser(kLimits);
  int64_t requests = 0;
  for (auto _ : state) {
    const int n = parse_ours(parser, in);
    if (n != expected_requests(static_cast<int>(state.range(0)))) {
      state.SkipWithError("our parser did not parse the input");
      break;
    }
    requests += n;
  }
  state.SetItemsProcessed(requests);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

void BM_HttpParse_BeastRequestParser(benchmark::State& state) {
  const std::string& in = input(static_cast<int>(state.range(0)));
  int64_t requests = 0;
  for (auto _ : state) {
    const int n = parse_beast_request_parser(in);
    if (n != expected_requests(static_cast<int>(state.range(0)))) {
      state.SkipWithError("Beast's request_parser did not parse the input");
      break;
    }
    requests += n;
  }
  state.SetItemsProcessed(requests);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

void BM_HttpParse_BeastBasicParser(benchmark::State& state) {
  const std::string& in = input(static_cast<int>(state.range(0)));
  int64_t requests = 0;
  for (auto _ : state) {
    const int n = parse_beast_basic_parser(in);
    if (n != expected_requests(static_cast<int>(state.range(0)))) {
      state.SkipWithError("Beast's basic_parser did not parse the input");
      break;
    }
    requests += n;
  }
  state.SetItemsProcessed(requests);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

// Argument 0: the GET, 1: the POST, 2: 16 pipelined GETs in one buffer.
BENCHMARK(BM_HttpParse_Ours)->ArgName("input")->DenseRange(0, 2);
BENCHMARK(BM_HttpParse_BeastRequestParser)->ArgName("input")->DenseRange(0, 2);
BENCHMARK(BM_HttpParse_BeastBasicParser)->ArgName("input")->DenseRange(0, 2);

}  // namespace
