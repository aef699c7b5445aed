#include "clients.h"

#include <fmt/format.h>

#include <random>

#include "support/wire.h"

namespace idforge::torture {
namespace {

using test_support::Connection;
using test_support::HttpReply;
using test_support::parse_http_reply;
using test_support::parse_id_lines;
using test_support::parse_resp_reply;
using test_support::ParseResult;
using test_support::resp_command;
using test_support::RespReply;

constexpr int kMinBatch = 100;
constexpr int kMaxBatch = 1000;
// After an error answer or a failed connect: a real client backs off a little rather
// than spin on a node that is down.
constexpr auto kErrorPause = std::chrono::milliseconds(20);
constexpr auto kConnectPause = std::chrono::milliseconds(50);

const char* protocol_name(Protocol p) { return p == Protocol::kHttp ? "http" : "resp"; }

// `code` of {"error":{"code":"...",...}}.
std::string json_error_code(const std::string& body) {
  const std::string key = "\"code\":\"";
  const size_t at = body.find(key);
  if (at == std::string::npos) return "?";
  const size_t end = body.find('"', at + key.size());
  return body.substr(at + key.size(),
                     end == std::string::npos ? std::string::npos : end - at - key.size());
}

// "unavailable" of "ERR unavailable: worker lease ...".
std::string resp_error_code(const std::string& error) {
  std::string_view text = error;
  if (text.starts_with("ERR ")) text.remove_prefix(4);
  const size_t end = text.find_first_of(": ");
  return std::string(text.substr(0, end));
}

}  // namespace

ClientPool::ClientPool(std::vector<ServerProc*> servers, ClientOptions options)
    : servers_(std::move(servers)),
      options_(std::move(options)),
      server_received_(new std::atomic<uint64_t>[servers_.size() * kKinds]()) {
  for (size_t s = 0; s < servers_.size(); ++s) {
    for (Protocol p : {Protocol::kHttp, Protocol::kResp}) {
      for (int t = 0; t < options_.threads_per_protocol; ++t) {
        ClientRecord record;
        record.server = static_cast<int>(s);
        record.protocol = p;
        records_.push_back(std::move(record));
      }
    }
  }
}

void ClientPool::start() {
  stopping_ = false;
  for (size_t i = 0; i < records_.size(); ++i) threads_.emplace_back([this, i] { run(i); });
}

void ClientPool::stop() {
  stopping_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ClientPool::run(size_t index) {
  ClientRecord& rec = records_[index];
  ServerProc& server = *servers_[static_cast<size_t>(rec.server)];
  const char* proto = protocol_name(rec.protocol);
  std::mt19937_64 rng(options_.seed * 1'000'003 + index);
  std::uniform_int_distribution<int> batch_size(kMinBatch, kMaxBatch);
  std::uniform_int_distribution<int> percent(0, 99);
  const double rate = options_.ids_per_second > 0
                          ? options_.ids_per_second / static_cast<double>(records_.size())
                          : 0;
  auto next_slot = Clock::now();
  Connection conn;
  int conn_incarnation = 0;
  std::string error;
  std::vector<uint64_t> ids;  // one answer's

  const auto count_error = [&](const std::string& kind, const std::string& message) {
    ErrorCount& e = rec.errors[kind];
    if (e.count++ == 0) e.example = message;
  };

  while (!stopping_.load(std::memory_order_relaxed)) {
    if (!server.up.load()) {
      conn.close();
      std::this_thread::sleep_for(kConnectPause);
      continue;
    }
    if (!conn.is_open()) {
      const int port = rec.protocol == Protocol::kHttp ? server.http_port : server.resp_port;
      if (!conn.connect(port, Clock::now() + std::chrono::seconds(2), &error)) {
        count_error(fmt::format("{} connect: {}", proto, error), error);
        std::this_thread::sleep_for(kConnectPause);
        continue;
      }
      conn_incarnation = server.incarnation.load();
    }

    // Half Snowflake, the rest the node's segment tags (a quarter each of PostgreSQL's
    // two, or the Redis store's one), or only Snowflake while the node is drained of
    // segment traffic; over RESP a few single INCRs as well. Read per request: the spare
    // takes the settings of the node it replaces.
    const int pick = percent(rng);
    const Kind kind = pick < 50 || server.segments_drained.load() ? kSnowflake
                      : server.serves_redis_tag.load()            ? kSegmentR
                      : pick < 75                                 ? kSegmentA
                                                                  : kSegmentB;
    const std::string& tag = options_.tags[kind == kSnowflake ? 0 : kind - kSegmentA];
    int count = batch_size(rng);
    std::string request;
    if (rec.protocol == Protocol::kHttp) {
      const std::string path = kind == kSnowflake ? "/v1/snowflake" : "/v1/segment/" + tag;
      request = fmt::format("GET {}?count={}&format=text HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path,
                            count);
    } else if (kind == kSnowflake) {
      request = resp_command({"ID.SNOWFLAKE", std::to_string(count)});
    } else if (percent(rng) < 5) {
      count = 1;
      request = resp_command({"INCR", tag});
    } else {
      request = resp_command({"ID.NEXT", tag, std::to_string(count)});
    }

    ++rec.requests;
    const auto deadline = Clock::now() + options_.read_timeout;
    if (!conn.send_all(request, deadline, &error)) {
      count_error(fmt::format("{} {}", proto, error), error);
      conn.close();
      continue;
    }
    const char* kind_name = kind == kSnowflake ? "snowflake" : "segment";
    ids.clear();
    bool answered = false;
    bool error_answer = false;
    while (!answered) {
      ParseResult parsed;
      if (rec.protocol == Protocol::kHttp) {
        HttpReply reply;
        parsed = parse_http_reply(conn.buffer(), &reply);
        if (parsed == ParseResult::kDone) {
          answered = true;
          if (reply.status == 200) {
            if (!parse_id_lines(reply.body, &ids)) {
              ids.clear();
              count_error("http bad answer", reply.body.substr(0, 200));
              error_answer = true;
              conn.close();
            }
          } else {
            count_error(
                fmt::format("http {} {} {}", kind_name, reply.status, json_error_code(reply.body)),
                reply.body.substr(0, 300));
            error_answer = true;
            if (reply.close) conn.close();
          }
        }
      } else {
        RespReply reply;
        parsed = parse_resp_reply(conn.buffer(), &reply);
        if (parsed == ParseResult::kDone) {
          answered = true;
          if (reply.is_error) {
            count_error(fmt::format("resp {} {}", kind_name, resp_error_code(reply.error)),
                        reply.error.substr(0, 300));
            error_answer = true;
          } else {
            ids.insert(ids.end(), reply.ints.begin(), reply.ints.end());
          }
        }
      }
      if (parsed == ParseResult::kBad) {
        count_error(fmt::format("{} bad answer", proto), conn.buffer().substr(0, 200));
        conn.close();
        error_answer = true;
        break;
      }
      if (!answered && !conn.read_more(deadline, &error)) {
        count_error(fmt::format("{} {}", proto, error), error);
        conn.close();
        error_answer = true;
        break;
      }
    }

    const size_t got = ids.size();
    if (got > 0) {
      // Kept even when short: an ID that reached a client must be checked.
      Range origin;
      origin.server = static_cast<uint16_t>(rec.server);
      origin.incarnation = static_cast<uint16_t>(conn_incarnation);
      origin.at_ms = static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - options_.run_start)
              .count());
      origin.protocol = rec.protocol;
      append_ranges(ids, origin, &rec.ranges[kind]);
      rec.ids[kind] += got;
      ids_received_.fetch_add(got, std::memory_order_relaxed);
      kind_received_[kind].fetch_add(got, std::memory_order_relaxed);
      server_received_[static_cast<size_t>(rec.server) * kKinds + kind].fetch_add(
          got, std::memory_order_relaxed);
    }
    if (!error_answer && got != static_cast<size_t>(count)) {
      count_error(fmt::format("{} short answer", proto),
                  fmt::format("asked for {}, got {}", count, got));
    } else if (!error_answer) {
      ++rec.ok;
    }
    if (error_answer) {
      std::this_thread::sleep_for(kErrorPause);
      continue;
    }
    if (rate > 0) {
      const auto now = Clock::now();
      next_slot += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(got) / rate));
      // Time lost to errors or pauses is not made up in a burst.
      if (next_slot < now - std::chrono::seconds(1)) next_slot = now - std::chrono::seconds(1);
      if (next_slot > now) std::this_thread::sleep_until(next_slot);
    }
  }
}

}  // namespace idforge::torture
