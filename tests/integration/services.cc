#include "integration/services.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::trim;

using test_support::Child;
using test_support::RunResult;

// Services is used from test bodies only, but a test may start helper threads; one
// lock keeps the bookkeeping simple.
std::recursive_mutex& services_mutex() {
  static std::recursive_mutex mu;
  return mu;
}

std::string kind_name(ServerKind kind) {
  switch (kind) {
    case ServerKind::kPostgres:
      return "postgres";
    case ServerKind::kRedis:
      return "redis";
    case ServerKind::kEtcd:
      return "etcd";
    case ServerKind::kZookeeper:
      return "zookeeper";
    case ServerKind::kMariadb:
      return "mariadb";
  }
  return "unknown";
}

// Runs a script to the end with its stderr left on the test's own, where a failing
// start explains itself in the test log. No timeout of our own: ctest's bounds the test.
// Output passes through `scratch`.out.
RunResult run_script(const std::vector<std::string>& argv, const std::string& scratch) {
  return test_support::run_command(argv, scratch, {.capture_err = false, .timeout = std::nullopt});
}

// scripts/test-services with `args`, under the server's exec_prefix.
std::vector<std::string> script_argv(const Server& server, std::vector<std::string> args) {
  std::vector<std::string> argv = server.exec_prefix;
  argv.push_back(script_path("test-services"));
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

class ServicesEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { Services::get().stop_all(); }
};

// Registered before main() runs, which gtest_main allows.
[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServicesEnvironment);

}  // namespace

std::string script_path(const std::string& name) {
  return std::string(IDFORGE_SCRIPTS_DIR) + "/" + name;
}

std::string idforge_bin() { return IDFORGE_BIN; }

std::string unique_tag(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "_" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1));
}

Services& Services::get() {
  static Services* services = new Services();  // lives until exit; the Environment stops it
  return *services;
}

Status Services::ensure_root() {
  if (!root_.empty()) return Status::Ok();
  // /tmp rather than $TMPDIR: the postgres user must be able to reach the data dirs,
  // and a private TMPDIR (under a 0700 home) would not let it.
  const char* base = std::getenv("IDFORGE_TEST_TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/idforge-it-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return Status::IoError("cannot create a temporary directory from " + tmpl);
  }
  root_ = buf.data();
  // World-searchable (not readable) so the postgres user can reach its data dir.
  if (chmod(root_.c_str(), 0711) != 0) return Status::IoError("cannot chmod " + root_);
  return Status::Ok();
}

std::string Services::make_dir(const std::string& name) {
  std::lock_guard lock(services_mutex());
  if (!ensure_root().ok()) return "";
  const std::string dir = root_ + "/" + name + "-" + std::to_string(next_dir_++);
  std::filesystem::create_directories(dir);
  return dir;
}

Result<Server> Services::start(ServerKind kind, const std::string& name,
                               const std::vector<std::string>& extra_args,
                               const std::vector<std::string>& exec_prefix) {
  IDFORGE_RETURN_IF_ERROR(ensure_root());
  Server server;
  server.kind = kind;
  server.dir = root_ + "/" + name + "-" + std::to_string(next_dir_++);
  server.exec_prefix = exec_prefix;
  const std::string kind_text = kind_name(kind);
  std::vector<std::string> argv = script_argv(server, {"start", kind_text, server.dir});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.end(), {"--owner", std::to_string(getpid())});
  const RunResult r = run_script(argv, server.dir);
  server.url = trim(r.out);
  if (r.exit_code != 0 || server.url.empty()) {
    return Status::Unavailable("scripts/test-services start " + kind_text + " failed (exit " +
                               std::to_string(r.exit_code) + "); see its message above and " +
                               server.dir);
  }
  return server;
}

Result<Server> Services::shared(ServerKind kind) {
  std::lock_guard lock(services_mutex());
  const auto index = static_cast<size_t>(kind);
  bool& started = started_[index];
  Server& server = shared_[index];
  if (!started) {
    Result<Server> s = start(kind, kind_name(kind));
    if (!s.ok()) return s.status();
    server = *s;
    started = true;
  }
  return server;
}

Result<std::string> Services::postgres_url() {
  Result<Server> s = shared(ServerKind::kPostgres);
  if (!s.ok()) return s.status();
  return s->url;
}

Result<std::string> Services::redis_url() {
  Result<Server> s = shared(ServerKind::kRedis);
  if (!s.ok()) return s.status();
  return s->url;
}

Result<std::string> Services::etcd_url() {
  Result<Server> s = shared(ServerKind::kEtcd);
  if (!s.ok()) return s.status();
  return s->url;
}

Result<std::string> Services::zookeeper_url() {
  Result<Server> s = shared(ServerKind::kZookeeper);
  if (!s.ok()) return s.status();
  return s->url;
}

Result<std::string> Services::mariadb_url() {
  Result<Server> s = shared(ServerKind::kMariadb);
  if (!s.ok()) return s.status();
  return s->url;
}

Result<Server> Services::start_private(ServerKind kind, const std::string& name,
                                       const std::vector<std::string>& extra_args) {
  std::lock_guard lock(services_mutex());
  return start(kind, name, extra_args);
}

Result<Server> Services::start_private_under(const std::vector<std::string>& exec_prefix,
                                             ServerKind kind, const std::string& name,
                                             const std::vector<std::string>& extra_args) {
  std::lock_guard lock(services_mutex());
  return start(kind, name, extra_args, exec_prefix);
}

Status Services::stop(const Server& server) {
  const RunResult r = run_script(script_argv(server, {"stop", server.dir}), server.dir);
  if (r.exit_code != 0)
    return Status::IoError("scripts/test-services stop " + server.dir + " failed");
  return Status::Ok();
}

Status Services::restart(const Server& server) {
  const RunResult r =
      run_script(script_argv(server, {"restart", server.dir, "--owner", std::to_string(getpid())}),
                 server.dir);
  if (r.exit_code != 0 || trim(r.out) != server.url) {
    return Status::IoError("scripts/test-services restart " + server.dir + " failed");
  }
  return Status::Ok();
}

Result<Server> Services::start_replica(const Server& primary, const std::string& name) {
  IDFORGE_RETURN_IF_ERROR(ensure_root());
  Server server;
  server.kind = ServerKind::kPostgres;
  server.dir = root_ + "/" + name + "-" + std::to_string(next_dir_++);
  const RunResult r =
      run_script({script_path("test-services"), "start", "postgres-replica", server.dir,
                  "--primary", primary.dir, "--owner", std::to_string(getpid())},
                 server.dir);
  server.url = trim(r.out);
  if (r.exit_code != 0 || server.url.empty()) {
    return Status::Unavailable("scripts/test-services start postgres-replica failed (exit " +
                               std::to_string(r.exit_code) + "); see its message above and " +
                               server.dir);
  }
  return server;
}

namespace {

// `scripts/test-services VERB DIR` on one server.
Status on_server(const std::string& verb, const Server& server) {
  const RunResult r = run_script(script_argv(server, {verb, server.dir}), server.dir);
  if (r.exit_code != 0) {
    return Status::IoError("scripts/test-services " + verb + " " + server.dir + " failed");
  }
  return Status::Ok();
}

}  // namespace

Status Services::promote(const Server& server) { return on_server("promote", server); }
Status Services::kill(const Server& server) { return on_server("kill", server); }
Status Services::pause(const Server& server) { return on_server("pause", server); }
Status Services::resume(const Server& server) { return on_server("resume", server); }

RunResult Services::client(const Server& server, const std::vector<std::string>& args) {
  std::vector<std::string> argv = script_argv(server, {"client", server.dir});
  argv.insert(argv.end(), args.begin(), args.end());
  return run_script(argv, server.dir + ".client");
}

Child Services::spawn_client(const Server& server, const std::vector<std::string>& args) {
  std::vector<std::string> argv = script_argv(server, {"client", server.dir});
  argv.insert(argv.end(), args.begin(), args.end());
  static std::atomic<int> n{0};
  const std::string base = server.dir + ".bg" + std::to_string(n.fetch_add(1));
  return test_support::spawn(argv, {.out_path = base + ".out", .err_path = base + ".err"});
}

void Services::stop_all() {
  std::lock_guard lock(services_mutex());
  if (root_.empty()) return;
  // Every directory the script made holds a `kind` file; stop is a no-op for one
  // already stopped.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root_, ec)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "kind")) {
      run_script({script_path("test-services"), "stop", entry.path().string()},
                 entry.path().string());
    }
  }
  if (std::getenv("IDFORGE_KEEP_TEST_DIR") == nullptr) {
    std::filesystem::remove_all(root_, ec);
  } else {
    std::fprintf(stderr, "integration: kept %s\n", root_.c_str());
  }
  root_.clear();
  for (bool& started : started_) started = false;
}

}  // namespace idforge::integration
