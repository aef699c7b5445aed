#include "faults.h"

#include <algorithm>
#include <thread>

#include "support/process.h"

namespace idforge::torture {
namespace {

using std::chrono::milliseconds;
using test_support::ExitInfo;
using test_support::tail_of;

constexpr auto kStartTimeout = std::chrono::seconds(30);
// Further back than this, a clock step starts from the right time instead, so the
// offsets of a long run stay within what the nodes' settings can ride out.
constexpr int64_t kMaxClockBackMs = 75'000;
constexpr auto kStepSeenWithin = std::chrono::seconds(5);
constexpr auto kRecoverWithin = std::chrono::milliseconds(15'000);

// The clock offset after stepping `server` back by `back_ms`.
int64_t stepped_back(Run& run, const ServerProc& server, int64_t back_ms) {
  const int64_t offset = server.offset_ms() - back_ms;
  if (offset >= -kMaxClockBackMs) return offset;
  ++run.events["clock set right before a step (long run)"];
  return -back_ms;
}

void step_clock(Run& run, ServerProc& server, int64_t back_ms) {
  const std::string& name = server.config().name;
  const int64_t offset = stepped_back(run, server, back_ms);
  if (offset == -back_ms && server.offset_ms() < -back_ms) {
    // Set right first, so that the fault is a step back and not a jump forward.
    if (!server.set_offset(0)) run.fail("cannot write the clock offset of " + name);
    run.idle(milliseconds(1500));
  }
  // A clock still behind from an earlier step counts no new rollback.
  const bool checkable = Clock::now() >= server.clock_behind_until();
  const int64_t before = clock_rollbacks(server);
  if (!server.set_offset(offset)) run.fail("cannot write the clock offset of " + name);
  server.note_clock_behind(milliseconds(back_ms) + kStepSeenWithin);
  run.log("{}: wall clock stepped back {} ms (now {} ms off)", name, back_ms, offset);
  // libfaketime re-reads the offset about once a second; the generator counts the step
  // as soon as it reads the clock behind the highest value it saw.
  int64_t after = before;
  const auto until = Clock::now() + kStepSeenWithin;
  while (after <= before && Clock::now() < until) {
    run.idle(milliseconds(200));
    after = clock_rollbacks(server);
  }
  if (after > before) {
    run.log("{}: step seen: {}", name, clock_summary(server));
  } else if (back_ms >= 1000 && checkable) {
    // The fault would test nothing: say so rather than pass.
    run.fail(fmt::format("{}: the clock step of {} ms never reached the generator ({})", name,
                         back_ms, clock_summary(server)));
  } else {
    run.log("{}: the {} ms step went unseen ({})", name, back_ms,
            checkable ? "no clock reading fell inside it" : "its clock was still behind");
  }
}

void pause_past_ttl(Run& run, ServerProc& target) {
  if (run.spare == nullptr) return;
  const std::string before = lease_summary(target);
  target.sigstop();
  run.log("{}: SIGSTOP (lease {})", target.config().name, before);
  run.idle(milliseconds(run.options.ttl_ms + 500));
  // A replacement with the same identity, as an orchestrator would start when the node
  // stops answering: it may take the same slot, above the paused node's stored mark.
  // It runs the paused node's settings, on a machine whose clock is right; refusing to
  // start below the node's stored mark would be a correct answer too.
  ServerProc& spare = *run.spare;
  spare.replace(target.config());
  run.start_server(spare, 0, /*required=*/false);
  run.idle(milliseconds(1500));
  target.sigcont();
  run.log("{}: SIGCONT", target.config().name);
  run.idle(milliseconds(500));
  run.log("{} after resuming: {}", target.config().name, lease_summary(target));
  run.idle(milliseconds(3000));
  expect_ready(run, "SIGCONT of " + target.config().name);
  run.log("{} now: {}; replacement: {}", target.config().name, lease_summary(target),
          lease_summary(spare));
  if (!spare.running()) return;
  const std::optional<ExitInfo> exit = spare.terminate(std::chrono::seconds(15));
  if (!exit || exit->code != 0) {
    run.fail(fmt::format("the replacement did not stop cleanly on SIGTERM: {}",
                         exit ? exit->to_string() : "did not exit within 15 s"));
  }
}

void restart_service(Run& run, Service& service, milliseconds down) {
  const Status stopped = service.stop();
  if (!stopped.ok()) run.fail(stopped.message());
  run.log("{} stopped", service.kind());
  run.idle(down);
  Status restarted = service.restart();
  if (!restarted.ok()) {
    run.log("{} did not restart ({}); trying again", service.kind(), restarted.message());
    run.idle(milliseconds(1000));
    restarted = service.restart();
  }
  if (!restarted.ok()) {
    run.fail(restarted.message());
    return;
  }
  run.log("{} started again", service.kind());
  expect_ready(run, service.kind() + " came back");
}

// The replica is cut off while the nodes keep taking ranges from the primary, the
// primary dies (SIGKILL), and the replica is promoted: the ranges of the lag are lost,
// and only the segment guard keeps them from being handed out again. The old primary
// is then rebuilt as the new one's replica, so the next failover goes the other way.
void postgres_failover(Run& run) {
  auto step = [&run](const Status& st, const std::string& what) { return step_ok(run, st, what); };
  if (!step(run.pg_replica->stop(), "stopping the replica")) return;
  run.log("replica cut off; the primary goes on alone");
  run.idle(milliseconds(1500));
  if (!step(run.postgres->command({"kill"}), "SIGKILL of the primary")) return;
  run.log("primary SIGKILLed");
  if (!step(run.pg_replica->restart(), "restarting the replica")) return;
  if (!step(run.pg_replica->command({"promote"}), "promoting the replica")) return;
  run.log("replica promoted");
  if (!step(run.postgres->command({"rebuild-replica", "--primary", run.pg_replica->dir()}),
            "rebuilding the old primary as a replica")) {
    return;
  }
  std::swap(run.postgres, run.pg_replica);
  run.log("old primary is the new replica");
  expect_ready(run, "PostgreSQL failover");
}

// How many IDs of `kind` must arrive after a fault to show that the nodes take ranges
// again: more than every node serving it can hold in its two buffers (2 x --max-step)
// for a segment tag; any for Snowflake. A rate-capped run asks for at most one second's
// worth of all clients.
uint64_t flow_needed(Run& run, Kind kind) {
  if (kind == kSnowflake) return 1;
  uint64_t nodes = 0;
  for (const auto& server : run.servers) {
    nodes += server->running() && server->serves_redis_tag.load() == (kind == kSegmentR);
  }
  uint64_t needed = 2 * kMaxStep * nodes + 1;
  if (run.options.rate > 0) needed = std::min(needed, static_cast<uint64_t>(run.options.rate));
  return needed;
}

}  // namespace

// Every running server answers /readyz with 200 again soon after `what`: the servers
// recover by themselves once the coordinator, the store or the process is back.
void expect_ready(Run& run, const std::string& what) {
  for (const auto& server : run.servers) {
    if (!server->running()) continue;
    // A server whose clock is behind may wait for it before it takes a lease again.
    const auto behind =
        std::max(Clock::duration::zero(), server->clock_behind_until() - Clock::now());
    if (!server->wait_ready(kRecoverWithin + std::chrono::duration_cast<milliseconds>(behind))) {
      const HttpAnswer a = http_get(server->http_port.load(), "/readyz", std::chrono::seconds(2));
      run.fail(fmt::format("{} not ready {} s after {}: {} {}", server->config().name,
                           kRecoverWithin.count() / 1000, what, a.status, a.body));
    }
  }
  run.log("all servers ready again after {}", what);
}

// Every kind of ID the cluster serves arrives again soon after `what`.
void expect_flow(Run& run, const std::string& what) {
  if (run.clients == nullptr) return;
  std::vector<Kind> kinds;
  std::vector<uint64_t> start, needed;
  for (int k = 0; k < kKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    if (kind == kSegmentR && run.redis_store == nullptr) continue;
    kinds.push_back(kind);
    start.push_back(run.clients->ids_received(kind));
    needed.push_back(flow_needed(run, kind));
  }
  const auto got = [&](size_t i) { return run.clients->ids_received(kinds[i]) - start[i]; };
  const auto all_flow = [&] {
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (got(i) < needed[i]) return false;
    }
    return true;
  };
  const auto began = Clock::now();
  while (!all_flow() && Clock::now() - began < kRecoverWithin) run.idle(milliseconds(20));
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (got(i) < needed[i]) {
      run.fail(fmt::format("{} IDs of {} within {} s after {}; at least {} show new ranges",
                           grouped(got(i)), kind_name(kinds[i]), kRecoverWithin.count() / 1000,
                           what, grouped(needed[i])));
    }
  }
  run.log("IDs of every kind flow again after {} ({:.1f} s)", what,
          std::chrono::duration<double>(Clock::now() - began).count());
}

bool step_ok(Run& run, const Status& st, const std::string& what) {
  if (!st.ok()) run.fail(what + ": " + st.message());
  return st.ok();
}

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<size_t>(i), ",");
  }
  return digits;
}

void Run::idle(milliseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::min<Clock::duration>(milliseconds(100), until - Clock::now()));
    for (const auto& server : servers) {
      if (std::optional<ExitInfo> exit = server->check_unexpected_exit()) {
        fail(fmt::format("{} exited on its own: {}; its stderr ends with:\n{}",
                         server->config().name, exit->to_string(),
                         tail_of(server->err_path(), 15)));
        if (server.get() != spare) start_server(*server, server->offset_ms());
      }
    }
    if (clients != nullptr && Clock::now() - last_progress_ >= std::chrono::seconds(10)) {
      last_progress_ = Clock::now();
      log("{} IDs received", grouped(clients->ids_received()));
    }
  }
}

bool Run::start_server(ServerProc& server, int64_t offset_ms, bool required) {
  const auto began = Clock::now();
  StartOutcome outcome = server.start(common_args, offset_ms, kStartTimeout);
  if (outcome == StartOutcome::kRefusedClockBehind) {
    ++events["start refused: clock behind the stored high-water mark"];
    log("{} refused to start with its clock {} ms off: {}", server.config().name, offset_ms,
        server.last_failure());
    if (!required) return false;
    log("{}: clock set right, starting again", server.config().name);
    outcome = server.start(common_args, 0, kStartTimeout);
  }
  if (outcome != StartOutcome::kStarted) {
    fail(fmt::format("{} did not start: {}", server.config().name, server.last_failure()));
    return false;
  }
  log("{} started (#{}, clock {} ms off) in {:.1f} s: {}", server.config().name,
      server.incarnation.load(), server.offset_ms(),
      std::chrono::duration<double>(Clock::now() - began).count(), lease_summary(server));
  return true;
}

std::string fault_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKillRestart:
      return "SIGKILL + restart";
    case FaultKind::kClockBack10ms:
      return "clock stepped back 10 ms";
    case FaultKind::kClockBack1s:
      return "clock stepped back 1 s";
    case FaultKind::kClockBack30s:
      return "clock stepped back 30 s";
    case FaultKind::kRestartClockBack:
      return "restart with the clock set back";
    case FaultKind::kCoordinatorRestart:
      return "coordinator stopped + started";
    case FaultKind::kPostgresRestart:
      return "PostgreSQL stopped + started";
    case FaultKind::kPausePastTtl:
      return "SIGSTOP past the lease TTL + SIGCONT";
    case FaultKind::kPostgresFailover:
      return "PostgreSQL primary SIGKILLed, lagging replica promoted";
    case FaultKind::kStoreDumpRestored:
      return "PostgreSQL store restored from pg_dump";
    case FaultKind::kRedisWipedRecreated:
      return "Redis store wiped, tag recreated at 1";
  }
  return "?";
}

std::vector<Step> short_schedule() {
  // Nodes: 0 logical (defaults), 1 ring, 2 logical allowed to run 60 s ahead (these on
  // PostgreSQL); 3 and 4 on the Redis store, defaults.
  return {
      {FaultKind::kKillRestart, 0, 0, milliseconds(5000)},
      {FaultKind::kClockBack10ms, 1, 0, milliseconds(4000)},
      {FaultKind::kClockBack30s, 2, 0, milliseconds(4000)},
      {FaultKind::kCoordinatorRestart, 0, 0, milliseconds(5000)},
      {FaultKind::kClockBack1s, 0, 0, milliseconds(5000)},
      {FaultKind::kPostgresRestart, 0, 0, milliseconds(5000)},
      {FaultKind::kPostgresFailover, 0, 0, milliseconds(4000)},
      {FaultKind::kStoreDumpRestored, 1, 0, milliseconds(2000)},
      {FaultKind::kRedisWipedRecreated, 0, 0, milliseconds(2000)},
      {FaultKind::kPausePastTtl, 1, 0, milliseconds(5000)},
      {FaultKind::kRestartClockBack, 0, 1000, milliseconds(5000)},
      {FaultKind::kRestartClockBack, 2, 30'000, milliseconds(5000)},
  };
}

std::vector<Step> random_round(Run& run) {
  std::vector<Step> round;
  std::uniform_int_distribution<size_t> node(0, run.node_count() - 1);
  std::uniform_int_distribution<int> gap_ms(3000, 9000);
  const int64_t backs[] = {10, 1000, 30'000};
  std::uniform_int_distribution<size_t> back(0, 2);
  for (FaultKind kind : kAllFaults) {
    round.push_back({kind, node(run.rng), backs[back(run.rng)], milliseconds(gap_ms(run.rng))});
  }
  std::shuffle(round.begin(), round.end(), run.rng);
  return round;
}

void inject(Run& run, const Step& step) {
  ServerProc& target = *run.servers[step.target];
  const std::string& name = target.config().name;
  std::string label = fault_name(step.kind);
  if (step.kind == FaultKind::kRestartClockBack) {
    label += fmt::format(" ({} ms)", step.clock_back_ms);
  }
  const bool on_a_service =
      step.kind == FaultKind::kCoordinatorRestart || step.kind == FaultKind::kPostgresRestart ||
      step.kind == FaultKind::kPostgresFailover || step.kind == FaultKind::kStoreDumpRestored ||
      step.kind == FaultKind::kRedisWipedRecreated;
  run.log("== fault: {}{}", label, on_a_service ? "" : " on " + name);
  ++run.faults[fault_name(step.kind)];
  switch (step.kind) {
    case FaultKind::kKillRestart:
      target.sigkill();
      run.log("{}: SIGKILL", name);
      run.start_server(target, target.offset_ms());
      break;
    case FaultKind::kClockBack10ms:
      step_clock(run, target, 10);
      break;
    case FaultKind::kClockBack1s:
      step_clock(run, target, 1000);
      break;
    case FaultKind::kClockBack30s:
      step_clock(run, target, 30'000);
      break;
    case FaultKind::kRestartClockBack: {
      target.sigkill();
      run.log("{}: SIGKILL; waiting out its lease so that it gets its slot (and mark) back", name);
      run.idle(milliseconds(run.options.ttl_ms + 500));
      const int64_t offset = stepped_back(run, target, step.clock_back_ms);
      target.note_clock_behind(milliseconds(step.clock_back_ms) + kStepSeenWithin);
      if (run.start_server(target, offset)) {
        run.idle(milliseconds(1000));
        run.log("{}: {}", name, clock_summary(target));
      }
      break;
    }
    case FaultKind::kCoordinatorRestart:
      // Down longer than the TTL: every lease expires meanwhile.
      restart_service(run, *run.coordinator, milliseconds(run.options.ttl_ms + 1000));
      break;
    case FaultKind::kPostgresRestart:
      restart_service(run, *run.postgres, milliseconds(4000));
      break;
    case FaultKind::kPausePastTtl:
      pause_past_ttl(run, target);
      break;
    case FaultKind::kPostgresFailover:
      postgres_failover(run);
      break;
    case FaultKind::kStoreDumpRestored:
      store_dump_restored(run, step.target);
      return;  // checked IDs flow already
    case FaultKind::kRedisWipedRecreated:
      redis_wiped_recreated(run, step.target);
      return;
  }
  expect_flow(run, label);
}

}  // namespace idforge::torture
