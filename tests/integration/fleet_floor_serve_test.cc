// The fleet floor through real `idforge serve` processes and real stores and registries:
// three nodes that served different amounts (50 IDs before the point the store goes back
// to, then 3,000 and 1,200), then a store that goes back — a Redis wiped and its tag
// recreated at 1 (registry: etcd), a MariaDB restored from a logical dump or from a
// physical backup of its data directory on the same host (registry: Redis), a PostgreSQL
// restored from pg_dump (registry: ZooKeeper), a MariaDB whose max_id an operator lowered
// by hand (registry: etcd), a PostgreSQL primary that died and its asynchronous replica,
// which missed the last ranges, promoted (registry: etcd). With the floor no ID repeats and
// IDs flow again; with it taken out (--fleet-floor false) the same steps repeat IDs, which
// shows the floor is what keeps them apart (docs/stores.md, "The fleet floor").
//
// The failover changes the store's history (a new timeline), so the identity check moves
// every tag forward by the failover margin as well; the default margin (64 x max_step)
// is far above what these nodes served, and alone keeps them apart:
// postgres_failover_no_floor_default_margin measures that, 0 repeated. The other two
// failover cases set a margin of one step (100), below what the nodes served during the
// lag, as a lag longer than the margin was sized for: then only the floor keeps them
// apart. The nodes are restarted on the promoted replica's URL in a fixed order, so the
// node that served least adopts the new history (with a multi-host URL the first prober
// to see it does, and whether the margin covers the others depends on which one).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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
using Steady = std::chrono::steady_clock;

enum class Scenario {
  kRedisWiped,
  kMariadbDump,
  kPostgresDump,
  kMariadbPhysical,
  kMaxIdLowered,
  kPostgresFailover
};

struct Case {
  Scenario scenario;
  bool floor;
  uint64_t margin = 0;  // --failover-margin; 0: the default (64 x max_step)
};

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  const Case& c = param_info.param;
  const char* s = c.scenario == Scenario::kRedisWiped         ? "redis_wiped"
                  : c.scenario == Scenario::kMariadbDump      ? "mariadb_dump"
                  : c.scenario == Scenario::kMariadbPhysical  ? "mariadb_physical"
                  : c.scenario == Scenario::kMaxIdLowered     ? "mariadb_max_id_lowered"
                  : c.scenario == Scenario::kPostgresFailover ? "postgres_failover"
                                                              : "postgres_dump";
  std::string name = std::string(s) + (c.floor ? "_floor" : "_no_floor");
  if (c.scenario == Scenario::kPostgresFailover && c.margin == 0) name += "_default_margin";
  return name;
}

// The port of a store URL ("mysql://u:p@127.0.0.1:1234/db" -> 1234).
std::string port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  const size_t end = url.find('/', colon);
  return url.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

class FleetFloorServeTest : public ::testing::TestWithParam<Case> {
 protected:
  static constexpr size_t kNodes = 3;
  static fs::path backup_dir(const Server& store) { return fs::path(store.dir) / "backup"; }

  // The store and the registry of the scenario.
  void start_servers() {
    const Scenario s = GetParam().scenario;
    Services& services = Services::get();
    if (s == Scenario::kRedisWiped) {
      Result<Server> redis = services.start_private(ServerKind::kRedis, "ff-store");
      ASSERT_TRUE(redis.ok()) << redis.status().to_string();
      store_ = *redis;
    } else if (s == Scenario::kMariadbDump || s == Scenario::kMaxIdLowered) {
      Result<Server> maria = services.shared(ServerKind::kMariadb);
      ASSERT_TRUE(maria.ok()) << maria.status().to_string();
      store_ = *maria;
    } else if (s == Scenario::kMariadbPhysical) {
      Result<Server> maria = services.start_private(ServerKind::kMariadb, "ff-maria");
      ASSERT_TRUE(maria.ok()) << maria.status().to_string();
      store_ = *maria;
    } else if (s == Scenario::kPostgresDump) {
      Result<Server> pg = services.shared(ServerKind::kPostgres);
      ASSERT_TRUE(pg.ok()) << pg.status().to_string();
      store_ = *pg;
    } else {
      Result<Server> primary = services.start_private(ServerKind::kPostgres, "ff-primary");
      ASSERT_TRUE(primary.ok()) << primary.status().to_string();
      store_ = *primary;
      Result<Server> replica = services.start_replica(store_, "ff-replica");
      ASSERT_TRUE(replica.ok()) << replica.status().to_string();
      replica_ = *replica;
    }
    store_url_ = store_.url;

    if (s == Scenario::kMariadbDump || s == Scenario::kMariadbPhysical) {
      Result<std::string> redis = services.redis_url();
      ASSERT_TRUE(redis.ok()) << redis.status().to_string();
      // A short TTL: a brand-new Redis registry holds its first leases for 2 x ttl (and a
      // lease kept apart by timing must outlast the logical drift).
      registry_url_ = *redis + "?ttl_ms=1000&cluster=" + unique_tag("ffc");
      extra_args_ = {"--max-drift-ms", "400"};
    } else if (s == Scenario::kPostgresDump) {
      Result<std::string> zk = services.zookeeper_url();
      ASSERT_TRUE(zk.ok()) << zk.status().to_string();
      registry_url_ = *zk + "?cluster=" + unique_tag("ffc");
    } else {
      Result<std::string> etcd = services.etcd_url();
      ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
      registry_url_ = *etcd + "?cluster=" + unique_tag("ffc");
    }
    if (GetParam().margin != 0) {
      extra_args_.insert(extra_args_.end(),
                         {"--failover-margin", std::to_string(GetParam().margin)});
    }
  }

  // `idforge tag create` as an operator runs it.
  void create_tag(const std::string& registry) {
    const std::string scratch = Services::get().make_dir("tag-create");
    test_support::RunResult r = test_support::run_command(
        {idforge_bin(), "tag", "create", tag_, "--start", "1", "--step", "100", "--store",
         store_url_, "--data-dir", scratch + "/data", "--registry", registry},
        scratch + "/create");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  // Starts the nodes `which` at once (each keeps its data directory across restarts) and
  // waits until they listen.
  void start_nodes(const std::vector<size_t>& which) {
    std::vector<std::string> args = {"--store",       store_url_,
                                     "--registry",    registry_url_,
                                     "--fleet-floor", GetParam().floor ? "true" : "false"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    for (size_t i : which) {
      if (dirs_[i].empty()) dirs_[i] = Services::get().make_dir(std::string("ff-") + "abc"[i]);
      Result<std::unique_ptr<ServeNode>> n = ServeNode::launch(dirs_[i], args);
      ASSERT_TRUE(n.ok()) << n.status().to_string();
      nodes_[i] = std::move(n).value();
    }
    for (size_t i : which) {
      Status up = nodes_[i]->await(std::chrono::seconds(20));
      ASSERT_TRUE(up.ok()) << up.to_string();
    }
  }

  void stop_nodes() {
    for (std::unique_ptr<ServeNode>& n : nodes_) {
      if (n) {
        EXPECT_TRUE(n->stop().ok()) << n->stderr_tail();
      }
      n.reset();
    }
  }

  // `requests` requests of `count` IDs each; every ID kept in ids_. A failed request is
  // counted and tried again, up to twice (a refused range, or the first request after the
  // store restarted, can cost one).
  void pull(ServeNode& n, int requests, int count) {
    HttpClient http(n.http_port());
    for (int i = 0; i < requests; ++i) {
      for (int attempt = 0; attempt < 3; ++attempt) {
        Result<HttpReply> r = http.get("/v1/segment/" + tag_ + "?count=" + std::to_string(count),
                                       std::chrono::seconds(10));
        if (!r.ok() || r->status != 200) {
          ++failed_;
          last_error_ = r.ok() ? r->body : r.status().to_string();
          continue;
        }
        const auto json = nlohmann::json::parse(r->body);
        for (const auto& id : json["ids"]) ids_.push_back(std::stoull(id.get<std::string>()));
        break;
      }
    }
  }

  // Each node's guard counters (/v1/status), summed; `line` lists them per node.
  struct Guards {
    uint64_t fleet_refused = 0, refused = 0, identity_changes = 0;
    std::array<uint64_t, kNodes> changes = {};  // identity changes applied, per node
    std::string line;
  };
  Guards guards() {
    Guards g;
    for (size_t i = 0; i < kNodes; ++i) {
      HttpClient http(nodes_[i]->http_port());
      Result<HttpReply> r = http.get("/v1/status", std::chrono::seconds(5));
      if (!r.ok() || r->status != 200) {
        ADD_FAILURE() << "/v1/status: " << (r.ok() ? r->body : r.status().to_string());
        continue;
      }
      const auto guard = nlohmann::json::parse(r->body)["segments"]["stores"][0]["guard"];
      const uint64_t fleet = guard["fleet_refused_ranges"].get<uint64_t>();
      const uint64_t own = guard["refused_ranges"].get<uint64_t>();
      const uint64_t changes = guard["identity_changes"].get<uint64_t>();
      g.fleet_refused += fleet;
      g.refused += own;
      g.identity_changes += changes;
      g.changes[i] = changes;
      g.line += std::string(g.line.empty() ? "" : "; ") + "abc"[i] + ": " + std::to_string(fleet) +
                " refused by the fleet, " + std::to_string(own) + " by its own marks, " +
                std::to_string(changes) + " identity changes";
    }
    return g;
  }

  size_t repeats() {
    std::vector<uint64_t> sorted = ids_;
    std::sort(sorted.begin(), sorted.end());
    size_t n = 0;
    for (size_t i = 1; i < sorted.size(); ++i) n += sorted[i] == sorted[i - 1];
    return n;
  }

  // What the store will go back to, taken after node a served its first 50 IDs.
  void take_checkpoint() {
    Services& services = Services::get();
    const Scenario s = GetParam().scenario;
    dump_ = services.make_dir("ff-dump") + "/dump.sql";
    if (s == Scenario::kMariadbDump) {
      test_support::RunResult r = test_support::run_command(
          {"/usr/bin/mariadb-dump", "--single-transaction", "-h", "127.0.0.1", "-P",
           port_of(store_url_), "-u", "idforge", "-pidforge", "--result-file=" + dump_, "idforge"},
          dump_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    } else if (s == Scenario::kMariadbPhysical) {
      // A physical backup: the data directory copied while the server is stopped.
      ASSERT_TRUE(services.stop(store_).ok());
      test_support::RunResult copied = test_support::run_command(
          {"/bin/cp", "-a", (fs::path(store_.dir) / "data").string(), backup_dir(store_).string()},
          store_.dir + "/backup-copy");
      ASSERT_EQ(copied.exit_code, 0) << copied.err;
      ASSERT_TRUE(services.restart(store_).ok());
    } else if (s == Scenario::kPostgresDump) {
      test_support::RunResult r =
          test_support::run_command({"/usr/bin/pg_dump", "--clean", "-h", "127.0.0.1", "-p",
                                     port_of(store_url_), "-U", "idforge", "-f", dump_, "idforge"},
                                    dump_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    } else if (s == Scenario::kMaxIdLowered) {
      test_support::RunResult r = services.client(
          store_,
          {"-N", "-B", "-e", "SELECT max_id FROM idforge_segments WHERE tag = '" + tag_ + "'"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      max_id_ = trimmed(r.out);
      ASSERT_FALSE(max_id_.empty());
    } else if (s == Scenario::kPostgresFailover) {
      // The replica replays everything committed so far, then is cut off: the ranges taken
      // from now on are lost with the primary. (Pausing its replay instead would not do:
      // a promotion first replays the WAL the replica already received.)
      test_support::RunResult lsn =
          services.client(store_, {"-tAc", "SELECT pg_current_wal_lsn()"});
      ASSERT_EQ(lsn.exit_code, 0) << lsn.err;
      const auto deadline = Steady::now() + std::chrono::seconds(20);
      for (;;) {
        test_support::RunResult r = services.client(
            replica_,
            {"-tAc", "SELECT pg_last_wal_replay_lsn() >= '" + trimmed(lsn.out) + "'::pg_lsn"});
        if (trimmed(r.out) == "t") break;
        ASSERT_LT(Steady::now(), deadline) << "the replica never caught up: " << r.out << r.err;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      ASSERT_TRUE(services.stop(replica_).ok());
    }
  }

  // The store goes back to the checkpoint.
  void go_back() {
    Services& services = Services::get();
    const Scenario s = GetParam().scenario;
    if (s == Scenario::kRedisWiped) {
      // A crash and the data with it; an operator recreates the tag at 1 from a machine
      // that does not see the fleet's registry.
      ASSERT_TRUE(services.kill(store_).ok());
      std::error_code ec;
      fs::remove_all(fs::path(store_.dir) / "appendonlydir", ec);
      fs::remove(fs::path(store_.dir) / "dump.rdb", ec);
      ASSERT_TRUE(services.restart(store_).ok());
      // Every node's prober looks at the empty store first (every 2 s): the first takes it
      // for a new store, and no node's identity check moves the tag later.
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      create_tag("local:" + services.make_dir("ff-operator"));
    } else if (s == Scenario::kMariadbPhysical) {
      // The backup restored on the same host: the same server_id, host and port, so the
      // same identity, and max_id back where it was.
      ASSERT_TRUE(services.stop(store_).ok());
      std::error_code ec;
      fs::remove_all(fs::path(store_.dir) / "data", ec);
      fs::rename(backup_dir(store_), fs::path(store_.dir) / "data", ec);
      ASSERT_FALSE(ec) << ec.message();
      ASSERT_TRUE(services.restart(store_).ok());
    } else if (s == Scenario::kMaxIdLowered) {
      // An operator's UPDATE: the same server and identity, max_id back where it was.
      test_support::RunResult r =
          services.client(store_, {"-e", "UPDATE idforge_segments SET max_id = " + max_id_ +
                                             " WHERE tag = '" + tag_ + "'"});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    } else if (s == Scenario::kPostgresFailover) {
      // The primary dies; the replica, which missed the last ranges, is promoted (a new
      // timeline), and the nodes are restarted on its URL: a first, then b and c.
      ASSERT_TRUE(services.kill(store_).ok());
      stop_nodes();
      ASSERT_TRUE(services.restart(replica_).ok());
      ASSERT_TRUE(services.promote(replica_).ok());
      store_url_ = replica_.url;
      ASSERT_NO_FATAL_FAILURE(start_nodes({0}));
      ASSERT_NO_FATAL_FAILURE(start_nodes({1, 2}));
    } else {
      // The dump loaded back into the same server: the same identity, max_id back where it
      // was.
      test_support::RunResult r =
          services.client(store_, {s == Scenario::kMariadbDump ? "-e" : "-f",
                                   s == Scenario::kMariadbDump ? "source " + dump_ : dump_});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }

  std::string tag_ = unique_tag("ff");
  Server store_;
  Server replica_;  // kPostgresFailover
  std::string store_url_;
  std::string registry_url_;
  std::vector<std::string> extra_args_;
  std::array<std::string, kNodes> dirs_;
  std::array<std::unique_ptr<ServeNode>, kNodes> nodes_;
  std::string dump_;
  std::string max_id_;  // kMaxIdLowered: max_id at the checkpoint
  std::vector<uint64_t> ids_;
  int failed_ = 0;
  std::string last_error_;
};

TEST_P(FleetFloorServeTest, ThreeNodesAndAStoreThatWentBack) {
  const Case c = GetParam();
  const auto began = Steady::now();
  ASSERT_NO_FATAL_FAILURE(start_servers());
  ASSERT_NO_FATAL_FAILURE(create_tag(registry_url_));
  ASSERT_NO_FATAL_FAILURE(start_nodes({0, 1, 2}));

  pull(*nodes_[0], 1, 50);  // a holds the first range, 1..100
  ASSERT_NO_FATAL_FAILURE(take_checkpoint());
  pull(*nodes_[1], 30, 100);  // b serves 3,000 more
  pull(*nodes_[2], 12, 100);  // c 1,200
  const size_t before = ids_.size();
  ASSERT_EQ(before, 4250u) << last_error_;
  ASSERT_EQ(repeats(), 0u);

  ASSERT_NO_FATAL_FAILURE(go_back());

  for (std::unique_ptr<ServeNode>& n : nodes_) pull(*n, 20, 100);
  const size_t after = ids_.size() - before;
  const Guards g = guards();
  std::printf(
      "[ %s ] %zu IDs before, %zu after, %zu repeated; %d requests failed (last: %s); %.1f s\n"
      "[ %s ] ranges %s\n",
      case_name({c, 0}).c_str(), before, after, repeats(), failed_, last_error_.c_str(),
      std::chrono::duration<double>(Steady::now() - began).count(), case_name({c, 0}).c_str(),
      g.line.c_str());
  // The one case without the floor that repeats nothing: the default margin alone.
  const bool margin_covers = c.scenario == Scenario::kPostgresFailover && c.margin == 0;
  if (c.floor || margin_covers) {
    EXPECT_EQ(repeats(), 0u);
  } else {
    EXPECT_GT(repeats(), 0u) << "without the fleet floor this scenario should repeat IDs";
  }
  if (c.floor) {
    EXPECT_GE(after, 4500u) << "IDs must flow again: " << last_error_;
    EXPECT_GT(g.fleet_refused, 0u) << "the floor refused no range: " << g.line;
  }
  if (c.scenario == Scenario::kPostgresFailover) {
    // One new history, adopted once, by a (restarted first).
    EXPECT_EQ(g.identity_changes, 1u) << g.line;
    EXPECT_EQ(g.changes[0], 1u) << g.line;
  }
  stop_nodes();
  Services& services = Services::get();
  if (c.scenario == Scenario::kRedisWiped || c.scenario == Scenario::kMariadbPhysical) {
    EXPECT_TRUE(services.stop(store_).ok());
  } else if (c.scenario == Scenario::kPostgresFailover) {
    EXPECT_TRUE(services.stop(replica_).ok());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, FleetFloorServeTest,
    ::testing::Values(Case{Scenario::kRedisWiped, true}, Case{Scenario::kRedisWiped, false},
                      Case{Scenario::kMariadbDump, true}, Case{Scenario::kMariadbDump, false},
                      Case{Scenario::kPostgresDump, true}, Case{Scenario::kPostgresDump, false},
                      Case{Scenario::kMariadbPhysical, true},
                      Case{Scenario::kMariadbPhysical, false}, Case{Scenario::kMaxIdLowered, true},
                      Case{Scenario::kMaxIdLowered, false},
                      Case{Scenario::kPostgresFailover, true, 100},
                      Case{Scenario::kPostgresFailover, false, 100},
                      Case{Scenario::kPostgresFailover, false}),
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
