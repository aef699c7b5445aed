// The fixture of the C++ client's tests against real servers (client_servers_test.cc,
// client_failover_test.cc): one pair of `idforge serve` (client_cluster.h) per test
// process, healed before and after each test, and small helpers.
//
// Requests that are not about timeouts get a generous one (kSlowOk): make test runs much
// at once on a few cores, and a starved server must not look like a dead one.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client_cluster.h"
#include "idforge/client.h"

#ifndef IDFORGE_BIN
#error "IDFORGE_BIN must name the idforge binary"
#endif

namespace idforge::client_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline constexpr int64_t kSlowOk = 3000;

inline std::unique_ptr<Client> open_client(std::vector<std::string> servers,
                                           ClientOptions options = {}) {
  options.servers = std::move(servers);
  Result<std::unique_ptr<Client>> client = Client::open(options);
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(client).value() : nullptr;
}

inline std::pair<uint64_t, uint64_t> node_of(uint64_t id) {
  Result<ParsedId> d = Client::parse(id);
  return {d->get("datacenter"), d->get("worker")};
}

inline int64_t unix_ms_of(uint64_t id) { return Client::parse(id)->unix_ms; }

inline int64_t now_unix_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline ClientBufferState buffer(const Client& c, std::string_view kind, std::string_view tag = "") {
  for (const ClientBufferState& b : c.stats().buffers) {
    if (b.kind == kind && b.tag == tag) return b;
  }
  return {};
}

inline bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

class ClientServersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    cluster_ = Cluster::start(IDFORGE_BIN, {"order", "stock", "item", "outage"}, &error).release();
    start_error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete start_error_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr) << *start_error_;
    cluster_->heal();
  }
  void TearDown() override {
    if (cluster_ != nullptr) cluster_->heal();
  }

  ServerProc& a() { return cluster_->a(); }
  ServerProc& b() { return cluster_->b(); }
  // (datacenter, worker) of a server's Snowflake IDs.
  std::pair<uint64_t, uint64_t> node(const ServerProc& s) {
    ClientOptions o;
    o.buffer = false;
    o.timeout_ms = kSlowOk;
    std::unique_ptr<Client> c = open_client({s.http()}, o);
    Result<uint64_t> id = c->snowflake();
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    return id.ok() ? node_of(*id) : std::pair<uint64_t, uint64_t>{};
  }

  static inline Cluster* cluster_ = nullptr;
  static inline std::string* start_error_ = nullptr;
};

}  // namespace idforge::client_test
