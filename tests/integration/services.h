// Real PostgreSQL, Redis, etcd, ZooKeeper and MariaDB servers for the integration tests,
// started by scripts/test-services on 127.0.0.1 with random ports in one temporary
// directory.
//
// The shared servers start on first use, once per test binary (ctest runs each test
// in its own process, so a Redis-only test never waits for PostgreSQL), and a gtest
// Environment stops everything when the binary ends, passed or failed. Each server
// also has a watchdog that stops it if the binary dies without cleaning up. Tests
// share the servers, so each uses its own tag names (unique_tag()).
#pragma once

#include <string>
#include <vector>

#include "idforge/status.h"
#include "support/process.h"

namespace idforge::integration {

enum class ServerKind { kPostgres, kRedis, kEtcd, kZookeeper, kMariadb };

// One server started by the script.
struct Server {
  ServerKind kind = ServerKind::kPostgres;
  std::string dir;  // its directory, which the script's stop/restart take
  // postgres://idforge@127.0.0.1:PORT/idforge, redis://127.0.0.1:PORT,
  // etcd://127.0.0.1:PORT, zookeeper://127.0.0.1:PORT or
  // mysql://idforge:idforge@127.0.0.1:PORT/idforge (MariaDB; user idforge_ro, password
  // idforge_ro, may only SELECT)
  std::string url;
  // The command the script runs under, e.g. {"/usr/sbin/ip", "netns", "exec", NAME} for a
  // server inside a network namespace; empty for the usual one.
  std::vector<std::string> exec_prefix{};
};

class Services {
 public:
  static Services& get();

  // URLs of the shared servers, started on the first call. An error says why the
  // script failed (its stderr is in the test log).
  Result<std::string> postgres_url();
  Result<std::string> redis_url();
  Result<std::string> etcd_url();
  Result<std::string> zookeeper_url();
  // Durable: innodb_flush_log_at_trx_commit 1, binary log on with sync_binlog 1, GTIDs.
  Result<std::string> mariadb_url();
  // The shared server itself (for client()); never stop it.
  Result<Server> shared(ServerKind kind);

  // A server of the test's own, e.g. one it will stop; stopped at the end too.
  // `extra_args` go to the script's start after the directory, e.g.
  // {"--unsafe-durability"} (MariaDB: innodb_flush_log_at_trx_commit 2, sync_binlog 0)
  // or {"--no-persistence"} (Redis).
  Result<Server> start_private(ServerKind kind, const std::string& name,
                               const std::vector<std::string>& extra_args = {});
  // The same inside a network namespace: the script runs under `exec_prefix` (as do
  // restart, client and the rest later), e.g. with extra_args {"--host", ADDR} so that
  // other namespaces reach it (etcd and Redis).
  Result<Server> start_private_under(const std::vector<std::string>& exec_prefix, ServerKind kind,
                                     const std::string& name,
                                     const std::vector<std::string>& extra_args = {});
  Status stop(const Server& server);
  // Starts a stopped server again with its data, on its old port.
  Status restart(const Server& server);
  // An asynchronous streaming replica of the PostgreSQL server `primary` (pg_basebackup);
  // stop() disconnects it, restart() reconnects it, promote() makes it a primary.
  Result<Server> start_replica(const Server& primary, const std::string& name);
  Status promote(const Server& server);
  // SIGKILL: a crash with no clean shutdown; restart() brings it back.
  Status kill(const Server& server);
  // SIGSTOP / SIGCONT: a hung server whose port still accepts connections but never
  // answers (PostgreSQL: the postmaster and every backend; MariaDB: mariadbd). stop()
  // works on a paused server too.
  Status pause(const Server& server);
  Status resume(const Server& server);

  // psql (as role idforge, database idforge), redis-cli, etcdctl, zkCli or mariadb (as
  // user idforge, database idforge, over TCP; e.g. {"-N", "-B", "-e", "SELECT 1"}) on
  // `server`, with `args`.
  test_support::RunResult client(const Server& server, const std::vector<std::string>& args);
  // The same, started in the background; stdout and stderr go to files in its dir.
  test_support::Child spawn_client(const Server& server, const std::vector<std::string>& args);

  // A fresh directory under the temporary root, for files (SQLite, outputs).
  std::string make_dir(const std::string& name);

  // Stops every server and removes the temporary root (the Environment's TearDown).
  void stop_all();

 private:
  Services() = default;
  Status ensure_root();
  Result<Server> start(ServerKind kind, const std::string& name,
                       const std::vector<std::string>& extra_args = {},
                       const std::vector<std::string>& exec_prefix = {});

  std::string root_;
  static constexpr int kKinds = 5;
  bool started_[kKinds] = {};  // indexed by ServerKind
  Server shared_[kKinds];
  int next_dir_ = 0;
};

// A tag name no other test in this binary uses: "<prefix>_<pid>_<n>".
std::string unique_tag(const std::string& prefix);

// Path of a script in scripts/ and of the idforge binary.
std::string script_path(const std::string& name);
std::string idforge_bin();

}  // namespace idforge::integration
