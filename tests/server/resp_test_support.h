// Shared by the RESP session tests: a real IdService (static worker id 0/1, SQLite
// segments in a temporary directory, tags "order" from 1001 by 1000 and "tiny" from 1
// by 3) behind a RESP session, driven with strings as the network runtime would drive
// it: feed, drop what was consumed, run a kBlocking step's job (inline here), feed
// again; and a reader for the answers.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/segment_store.h"
#include "server/resp/resp_session.h"
#include "server/service/id_service.h"

namespace idforge::server::resp_test {

namespace fs = std::filesystem;
using Next = Session::Next;

// One RESP value as a test reads it back.
struct Reply {
  char type = 0;             // '+', '-', ':', '$', '*', '%', '_' ('$' with null = true: nil)
  std::string text;          // simple string, error, bulk string or the integer's digits
  std::vector<Reply> items;  // array elements; map keys and values alternating
  bool null = false;

  uint64_t number() const { return std::stoull(text); }
};

// The numbers of an array reply's items, in order.
inline std::vector<uint64_t> numbers(const Reply& array) {
  std::vector<uint64_t> ids;
  for (const Reply& item : array.items) ids.push_back(item.number());
  return ids;
}

inline bool read_line(std::string_view in, size_t& pos, std::string& line) {
  const size_t end = in.find("\r\n", pos);
  if (end == std::string_view::npos) return false;
  line = std::string(in.substr(pos, end - pos));
  pos = end + 2;
  return true;
}

inline bool read_reply(std::string_view in, size_t& pos, Reply& reply) {
  if (pos >= in.size()) return false;
  reply = Reply{};
  reply.type = in[pos++];
  std::string line;
  if (!read_line(in, pos, line)) return false;
  switch (reply.type) {
    case '+':
    case '-':
    case ':':
      reply.text = line;
      return true;
    case '_':
      reply.null = true;
      return line.empty();
    case '$': {
      const long long len = std::stoll(line);
      if (len < 0) {
        reply.null = true;
        return true;
      }
      if (in.size() - pos < static_cast<size_t>(len) + 2) return false;
      reply.text = std::string(in.substr(pos, static_cast<size_t>(len)));
      pos += static_cast<size_t>(len);
      return in.substr(pos, 2) == "\r\n" && (pos += 2, true);
    }
    case '*':
    case '%': {
      long long n = std::stoll(line);
      if (reply.type == '%') n *= 2;
      reply.items.resize(static_cast<size_t>(n));
      for (Reply& item : reply.items) {
        if (!read_reply(in, pos, item)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

// Every reply in `out`; fails the test if it is not well-formed RESP.
inline std::vector<Reply> replies_of(std::string_view out) {
  std::vector<Reply> replies;
  size_t pos = 0;
  while (pos < out.size()) {
    Reply r;
    if (!read_reply(out, pos, r)) {
      ADD_FAILURE() << "malformed RESP at " << pos << " in: " << out;
      break;
    }
    replies.push_back(std::move(r));
  }
  return replies;
}

// Key/value pairs of a map reply, or of a RESP2 flat array of alternating keys/values.
inline std::vector<std::pair<std::string, std::string>> pairs_of(const Reply& r) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i + 1 < r.items.size(); i += 2) {
    pairs.emplace_back(r.items[i].text, r.items[i + 1].text);
  }
  return pairs;
}

struct Driven {
  std::string out;
  bool closed = false;
  int jobs = 0;         // kBlocking steps run
  int flushes = 0;      // kFlush steps
  size_t most_out = 0;  // the largest `out` a step left
  size_t leftover = 0;  // bytes not consumed at the end
  size_t written = 0;   // bytes of `out` a kFlush step handed to the "runtime"
};

// Feeds `in` as the runtime does: erase what was consumed, run kBlocking jobs inline,
// feed again, until the session needs more or closes.
inline Driven drive(Session& session, std::string in, Driven run = {}) {
  while (true) {
    Session::Step step = session.feed(in, run.out);
    EXPECT_LE(step.consumed, in.size());
    in.erase(0, std::min(step.consumed, in.size()));
    run.most_out = std::max(run.most_out, run.out.size() - run.written);
    if (step.next == Next::kFlush) {
      ++run.flushes;
      run.written = run.out.size();  // the runtime writes it out here
      continue;
    }
    if (step.next == Next::kBlocking) {
      EXPECT_TRUE(step.blocking);
      if (!step.blocking) break;
      step.blocking(run.out);
      ++run.jobs;
      continue;
    }
    run.closed = step.next == Next::kClose;
    break;
  }
  run.leftover = in.size();
  return run;
}

// Feeds `in` one byte at a time, as the runtime may hand it over, keeping what each
// step leaves unread for the next; the connection must stay open throughout.
inline Driven drive_byte_by_byte(Session& session, std::string_view in) {
  Driven run;
  std::string pending;
  for (char c : in) {
    pending += c;
    run = drive(session, pending, std::move(run));
    EXPECT_FALSE(run.closed);
    if (run.closed) break;
    pending.erase(0, pending.size() - run.leftover);
  }
  return run;
}

class RespSessionFixture : public ::testing::Test {
 protected:
  // A suite's changes to the service's configuration (more stores, a lower max_count).
  virtual void configure(ServiceConfig& c) { (void)c; }

  void SetUp() override {
    char tmpl[] = "/tmp/idforge-resp-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ServiceConfig c;
    c.data_dir = dir_;
    c.registry_url = "static:0/1";
    c.store_urls = {"sqlite:" + dir_ + "/segments.db"};
    c.identity = "test:resp";
    configure(c);
    Result<std::unique_ptr<IdService>> s = IdService::start(std::move(c));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    service_ = std::move(s).value();
    ASSERT_TRUE(service_->create_tag(TagSpec{"order", 1001, 1000, "", ""}).ok());
    ASSERT_TRUE(service_->create_tag(TagSpec{"tiny", 1, 3, "", ""}).ok());
    factory_ = make_resp_session_factory(*service_);
    session_ = factory_();
  }
  void TearDown() override {
    session_.reset();
    service_.reset();
    fs::remove_all(dir_);
  }

  Driven send(std::string in) { return drive(*session_, std::move(in)); }
  // The replies to `in`, which must leave the connection open with nothing unread.
  std::vector<Reply> ask(std::string in) {
    Driven run = send(std::move(in));
    EXPECT_FALSE(run.closed);
    EXPECT_EQ(run.leftover, 0u);
    return replies_of(run.out);
  }
  Reply ask_one(std::string in) {
    std::vector<Reply> replies = ask(std::move(in));
    EXPECT_EQ(replies.size(), 1u);
    return replies.empty() ? Reply{} : replies[0];
  }

  std::string dir_;
  std::unique_ptr<IdService> service_;
  SessionFactory factory_;
  std::unique_ptr<Session> session_;
};

}  // namespace idforge::server::resp_test
