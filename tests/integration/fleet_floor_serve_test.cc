// The fleet floor through real `idforge serve` processes and real stores and registries:
// two nodes that served different amounts, then a store that goes back with its
// identity — a Redis wiped and its tag recreated at 1 (registry: etcd), a MariaDB
// restored from a logical dump or from a physical backup of its data directory on the same
// host (registry: Redis), a PostgreSQL restored from pg_dump (registry: ZooKeeper). With the floor
// no ID repeats and IDs flow again; with it taken out (--fleet-floor false) the same steps repeat
// IDs, which shows the floor is what keeps them apart (docs/stores.md, "The fleet floor").
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "integration/serve_node.h"
#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

namespace fs = std::filesystem;

enum class Scenario { kRedisWiped, kMariadbDump, kPostgresDump, kMariadbPhysical };

struct Case {
  Scenario scenario;
  bool floor;
};

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  const Case& c = param_info.param;
  const char* s = c.scenario == Scenario::kRedisWiped        ? "redis_wiped"
                  : c.scenario == Scenario::kMariadbDump     ? "mariadb_dump"
                  : c.scenario == Scenario::kMariadbPhysical ? "mariadb_physical"
                                                             : "postgres_dump";
  return std::string(s) + (c.floor ? "_floor" : "_no_floor");
}

// host and port of a store URL ("mysql://u:p@127.0.0.1:1234/db" -> 1234).
std::string port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  const size_t end = url.find('/', colon);
  return url.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
}

class FleetFloorServeTest : public ::testing::TestWithParam<Case> {
 protected:
  static fs::path backup_dir(const Server& store) { return fs::path(store.dir) / "backup"; }

  // `idforge tag create` as an operator runs it.
  void create_tag(const std::string& registry) {
    const std::string scratch = Services::get().make_dir("tag-create");
    test_support::RunResult r = test_support::run_command(
        {idforge_bin(), "tag", "create", tag_, "--start", "1", "--step", "100", "--store",
         store_url_, "--data-dir", scratch + "/data", "--registry", registry},
        scratch + "/create");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  std::unique_ptr<ServeNode> node(const std::string& name) {
    std::vector<std::string> args = {"--store",       store_url_,
                                     "--registry",    registry_url_,
                                     "--fleet-floor", GetParam().floor ? "true" : "false"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    Result<std::unique_ptr<ServeNode>> n = ServeNode::start(Services::get().make_dir(name), args);
    EXPECT_TRUE(n.ok()) << n.status().to_string();
    return n.ok() ? std::move(n).value() : nullptr;
  }

  // `requests` requests of `count` IDs each; every ID kept in ids_. Failed requests are
  // counted (a refused range can cost one).
  void pull(ServeNode& n, int requests, int count) {
    HttpClient http(n.http_port());
    for (int i = 0; i < requests; ++i) {
      Result<HttpReply> r = http.get("/v1/segment/" + tag_ + "?count=" + std::to_string(count),
                                     std::chrono::seconds(10));
      if (!r.ok() || r->status != 200) {
        ++failed_;
        last_error_ = r.ok() ? r->body : r.status().to_string();
        continue;
      }
      const auto json = nlohmann::json::parse(r->body);
      for (const auto& id : json["ids"]) ids_.push_back(std::stoull(id.get<std::string>()));
      ++served_requests_;
    }
  }

  size_t repeats() {
    std::vector<uint64_t> sorted = ids_;
    std::sort(sorted.begin(), sorted.end());
    size_t n = 0;
    for (size_t i = 1; i < sorted.size(); ++i) n += sorted[i] == sorted[i - 1];
    return n;
  }

  std::string tag_ = unique_tag("ff");
  std::string store_url_;
  std::string registry_url_;
  std::vector<std::string> extra_args_;
  std::vector<uint64_t> ids_;
  int failed_ = 0;
  int served_requests_ = 0;
  std::string last_error_;
};

TEST_P(FleetFloorServeTest, TwoNodesAndAStoreThatWentBackWithItsIdentity) {
  const Case c = GetParam();
  Services& services = Services::get();
  Server store;
  if (c.scenario == Scenario::kRedisWiped) {
    Result<Server> redis = services.start_private(ServerKind::kRedis, "ff-store");
    ASSERT_TRUE(redis.ok()) << redis.status().to_string();
    store = *redis;
    Result<std::string> etcd = services.etcd_url();
    ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
    registry_url_ = *etcd + "?cluster=" + unique_tag("ffc");
  } else if (c.scenario == Scenario::kMariadbDump || c.scenario == Scenario::kMariadbPhysical) {
    Result<Server> maria = c.scenario == Scenario::kMariadbDump
                               ? services.shared(ServerKind::kMariadb)
                               : services.start_private(ServerKind::kMariadb, "ff-maria");
    ASSERT_TRUE(maria.ok()) << maria.status().to_string();
    store = *maria;
    Result<std::string> redis = services.redis_url();
    ASSERT_TRUE(redis.ok()) << redis.status().to_string();
    // A short TTL: a brand-new Redis registry holds its first leases for 2 x ttl (and a
    // lease kept apart by timing must outlast the logical drift).
    registry_url_ = *redis + "?ttl_ms=1000&cluster=" + unique_tag("ffc");
    extra_args_ = {"--max-drift-ms", "400"};
  } else {
    Result<Server> pg = services.shared(ServerKind::kPostgres);
    ASSERT_TRUE(pg.ok()) << pg.status().to_string();
    store = *pg;
    Result<std::string> zk = services.zookeeper_url();
    ASSERT_TRUE(zk.ok()) << zk.status().to_string();
    registry_url_ = *zk + "?cluster=" + unique_tag("ffc");
  }
  store_url_ = store.url;
  create_tag(registry_url_);

  std::unique_ptr<ServeNode> a = node("ff-a");
  std::unique_ptr<ServeNode> b = node("ff-b");
  ASSERT_TRUE(a && b);
  pull(*a, 1, 50);  // a holds the first range, 1..100
  const std::string dump = services.make_dir("ff-dump") + "/dump.sql";
  if (c.scenario == Scenario::kMariadbDump) {
    test_support::RunResult r = test_support::run_command(
        {"/usr/bin/mariadb-dump", "--single-transaction", "-h", "127.0.0.1", "-P",
         port_of(store_url_), "-u", "idforge", "-pidforge", "--result-file=" + dump, "idforge"},
        dump);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  } else if (c.scenario == Scenario::kMariadbPhysical) {
    // A physical backup: the data directory copied while the server is stopped.
    ASSERT_TRUE(services.stop(store).ok());
    test_support::RunResult copied = test_support::run_command(
        {"/bin/cp", "-a", (fs::path(store.dir) / "data").string(), backup_dir(store).string()},
        store.dir + "/backup-copy");
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
    ASSERT_TRUE(services.restart(store).ok());
  } else if (c.scenario == Scenario::kPostgresDump) {
    test_support::RunResult r =
        test_support::run_command({"/usr/bin/pg_dump", "--clean", "-h", "127.0.0.1", "-p",
                                   port_of(store_url_), "-U", "idforge", "-f", dump, "idforge"},
                                  dump);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  pull(*b, 30, 100);  // b serves 3,000 more
  const size_t before = ids_.size();
  ASSERT_EQ(repeats(), 0u);

  if (c.scenario == Scenario::kRedisWiped) {
    // A crash and the data with it; an operator recreates the tag at 1 from a machine
    // that does not see the fleet's registry.
    ASSERT_TRUE(services.kill(store).ok());
    std::error_code ec;
    fs::remove_all(fs::path(store.dir) / "appendonlydir", ec);
    fs::remove(fs::path(store.dir) / "dump.rdb", ec);
    ASSERT_TRUE(services.restart(store).ok());
    // Both nodes' probers look at the empty store first (every 2 s): the first takes it
    // for a new store, and neither node's identity check moves the tag later.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    create_tag("local:" + services.make_dir("ff-operator"));
  } else if (c.scenario == Scenario::kMariadbPhysical) {
    // The backup restored on the same host: the same server_id, host and port, so the
    // same identity, and max_id back at 100.
    ASSERT_TRUE(services.stop(store).ok());
    std::error_code ec;
    fs::remove_all(fs::path(store.dir) / "data", ec);
    fs::rename(backup_dir(store), fs::path(store.dir) / "data", ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(services.restart(store).ok());
  } else {
    // The dump loaded back into the same server: the same identity, max_id back at 100.
    test_support::RunResult r =
        services.client(store, {c.scenario == Scenario::kMariadbDump ? "-e" : "-f",
                                c.scenario == Scenario::kMariadbDump ? "source " + dump : dump});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  pull(*a, 20, 100);
  pull(*b, 20, 100);
  const size_t after = ids_.size() - before;
  std::printf("[ %s ] %zu IDs before, %zu after, %zu repeated; %d requests failed (last: %s)\n",
              case_name({c, 0}).c_str(), before, after, repeats(), failed_, last_error_.c_str());
  if (c.floor) {
    EXPECT_EQ(repeats(), 0u);
    EXPECT_GE(after, 3000u) << "IDs must flow again: " << last_error_;
  } else {
    EXPECT_GT(repeats(), 0u) << "without the fleet floor this scenario should repeat IDs";
  }
  EXPECT_TRUE(a->stop().ok()) << a->stderr_tail();
  EXPECT_TRUE(b->stop().ok()) << b->stderr_tail();
  if (c.scenario == Scenario::kRedisWiped || c.scenario == Scenario::kMariadbPhysical) {
    EXPECT_TRUE(services.stop(store).ok());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, FleetFloorServeTest,
    ::testing::Values(Case{Scenario::kRedisWiped, true}, Case{Scenario::kRedisWiped, false},
                      Case{Scenario::kMariadbDump, true}, Case{Scenario::kMariadbDump, false},
                      Case{Scenario::kPostgresDump, true}, Case{Scenario::kPostgresDump, false},
                      Case{Scenario::kMariadbPhysical, true},
                      Case{Scenario::kMariadbPhysical, false}),
    case_name);

// The command line reads and records the same floor: `idforge next --tag` records its
// ranges, `idforge tag served` shows the fleet's highest, and `idforge tag create` moves a
// start at or below it above it, with a warning, so an operator who recreates a lost
// tag at 1 gets IDs above everything the fleet served.
TEST(FleetFloorCliTest, NextRecordsServedShowsAndCreateStartsAboveTheFloor) {
  const std::string dir = Services::get().make_dir("ff-cli");
  const std::string registry = "local:" + dir + "/registry";
  const std::string db = dir + "/ids.db";
  auto idforge = [&](std::vector<std::string> args) {
    args.insert(args.begin(), idforge_bin());
    args.insert(args.end(), {"--data-dir", dir + "/data"});
    return test_support::run_command(args, dir + "/cli");
  };
  test_support::RunResult r = idforge(
      {"tag", "create", "t", "--step", "100", "--store", "sqlite:" + db, "--registry", registry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = idforge(
      {"next", "--tag", "t", "--count", "250", "--store", "sqlite:" + db, "--registry", registry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = idforge({"tag", "served", "t", "--registry", registry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fleet floor local:"), std::string::npos) << r.out;
  // What the fleet took: at least the 250 printed (the buffer fetches ahead).
  const size_t at = r.out.find("--start ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string start = std::to_string(std::stoull(r.out.substr(at + 8)));
  EXPECT_GT(std::stoull(start), 250u);

  // The store is lost and the tag recreated at 1, from another data directory.
  fs::remove(db);
  r = test_support::run_command(
      {idforge_bin(), "tag", "create", "t", "--start", "1", "--store", "sqlite:" + db, "--registry",
       registry, "--data-dir", dir + "/elsewhere"},
      dir + "/create");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("it starts at " + start + " instead of 1"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("first ID " + start), std::string::npos) << r.out;
}

}  // namespace
}  // namespace idforge::integration
