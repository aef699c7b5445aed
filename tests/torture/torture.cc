// idforge_torture: the evidence for "no duplicate ID, ever" (docs/reliability.md,
// "Torture run").
//
// Five `idforge serve` processes on 127.0.0.1 share one Redis or etcd (worker ids and
// the fleet floor); three take segments from one PostgreSQL, two from one Redis. Client
// threads pull Snowflake and segment IDs from each over HTTP and RESP while faults are
// injected on a schedule (faults.h). Every ID a client received is kept; at the end the
// run fails on any duplicate (Snowflake IDs across the cluster, segment IDs per tag) and
// prints the totals.
//
//   idforge_torture --short [--ids N]       every fault kind once, >= N IDs (ctest)
//   idforge_torture --minutes N             rounds of every fault kind, random order
//   idforge_torture --sabotage              two servers share a static worker id: the
//                                           check must find duplicates (and exit 1)
//   idforge_torture --short --fleet-floor false
//                                           the nodes without the fleet floor: the
//                                           stores that go back repeat IDs (exit 1)
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "clients.h"
#include "cluster.h"
#include "faults.h"
#include "run.h"
#include "support/faketime.h"
#include "support/process.h"

namespace idforge::torture {
namespace {

using test_support::ExitInfo;
using test_support::tail_of;

constexpr uint64_t kTwitterEpochMs = 1288834974657;
// The short run keeps the load on after its last fault until it has its IDs, but not
// longer than this.
constexpr auto kShortRunOvertime = std::chrono::seconds(40);

const char* kUsage =
    "usage: idforge_torture (--short [--ids N] | --minutes N) [options]\n"
    "Five idforge servers on PostgreSQL or a Redis store and one Redis or etcd, clients\n"
    "pulling IDs over HTTP and RESP, faults on a schedule; fails on any duplicate ID\n"
    "(docs/reliability.md).\n"
    "  --short               every fault kind once, then load until --ids IDs (ctest)\n"
    "  --ids N               IDs the short run must check (default 1000000)\n"
    "  --minutes N           rounds of every fault kind in random order for N minutes\n"
    "  --seed N              the schedule's and the clients' randomness (default random)\n"
    "  --registry KIND       worker-id coordinator: redis (default) or etcd\n"
    "  --idforge BIN         the idforge binary (default: the one built with this)\n"
    "  --scripts DIR         where scripts/test-services is\n"
    "  --rate N              IDs per second for all clients together (default 0: no cap)\n"
    "  --threads N           connections per protocol per server (default 2)\n"
    "  --ttl-ms MS           lease TTL (default 3600)\n"
    "  --keep                keep the work directory (always kept when the run fails)\n"
    "  --fleet-floor false   the nodes run without the fleet floor (to compare: the store\n"
    "                        faults then repeat IDs)\n";

bool parse_options(int argc, char** argv, Options* options) {
#ifdef IDFORGE_BIN
  options->idforge = IDFORGE_BIN;
#endif
#ifdef IDFORGE_SCRIPTS_DIR
  options->scripts = IDFORGE_SCRIPTS_DIR;
#endif
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "idforge_torture: {} needs a value\n", arg);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--short") {
      options->short_run = true;
    } else if (arg == "--minutes") {
      options->minutes = std::atof(value().c_str());
    } else if (arg == "--ids") {
      options->target_ids = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--seed") {
      options->seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--registry") {
      options->registry = value();
    } else if (arg == "--idforge") {
      options->idforge = value();
    } else if (arg == "--scripts") {
      options->scripts = value();
    } else if (arg == "--rate") {
      options->rate = std::atof(value().c_str());
    } else if (arg == "--threads") {
      options->threads = std::atoi(value().c_str());
    } else if (arg == "--ttl-ms") {
      options->ttl_ms = std::atoi(value().c_str());
    } else if (arg == "--keep") {
      options->keep = true;
    } else if (arg == "--sabotage") {
      options->sabotage = true;
    } else if (arg == "--fleet-floor") {
      const std::string on = value();
      if (on != "true" && on != "false") {
        fmt::print(stderr, "idforge_torture: --fleet-floor is true or false\n");
        return false;
      }
      options->fleet_floor = on == "true";
    } else if (arg == "-h" || arg == "--help") {
      fmt::print("{}", kUsage);
      std::exit(0);
    } else {
      fmt::print(stderr, "idforge_torture: unknown option {}\n{}", arg, kUsage);
      return false;
    }
  }
  if (options->registry != "redis" && options->registry != "etcd") {
    fmt::print(stderr, "idforge_torture: --registry is redis or etcd\n");
    return false;
  }
  if (options->minutes <= 0 || options->threads < 1 || options->ttl_ms < 500) {
    fmt::print(stderr, "idforge_torture: --minutes > 0, --threads >= 1, --ttl-ms >= 500\n");
    return false;
  }
  return true;
}

std::string origin(const Run& run, const Range& r) {
  return fmt::format("{} (start #{}, {}, at +{:.3f} s)", run.servers[r.server]->config().name,
                     r.incarnation, r.protocol == Protocol::kHttp ? "HTTP" : "RESP",
                     r.at_ms / 1000.0);
}

// Where the two copies of a duplicate came from.
std::string describe(const Run& run, Kind kind, const Overlap& o) {
  std::string text = fmt::format("  {}", o.first);
  if (o.last != o.first) text += fmt::format("..{} ({} IDs)", o.last, o.last - o.first + 1);
  if (kind == kSnowflake) {
    text += fmt::format(" [time {} ms, datacenter {}, worker {}, sequence {}]",
                        (o.first >> 22) + kTwitterEpochMs, (o.first >> 17) & 31,
                        (o.first >> 12) & 31, o.first & 4095);
  }
  return text + fmt::format("\n    from {}\n    and  {}\n", origin(run, o.a), origin(run, o.b));
}

Status start_cluster(Run& run) {
  const Options& o = run.options;
  const std::string script = o.scripts + "/test-services";
  run.postgres = std::make_unique<Service>(script, "postgres", run.work_dir + "/postgres");
  run.coordinator = std::make_unique<Service>(script, o.registry, run.work_dir + "/" + o.registry);
  IDFORGE_RETURN_IF_ERROR(run.postgres->start());
  run.pg_replica =
      std::make_unique<Service>(script, "postgres-replica", run.work_dir + "/postgres-b",
                                std::vector<std::string>{"--primary", run.postgres->dir()});
  IDFORGE_RETURN_IF_ERROR(run.pg_replica->start());
  // Both servers, primary first: libpq takes whichever accepts writes, so the nodes
  // follow a failover (faults.cc, kPostgresFailover) through the one URL.
  auto port_of = [](const std::string& url) {
    const size_t colon = url.rfind(':');
    return url.substr(colon + 1, url.find('/', colon) - colon - 1);
  };
  run.store_url = fmt::format(
      "postgres://idforge@127.0.0.1:{},127.0.0.1:{}/idforge?target_session_attrs=read-write&"
      "connect_timeout=2",
      port_of(run.postgres->url()), port_of(run.pg_replica->url()));
  run.log("PostgreSQL: {} (primary + asynchronous replica)", run.store_url);
  IDFORGE_RETURN_IF_ERROR(run.coordinator->start());
  run.log("coordinator: {}", run.coordinator->url());

  for (int t = 0; t < 2; ++t) {
    IDFORGE_RETURN_IF_ERROR(create_tag(run, kTags[t], kTagSteps[t], run.store_url));
  }
  if (!o.sabotage) {
    // A Redis of its own, not the coordinator: the fleet floor must not go back with it.
    run.redis_store = std::make_unique<Service>(script, "redis", run.work_dir + "/redis-store");
    IDFORGE_RETURN_IF_ERROR(run.redis_store->start());
    run.log("Redis segment store: {}", run.redis_store->url());
    IDFORGE_RETURN_IF_ERROR(create_tag(run, kTags[2], kTagSteps[2], run.redis_store->url()));
  }

  const std::string registry =
      fmt::format("{}?ttl_ms={}&cluster=torture", run.coordinator->url(), o.ttl_ms);
  // Small segments and batches: many store round trips, so that the PostgreSQL outage
  // reaches the clients.
  run.common_args = {"--max-count",         "1000", "--max-step", std::to_string(kMaxStep),
                     "--shutdown-grace-ms", "3000"};
  if (!o.fleet_floor) run.common_args.insert(run.common_args.end(), {"--fleet-floor", "false"});
  const std::vector<std::string> pg = {"--store", run.store_url, "--registry", registry};
  std::vector<std::vector<std::string>> node_args;
  // node-3 runs ahead of its clock: 60 s on etcd, which keeps the mark durably; on Redis,
  // whose leases are kept apart by timing, less: its holder fences that much before the
  // TTL, which held_lease.cc allows while half the TTL is left.
  const std::string ahead_ms = o.registry == "etcd" ? "60000" : std::to_string(o.ttl_ms / 3 - 50);
  if (o.sabotage) {
    // The broken configuration: two servers told to use the same worker id.
    node_args = {{"--store", run.store_url, "--registry", "static:0/1"},
                 {"--store", run.store_url, "--registry", "static:0/1"}};
  } else {
    node_args = {pg, pg, pg};
    node_args[1].insert(node_args[1].end(), {"--policy", "ring"});
    node_args[2].insert(node_args[2].end(), {"--max-drift-ms", ahead_ms});
    // Two nodes on the Redis store: a store that goes back repeats, without the fleet
    // floor, what one node served and the other is handed again.
    for (int i = 0; i < 2; ++i) {
      node_args.push_back({"--store", run.redis_store->url(), "--registry", registry});
    }
  }
  for (size_t i = 0; i < node_args.size(); ++i) {
    ServerConfig config;
    config.name = fmt::format("node-{}", i + 1);
    config.identity = config.name;
    config.data_dir = run.work_dir + "/" + config.name;
    config.extra_args = node_args[i];
    config.redis_tag = i >= 3;
    run.servers.push_back(std::make_unique<ServerProc>(static_cast<int>(i), std::move(config),
                                                       o.idforge, run.work_dir));
  }
  if (!o.sabotage) {
    ServerConfig config;
    config.name = "replacement";
    config.identity = "replacement";
    config.data_dir = run.work_dir + "/replacement";
    config.extra_args = pg;
    run.servers.push_back(std::make_unique<ServerProc>(static_cast<int>(run.servers.size()),
                                                       std::move(config), o.idforge, run.work_dir));
    run.spare = run.servers.back().get();
  }

  // All nodes at once: each waits out the registry's start delay.
  for (size_t i = 0; i < run.node_count(); ++i) {
    if (!run.servers[i]->launch(run.common_args, 0)) {
      return Status::Internal(run.servers[i]->last_failure());
    }
  }
  for (size_t i = 0; i < run.node_count(); ++i) {
    ServerProc& server = *run.servers[i];
    StartOutcome outcome = server.await_start(std::chrono::seconds(30));
    if (outcome == StartOutcome::kPortTaken) {
      outcome = server.start(run.common_args, 0, std::chrono::seconds(30));
    }
    if (outcome != StartOutcome::kStarted) {
      return Status::Internal(server.config().name + " did not start: " + server.last_failure());
    }
  }
  for (size_t i = 0; i < run.node_count(); ++i) {
    ServerProc& server = *run.servers[i];
    if (!server.wait_ready(std::chrono::seconds(20))) {
      return Status::Unavailable(server.config().name + " never became ready (/readyz)");
    }
    run.log("{} ready: http {}, resp {}, {}", server.config().name, server.http_port.load(),
            server.resp_port.load(), lease_summary(server));
  }
  return Status::Ok();
}

void run_schedule(Run& run) {
  const Options& o = run.options;
  if (o.sabotage) {
    run.idle(std::chrono::seconds(10));
    return;
  }
  if (o.short_run) {
    for (const Step& step : short_schedule()) {
      run.idle(step.gap);
      inject(run, step);
    }
    run.idle(std::chrono::seconds(5));
    const auto until = Clock::now() + kShortRunOvertime;
    while (run.clients->ids_received() < o.target_ids && Clock::now() < until) {
      run.idle(std::chrono::milliseconds(500));
    }
    return;
  }
  const auto end = run.started + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(o.minutes * 60));
  // A fault takes up to ~10 s: none starts in the last 15 s.
  bool done = false;
  while (!done) {
    for (const Step& step : random_round(run)) {
      if (Clock::now() + step.gap + std::chrono::seconds(15) >= end) {
        done = true;
        break;
      }
      run.idle(step.gap);
      inject(run, step);
    }
  }
  if (Clock::now() < end) {
    run.idle(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
  }
}

int report(Run& run, ClientPool& clients) {
  const Options& o = run.options;
  std::vector<ClientRecord>& records = clients.records();
  uint64_t total = 0;
  uint64_t duplicates = 0;
  std::string per_kind;
  std::string examples;
  for (int k = 0; k < kKinds; ++k) {
    std::vector<Range> ranges;
    for (ClientRecord& rec : records) {
      ranges.insert(ranges.end(), rec.ranges[k].begin(), rec.ranges[k].end());
      rec.ranges[k] = {};
    }
    const CheckResult check = check_ranges(ranges);
    total += check.ids;
    duplicates += check.duplicates();
    // The sabotage run has no Redis store, and so no torture_r.
    if (k == kSegmentR && run.redis_store == nullptr) continue;
    per_kind += fmt::format("    {:<22} {:>16}   duplicates {}\n", kind_name(static_cast<Kind>(k)),
                            grouped(check.ids), grouped(check.duplicates()));
    if (check.ids == 0) {
      run.fail(fmt::format("no {} ID was received at all", kind_name(static_cast<Kind>(k))));
    }
    for (const Overlap& overlap : check.examples) {
      examples += describe(run, static_cast<Kind>(k), overlap);
    }
  }

  std::map<std::string, ErrorCount> errors;
  uint64_t requests = 0;
  uint64_t ok = 0;
  uint64_t error_total = 0;
  for (const ClientRecord& rec : records) {
    requests += rec.requests;
    ok += rec.ok;
    for (const auto& [kind, e] : rec.errors) {
      ErrorCount& sum = errors[kind];
      if (sum.count == 0) sum.example = e.example;
      sum.count += e.count;
      error_total += e.count;
    }
  }
  int fault_total = 0;
  for (const auto& [name, n] : run.faults) fault_total += n;

  if (o.short_run && !o.sabotage) {
    if (total < o.target_ids) {
      run.fail(fmt::format("only {} IDs checked; the short run needs {}", grouped(total),
                           grouped(o.target_ids)));
    }
    for (FaultKind kind : kAllFaults) {
      if (run.faults[fault_name(kind)] == 0) run.fail("fault never injected: " + fault_name(kind));
    }
  }

  fmt::print(
      "\n== torture summary ({}, seed {}, registry {}{}) ==\n",
      o.sabotage ? "sabotage" : (o.short_run ? "short run" : fmt::format("{} min", o.minutes)),
      o.seed, o.registry, o.fleet_floor ? "" : ", fleet floor OFF");
  fmt::print("IDs checked: {}\n{}", grouped(total), per_kind);
  fmt::print("duplicates: {}\n", grouped(duplicates));
  if (!examples.empty()) fmt::print("{}", examples);
  fmt::print("faults injected: {}\n", fault_total);
  for (const auto& [name, n] : run.faults) fmt::print("    {:<40} {:>5}\n", name, n);
  if (!run.events.empty()) {
    fmt::print("events:\n");
    for (const auto& [name, n] : run.events) fmt::print("    {:<55} {:>5}\n", name, n);
  }
  fmt::print("requests: {} ({} answered in full)\n", grouped(requests), grouped(ok));
  fmt::print("errors returned to clients: {}\n", grouped(error_total));
  for (const auto& [kind, e] : errors) {
    std::string example = e.example;
    std::replace(example.begin(), example.end(), '\n', ' ');
    if (example.size() > 110) example = example.substr(0, 107) + "...";
    fmt::print("    {:<40} {:>9}   e.g. {}\n", kind, grouped(e.count), example);
  }
  fmt::print("elapsed: {:.1f} s ({} IDs/s under load)\n", run.elapsed_s(),
             grouped(static_cast<uint64_t>(static_cast<double>(total) / run.load_s)));

  const bool failed = duplicates > 0 || !run.failures.empty();
  if (failed && !o.sabotage) {
    for (const auto& server : run.servers) {
      fmt::print("\n-- stderr of {} (last lines) --\n{}", server->config().name,
                 tail_of(server->err_path(), 25));
    }
  }
  for (const std::string& why : run.failures) fmt::print("failure: {}\n", why);
  if (duplicates > 0) {
    fmt::print("torture: FAILED: {} duplicate IDs\n", grouped(duplicates));
  } else if (failed) {
    fmt::print("torture: FAILED\n");
  } else {
    fmt::print("torture: PASSED: {} IDs checked, 0 duplicates, {} faults injected\n",
               grouped(total), fault_total);
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

int torture_main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, &options)) return 2;
  if (options.seed == 0) options.seed = std::random_device{}() | 1;
  std::signal(SIGPIPE, SIG_IGN);
  if (access(options.idforge.c_str(), X_OK) != 0) {
    fmt::print(stderr, "idforge_torture: no idforge binary at '{}' (--idforge)\n", options.idforge);
    return 2;
  }
  if (access((options.scripts + "/test-services").c_str(), X_OK) != 0) {
    fmt::print(stderr, "idforge_torture: no test-services in '{}' (--scripts)\n", options.scripts);
    return 2;
  }
  if (test_support::faketime_library().empty()) {
    fmt::print(stderr, "idforge_torture: libfaketime not found (apt-get install faketime)\n");
    return 2;
  }

  std::string why;
  if (!self_test(&why)) {
    fmt::print(stderr, "idforge_torture: the duplicate check fails its self-test: {}\n", why);
    return 1;
  }

  Run run(options);
  // /tmp, world-searchable: the postgres user must reach its data dir.
  const char* base = std::getenv("IDFORGE_TEST_TMPDIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/idforge-torture-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr || chmod(tmpl.c_str(), 0711) != 0) {
    fmt::print(stderr, "idforge_torture: cannot create {}\n", tmpl);
    return 1;
  }
  run.work_dir = tmpl;
  run.log("torture: {}, seed {}, registry {}{}, work dir {}",
          options.sabotage ? "SABOTAGE (two servers share worker id 0/1)"
                           : (options.short_run ? fmt::format("short run, target {} IDs",
                                                              grouped(options.target_ids))
                                                : fmt::format("{} minutes", options.minutes)),
          options.seed, options.registry,
          options.fleet_floor ? "" : ", FLEET FLOOR OFF (--fleet-floor false)", run.work_dir);

  int status = 1;
  const Status started = start_cluster(run);
  if (!started.ok()) {
    run.fail(started.message());
    for (const auto& server : run.servers) {
      fmt::print("-- stderr of {} --\n{}", server->config().name, tail_of(server->err_path(), 25));
    }
  } else {
    std::vector<ServerProc*> targets;
    for (const auto& server : run.servers) targets.push_back(server.get());
    ClientOptions client_options;
    client_options.tags[0] = kTags[0];
    client_options.tags[1] = kTags[1];
    client_options.tags[2] = kTags[2];
    client_options.threads_per_protocol = options.threads;
    client_options.ids_per_second = options.rate;
    client_options.seed = options.seed;
    client_options.run_start = run.started;
    ClientPool clients(targets, client_options);
    const auto load_start = Clock::now();
    clients.start();
    run.clients = &clients;
    run.log("clients: {} threads", targets.size() * 2 * static_cast<size_t>(options.threads));
    run_schedule(run);
    clients.stop();
    run.load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
    run.log("clients stopped: {} IDs received", grouped(clients.ids_received()));
    run.clients = nullptr;
    for (const auto& server : run.servers) {
      if (!server->running()) continue;
      const std::optional<ExitInfo> exit = server->terminate(std::chrono::seconds(20));
      if (!exit || exit->code != 0) {
        run.fail(fmt::format("{} did not exit 0 on SIGTERM: {}", server->config().name,
                             exit ? exit->to_string() : "still running after 20 s"));
      }
    }
    status = report(run, clients);
  }
  for (Service* service :
       {run.coordinator.get(), run.postgres.get(), run.pg_replica.get(), run.redis_store.get()}) {
    if (service != nullptr && !service->stop().ok()) {
      fmt::print(stderr, "idforge_torture: stopping {} failed\n", service->kind());
    }
  }
  const bool keep = options.keep || (status != 0 && !options.sabotage);
  if (keep) {
    fmt::print("work dir kept: {}\n", run.work_dir);
  } else {
    std::error_code ec;
    std::filesystem::remove_all(run.work_dir, ec);
  }
  return status;
}

}  // namespace
}  // namespace idforge::torture

int main(int argc, char** argv) { return idforge::torture::torture_main(argc, argv); }
