// Shared by the HTTP session and route tests: a real IdService (static worker id 0/1,
// SQLite segments in a temporary directory) behind the HTTP session, driven with
// strings as the network runtime would drive it: feed, drop what was consumed, run a
// kBlocking step's job (inline here), feed again; and a reader for the answers.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/http_session.h"
#include "server/service/id_service.h"
#include "server/service/metrics.h"

namespace idforge::server::http_test {

using ::testing::StartsWith;
using Json = nlohmann::json;
using Next = Session::Next;

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  Json json() const {
    Json parsed = Json::parse(body, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << body;
    return parsed;
  }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  std::string error_code() const {
    Json j = json();
    return j.contains("error") ? j["error"].value("code", "") : "";
  }
};

// Splits the session's output into answers; the answers whose index is in `heads` are
// to HEAD requests and have no body. Checks the framing on the way.
inline std::vector<Response> split_responses(std::string_view text, const std::set<size_t>& heads) {
  std::vector<Response> responses;
  while (!text.empty()) {
    Response r;
    size_t head_end = text.find("\r\n\r\n");
    EXPECT_NE(head_end, std::string_view::npos) << text;
    if (head_end == std::string_view::npos) break;
    std::string_view head = text.substr(0, head_end + 2);
    EXPECT_THAT(std::string(head), StartsWith("HTTP/1.1 "));
    r.status = std::stoi(std::string(head.substr(9, 3)));
    size_t line_end = head.find("\r\n");
    for (size_t pos = line_end + 2; pos < head.size();) {
      size_t end = head.find("\r\n", pos);
      std::string_view line = head.substr(pos, end - pos);
      size_t colon = line.find(": ");
      std::string name(line.substr(0, colon));
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      r.headers[name] = std::string(line.substr(colon + 2));
      pos = end + 2;
    }
    size_t length = std::stoul(r.header("content-length"));
    text.remove_prefix(head_end + 4);
    if (heads.count(responses.size()) == 0) {
      EXPECT_GE(text.size(), length);
      r.body = std::string(text.substr(0, length));
      text.remove_prefix(std::min(length, text.size()));
    }
    responses.push_back(std::move(r));
  }
  return responses;
}

struct Driven {
  std::vector<Response> responses;
  std::string out;
  Next last = Next::kNeedMore;
  std::string left;  // unconsumed input
  int blocking = 0;  // kBlocking steps taken
  int flushes = 0;   // kFlush steps taken
};

// What the runtime does with `input` arriving at once.
inline Driven drive(Session& session, std::string input, const std::set<size_t>& heads = {}) {
  Driven d;
  for (int round = 0; round < 1000; ++round) {
    Session::Step step = session.feed(input, d.out);
    EXPECT_LE(step.consumed, input.size());
    input.erase(0, std::min(step.consumed, input.size()));
    if (step.next == Next::kFlush) {
      ++d.flushes;
      continue;
    }
    if (step.next == Next::kBlocking) {
      EXPECT_TRUE(step.blocking);
      if (step.blocking) step.blocking(d.out);
      ++d.blocking;
      continue;
    }
    d.last = step.next;
    break;
  }
  d.left = input;
  d.responses = split_responses(d.out, heads);
  return d;
}

inline std::string get(std::string_view target, std::string_view headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n" + std::string(headers) +
         "\r\n";
}

inline uint64_t to_u64(const Json& value) {
  EXPECT_TRUE(value.is_string()) << value;  // 64-bit IDs are strings in JSON
  std::string text = value.is_string() ? value.get<std::string>() : "";
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  EXPECT_TRUE(ec == std::errc() && ptr == text.data() + text.size() && !text.empty()) << text;
  return n;
}

inline std::vector<uint64_t> ids_of(const Response& r) {
  std::vector<uint64_t> ids;
  const Json body = r.json();
  for (const Json& id : body["ids"]) ids.push_back(to_u64(id));
  return ids;
}

inline void expect_increasing(const std::vector<uint64_t>& ids) {
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]) << i;
}

class HttpServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { start(""); }

  void TearDown() override {
    service_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void start(const std::string& admin_token) {
    service_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    std::string pattern = ::testing::TempDir() + "idforge-http-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ServiceConfig c;
    c.data_dir = dir_;
    c.registry_url = "static:0/1";
    c.store_urls = {"sqlite:" + dir_ + "/segments.db"};
    c.admin_token = admin_token;
    Result<std::unique_ptr<IdService>> started = IdService::start(c);
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    service_ = std::move(started).value();
    factory_ = make_http_session_factory(*service_);
  }

  void create_tag(const std::string& name, const std::string& serial_template = "") {
    TagSpec spec;
    spec.name = name;
    spec.start = 1001;
    spec.step = 100;
    spec.serial_template = serial_template;
    Result<TagInfo> created = service_->create_tag(spec);
    ASSERT_TRUE(created.ok()) << created.status().to_string();
  }

  // One request on a fresh connection; expects exactly one answer.
  Response one(const std::string& request, bool head = false) {
    std::unique_ptr<Session> session = factory_();
    Driven d = drive(*session, request, head ? std::set<size_t>{0} : std::set<size_t>{});
    EXPECT_EQ(d.responses.size(), 1u) << d.out;
    return d.responses.empty() ? Response{} : d.responses[0];
  }
  Response one_get(std::string_view target) { return one(get(target)); }

  std::string dir_;
  std::unique_ptr<IdService> service_;
  SessionFactory factory_;
};

}  // namespace idforge::server::http_test
