// The faults of a store that goes back with its identity, under load: a PostgreSQL
// store restored from a logical dump, and a Redis store wiped with its tag recreated at
// 1. In both, the segment traffic of the store's tags moves between its nodes as a load
// balancer would move it, so that the store hands its numbers again to a node that did
// not serve them: the case only the fleet floor catches (docs/stores.md, "The fleet
// floor"). With the floor the run expects it to refuse ranges; without it
// (--fleet-floor false) the same steps repeat IDs.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "faults.h"
#include "support/process.h"

namespace idforge::torture {
namespace {

using std::chrono::milliseconds;

// Load between the dump (or the wipe) and the store going back: the nodes that serve
// take ranges past it.
constexpr auto kDumpToRestore = std::chrono::milliseconds(1000);
// How long a drained node's requests under way may take to end.
constexpr auto kDrainSettle = std::chrono::milliseconds(300);
// Longest the traffic stays on the one node after the store went back.
constexpr auto kAloneAtMost = std::chrono::seconds(15);
// Longest a node may take to see the Redis store restarted empty (its prober looks every
// 2 s; on a loaded machine a probe can take seconds).
constexpr auto kSeenEmptyWithin = std::chrono::seconds(15);

// The running nodes on one store (PostgreSQL's or the Redis store's), not the spare.
std::vector<ServerProc*> store_nodes(Run& run, bool redis) {
  std::vector<ServerProc*> nodes;
  for (size_t i = 0; i < run.node_count(); ++i) {
    ServerProc& server = *run.servers[i];
    if (server.running() && server.serves_redis_tag.load() == redis) nodes.push_back(&server);
  }
  return nodes;
}

// Moves the segment traffic of `nodes` away (or back), and waits for the requests under
// way to end, so that a drained node takes no range after this returns.
void drain(Run& run, const std::vector<ServerProc*>& nodes, bool drained) {
  std::string names;
  for (ServerProc* server : nodes) {
    server->segments_drained = drained;
    names += (names.empty() ? "" : ", ") + server->config().name;
  }
  if (names.empty()) return;
  run.log("segment traffic {} {}", drained ? "moved away from" : "back on", names);
  if (drained) run.idle(kDrainSettle);
}

// Waits until `to`, the one node with segment traffic, has delivered more IDs of each
// of `kinds` than its two buffers can hold: it has taken a range of each from the store
// that went back, before any other node could move the tag past what it served. Without
// that the fault tests nothing, and the run says so.
void wait_took_ranges(Run& run, const ServerProc& to, const std::vector<Kind>& kinds) {
  if (run.clients == nullptr) return;
  const size_t at = static_cast<size_t>(to.index());
  std::vector<uint64_t> start;
  for (Kind kind : kinds) start.push_back(run.clients->ids_from(at, kind));
  const auto began = Clock::now();
  const auto took = [&] {
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (run.clients->ids_from(at, kinds[i]) - start[i] <= 2 * kMaxStep) return false;
    }
    return true;
  };
  while (!took() && Clock::now() - began < kAloneAtMost) run.idle(milliseconds(20));
  if (!took()) {
    run.fail(fmt::format("{} took no range of the store that went back within {} s",
                         to.config().name, kAloneAtMost.count()));
    return;
  }
  run.log("{} took ranges of the store that went back ({:.1f} s)", to.config().name,
          std::chrono::duration<double>(Clock::now() - began).count());
}

// `node` answers and has verified its store under a history other than `old`.
bool verified_another(const ServerProc& node, const std::string& old) {
  const GuardCounts now = guard_counts(node);
  return now.answered && !now.identity.empty() && now.identity != "?" && now.identity != old;
}

// Waits until every one of `nodes` has verified its store under another history than
// `before` (theirs, in order): each has seen the Redis store restarted empty, and taken
// it for a new store. The tag is recreated only then, so that no node moves it forward
// by the failover margin (which a node that knew the store under its old history does
// once it sees tags again): the recreated tag really starts at 1 (docs/stores.md, "The
// fleet floor").
bool wait_seen_empty(Run& run, const std::vector<ServerProc*>& nodes,
                     const std::vector<GuardCounts>& before) {
  const auto began = Clock::now();
  const auto all_seen = [&] {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!verified_another(*nodes[i], before[i].identity)) return false;
    }
    return true;
  };
  while (!all_seen()) {
    if (Clock::now() - began >= kSeenEmptyWithin) {
      run.fail(fmt::format("the Redis nodes did not all see the wiped store within {} s",
                           kSeenEmptyWithin.count()));
      return false;
    }
    run.idle(milliseconds(100));
  }
  run.log("every Redis node saw the store empty ({:.1f} s): {}",
          std::chrono::duration<double>(Clock::now() - began).count(),
          guard_counts(*nodes.front()).identity);
  return true;
}

// The guard counters of `nodes`, to tell whether their store went back.
std::vector<GuardCounts> guards_of(const std::vector<ServerProc*>& nodes) {
  std::vector<GuardCounts> counts;
  for (const ServerProc* server : nodes) counts.push_back(guard_counts(*server));
  return counts;
}

// After a fault that took a store back: the nodes refused ranges (by the fleet floor, by
// their own record, or as of another history), or the fault tested nothing and the run
// says so. The refusals are added up in the events. With the fleet floor, the node the
// traffic moved to had not served the numbers the store handed out again, so the floor
// must be what refused them.
void expect_refusals(Run& run, const std::vector<GuardCounts>& before,
                     const std::vector<GuardCounts>& after, const std::string& what) {
  GuardCounts sum;
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    if (!before[i].answered || !after[i].answered) continue;
    sum.fleet_refused += std::max<int64_t>(0, after[i].fleet_refused - before[i].fleet_refused);
    sum.refused += std::max<int64_t>(0, after[i].refused - before[i].refused);
    sum.foreign += std::max<int64_t>(0, after[i].foreign - before[i].foreign);
    sum.identity_changes +=
        std::max<int64_t>(0, after[i].identity_changes - before[i].identity_changes);
  }
  run.events["store back: ranges refused by the fleet floor"] +=
      static_cast<int>(sum.fleet_refused);
  run.events["store back: ranges refused by the node's own record"] +=
      static_cast<int>(sum.refused);
  run.events["store back: ranges of another history skipped"] += static_cast<int>(sum.foreign);
  run.log(
      "after {}: ranges refused by the fleet floor {}, by the nodes' own records {}, of "
      "another history {}; identity changes applied {}",
      what, sum.fleet_refused, sum.refused, sum.foreign, sum.identity_changes);
  if (run.options.fleet_floor && sum.fleet_refused == 0) {
    run.fail(
        fmt::format("the fleet floor refused no range after {}: the fault tested nothing", what));
  }
}

}  // namespace

// A logical dump of the PostgreSQL store (pg_dump --clean) is taken while the nodes take
// ranges. The segment traffic then moves away from one node (`to`) while the others
// take ranges past the dump; then to that node alone, and the dump is loaded back into
// the same primary in one transaction (psql --single-transaction) while every node runs.
// Every tag's max_id goes back, and the store's identity record with it, which matches
// the server again: the history check sees nothing, and the node the traffic came back
// to is handed numbers the others served; those above what it served itself pass its own
// record. Only the fleet floor knows the others served them. The traffic moves back to
// all.
void store_dump_restored(Run& run, size_t target) {
  const std::vector<ServerProc*> nodes = store_nodes(run, false);
  if (nodes.empty()) return;
  ServerProc* to = nodes[target % nodes.size()];
  std::vector<ServerProc*> others = nodes;
  others.erase(std::find(others.begin(), others.end(), to));

  static int dumps = 0;
  const std::string dump = fmt::format("{}/pg-dump-{}.sql", run.work_dir, ++dumps);
  const std::string& url = run.postgres->url();  // postgres://idforge@127.0.0.1:PORT/idforge
  const size_t colon = url.rfind(':');
  const std::string port = url.substr(colon + 1, url.find('/', colon) - colon - 1);
  const test_support::RunResult dumped =
      test_support::run_command({"/usr/bin/pg_dump", "--clean", "--if-exists", "-h", "127.0.0.1",
                                 "-p", port, "-U", "idforge", "-f", dump, "idforge"},
                                dump, {.die_with_parent = true});
  if (dumped.exit_code != 0) {
    run.fail(fmt::format("pg_dump failed (exit {}): {}", dumped.exit_code, dumped.err));
    return;
  }
  run.log("pg_dump of the primary taken; the load goes on");
  drain(run, {to}, true);
  run.idle(kDumpToRestore);
  drain(run, others, true);
  const std::vector<GuardCounts> before = guards_of(nodes);
  const std::vector<std::string> load = {
      "client", "--single-transaction", "-v", "ON_ERROR_STOP=1", "-q", "-f", dump};
  Status restored = run.postgres->command(load);
  if (!restored.ok()) {
    // A node's transaction can meet the restore's locks in a deadlock: once more.
    run.log("loading the dump failed ({}); trying again", restored.message());
    restored = run.postgres->command(load);
  }
  drain(run, {to}, false);
  if (step_ok(run, restored, "loading the dump back")) {
    run.log("dump loaded back into the primary: the tags are back where they were");
    wait_took_ranges(run, *to, {kSegmentA, kSegmentB});
  }
  drain(run, others, false);
  expect_ready(run, "the dump restore");
  expect_flow(run, "the dump restore");
  expect_refusals(run, before, guards_of(nodes), "the dump restore");
}

// The same on the Redis store: the traffic of its tag moves away from one node (`to`)
// while the other takes ranges, then away from both; the store dies (SIGKILL), its files
// go with it, it restarts empty, and once every node has seen it empty (its guard
// verified the new history) an operator recreates the tag at 1 from a machine of its
// own, which does not see the fleet's registry. The traffic comes back to that node
// first, then to both.
void redis_wiped_recreated(Run& run, size_t target) {
  const std::vector<ServerProc*> nodes = store_nodes(run, true);
  if (nodes.empty()) return;
  ServerProc* to = nodes[target % nodes.size()];
  std::vector<ServerProc*> others = nodes;
  others.erase(std::find(others.begin(), others.end(), to));
  Service& redis = *run.redis_store;

  drain(run, {to}, true);
  run.idle(kDumpToRestore);
  drain(run, others, true);
  const std::vector<GuardCounts> before = guards_of(nodes);
  bool ok = step_ok(run, redis.command({"kill"}), "SIGKILL of the Redis store");
  std::error_code ec;
  std::filesystem::remove_all(redis.dir() + "/appendonlydir", ec);
  std::filesystem::remove(redis.dir() + "/dump.rdb", ec);
  if (ok) {
    Status restarted = redis.restart();
    if (!restarted.ok()) {
      // As restart_service (faults.cc): a start on a loaded machine can miss its deadline.
      run.log("the Redis store did not restart ({}); trying again", restarted.message());
      run.idle(milliseconds(1000));
      restarted = redis.restart();
    }
    ok = step_ok(run, restarted, "restarting the Redis store");
  }
  if (ok) {
    run.log("Redis store SIGKILLed, its files removed, restarted empty");
    ok = wait_seen_empty(run, nodes, before) &&
         step_ok(run, create_tag(run, kTags[2], kTagSteps[2], redis.url(), 1),
                 "recreating the Redis tag");
  }
  drain(run, {to}, false);
  if (ok) {
    run.log("tag {} recreated at 1 (idforge tag create --start 1)", kTags[2]);
    wait_took_ranges(run, *to, {kSegmentR});
  }
  drain(run, others, false);
  if (!ok) return;
  expect_ready(run, "the Redis store wipe");
  expect_flow(run, "the Redis store wipe");
  expect_refusals(run, before, guards_of(nodes), "the Redis store wipe");
}

Status create_tag(Run& run, const std::string& tag, int64_t step, const std::string& store_url,
                  int64_t start) {
  const std::string dir = run.work_dir + "/operator";
  const test_support::RunResult r = test_support::run_command(
      {run.options.idforge, "tag", "create", tag, "--start", std::to_string(start), "--step",
       std::to_string(step), "--store", store_url, "--data-dir", dir},
      run.work_dir + "/tag-create", {.die_with_parent = true});
  if (r.exit_code != 0) {
    return Status::Internal(fmt::format("idforge tag create {} failed (exit {}): {}{}", tag,
                                        r.exit_code, r.out, r.err));
  }
  return Status::Ok();
}

}  // namespace idforge::torture
