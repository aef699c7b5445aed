// `idforge worker status|acquire|release`: look at and manage worker-id leases in a
// registry. `acquire` holds a lease (renewed) until told to stop, for operators and
// for the tests that check every registry the same way.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/segment_stores.h"
#include "cli/worker_lease.h"
#include "coord/registry_factory.h"
#include "idforge/time_format.h"

namespace idforge::cli {
namespace {

// How often a holder looks at its lease while waiting for a signal.
constexpr int64_t kHoldPollMs = 50;

struct WorkerFlags {
  RegistryFlags registry;
  std::string layout;  // empty = twitter
  std::string data_dir = kDefaultDataDir;
  bool json = false;
  std::optional<std::string> hold_ms;  // acquire: none = until a signal
  std::string slot;                    // release
};

std::string layout_label(const WorkerFlags& flags) {
  return flags.layout.empty() ? "twitter" : flags.layout;
}

Result<OpenedRegistry> open_from(const WorkerFlags& flags) {
  LayoutFlags layout_flags;
  layout_flags.layout = flags.layout;
  IDFORGE_ASSIGN_OR_RETURN(Layout layout, resolve_layout(layout_flags));
  return open_worker_registry(flags.registry.url, layout, layout_label(flags), flags.data_dir);
}

std::string mark_text(int64_t mark_ms) {
  if (mark_ms == 0) return "none";
  if (mark_ms < 0) return "unreadable";
  return format_iso8601_utc(mark_ms);
}

std::string node_text(const coord::LeaseNodeFields& fields, const Lease& lease) {
  if (fields.datacenter_field.empty())
    return fmt::format("{}={}", fields.worker_field, lease.worker);
  return fmt::format("{}={}, {}={}", fields.datacenter_field, lease.datacenter, fields.worker_field,
                     lease.worker);
}

int run_status(const WorkerFlags& flags) {
  Result<OpenedRegistry> opened = open_from(flags);
  if (!opened.ok()) return fail(opened.status());
  const SlotSpace& space = opened->fields.space;
  Result<std::vector<SlotStatus>> taken = opened->registry->status();
  if (!taken.ok()) return fail(taken.status());

  if (flags.json) {
    nlohmann::ordered_json out;
    out["registry"] = opened->registry->describe();
    out["layout"] = layout_label(flags);
    out["slots"] = space.slots();
    out["taken"] = nlohmann::ordered_json::array();
    for (const SlotStatus& s : *taken) {
      nlohmann::ordered_json row;
      row["slot"] = s.slot;
      row["datacenter"] = space.datacenter_of(s.slot);
      row["worker"] = space.worker_of(s.slot);
      row["holder"] = s.holder;
      row["high_water_ms"] = s.high_water_ms;
      row["expires_in_ms"] = s.expires_in_ms;
      out["taken"].push_back(std::move(row));
    }
    fmt::print("{}\n", out.dump());
    return kExitOk;
  }
  // The first word of every row is its slot number; nothing else starts with a digit.
  fmt::print("registry: {}; {} of {} worker slots taken (layout {})\n",
             opened->registry->describe(), taken->size(), space.slots(), layout_label(flags));
  if (taken->empty()) return kExitOk;
  fmt::print("{:<8} {:<10} {:<8} {:<24} {:<12} {}\n", "SLOT", "DATACENTER", "WORKER", "HIGH_WATER",
             "EXPIRES_IN", "HOLDER");
  for (const SlotStatus& s : *taken) {
    fmt::print("{:<8} {:<10} {:<8} {:<24} {:<12} {}\n", s.slot, space.datacenter_of(s.slot),
               space.worker_of(s.slot), mark_text(s.high_water_ms),
               s.expires_in_ms < 0 ? std::string("never") : fmt::format("{} ms", s.expires_in_ms),
               s.holder);
  }
  return kExitOk;
}

void print_lease(const WorkerFlags& flags, const coord::LeaseNodeFields& fields, const Lease& lease,
                 const std::string& identity, const std::string& described) {
  if (flags.json) {
    nlohmann::ordered_json out;
    out["slot"] = lease.slot;
    out["datacenter"] = lease.datacenter;
    out["worker"] = lease.worker;
    out["high_water_ms"] = lease.high_water_ms;
    out["ttl_ms"] = lease.ttl_ms;
    out["start_delay_ms"] = lease.start_delay_ms;
    out["identity"] = identity;
    out["registry"] = described;
    fmt::print("{}\n", out.dump());
  } else {
    // `registry` comes last: a reader that sees it has the whole lease.
    fmt::print(
        "slot: {}\ndatacenter: {}\nworker: {}\nfields: {}\nhigh_water_ms: {}\nhigh_water: {}\n"
        "ttl_ms: {}\nstart_delay_ms: {}\nidentity: {}\nregistry: {}\n",
        lease.slot, lease.datacenter, lease.worker, node_text(fields, lease), lease.high_water_ms,
        mark_text(lease.high_water_ms), lease.ttl_ms, lease.start_delay_ms, identity, described);
  }
  std::fflush(stdout);  // the caller may be waiting for these lines
}

// Blocks SIGTERM and SIGINT in this thread, and so in every thread started after it
// (the keeper's), so that the holder below receives them with sigtimedwait.
class BlockedStopSignals {
 public:
  BlockedStopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedStopSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedStopSignals(const BlockedStopSignals&) = delete;
  BlockedStopSignals& operator=(const BlockedStopSignals&) = delete;

  // True when a stop signal arrived within `ms`.
  bool wait(int64_t ms) const {
    timespec timeout{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1'000'000)};
    return sigtimedwait(&set_, nullptr, &timeout) > 0;
  }

 private:
  sigset_t set_;
  sigset_t old_;
};

int run_acquire(const WorkerFlags& flags) {
  std::optional<int64_t> hold_ms;
  if (flags.hold_ms) {
    Result<uint64_t> ms = parse_number(*flags.hold_ms, "--hold-ms");
    if (!ms.ok()) return fail(ms.status());
    constexpr uint64_t kMaxHoldMs = 366ull * 86'400'000;
    if (*ms > kMaxHoldMs) {
      return fail(Status::OutOfRange(fmt::format(
          "--hold-ms {} is more than a year; leave it out to hold until stopped", *ms)));
    }
    hold_ms = static_cast<int64_t>(*ms);
  }
  const std::string identity = identity_of(flags.registry);
  Result<OpenedRegistry> opened = open_from(flags);
  if (!opened.ok()) return fail(opened.status());
  const std::string described = opened->registry->describe();
  const coord::LeaseNodeFields fields = opened->fields;

  const BlockedStopSignals signals;
  Result<std::unique_ptr<HeldLease>> held = HeldLease::acquire(std::move(opened).value(), identity);
  if (!held.ok()) return fail(held.status());
  print_lease(flags, fields, (*held)->lease(), identity, described);

  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_ms.value_or(0));
  while (true) {
    const coord::KeeperStatus s = (*held)->keeper().status();
    if (s.state == coord::LeaseState::kLost) {
      return fail(Status::LeaseLost(fmt::format("lost the worker lease for slot {}: {}",
                                                (*held)->lease().slot, s.last_error)));
    }
    int64_t wait_ms = kHoldPollMs;
    if (hold_ms) {
      const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                               until - std::chrono::steady_clock::now())
                               .count();
      if (left <= 0) break;
      wait_ms = std::min(wait_ms, left);
    }
    if (signals.wait(wait_ms)) break;
  }
  Status released = (*held)->release();
  if (!released.ok()) return fail(released);
  return kExitOk;
}

int run_release(const WorkerFlags& flags) {
  if (flags.slot.empty()) {
    return fail(Status::InvalidArgument("missing the SLOT (see 'idforge worker release --help')"));
  }
  Result<uint64_t> slot = parse_number(flags.slot, "SLOT");
  if (!slot.ok()) return fail(slot.status());
  Result<OpenedRegistry> opened = open_from(flags);
  if (!opened.ok()) return fail(opened.status());
  const SlotSpace& space = opened->fields.space;
  if (*slot >= space.slots()) {
    return fail(Status::OutOfRange(
        fmt::format("slot {} is out of range: layout {} has {} slots (0..{})", *slot,
                    layout_label(flags), space.slots(), space.slots() - 1)));
  }
  if (Status freed = opened->registry->force_release(*slot); !freed.ok()) return fail(freed);
  fmt::print("released worker slot {} (datacenter {}, worker {}) in {}\n", *slot,
             space.datacenter_of(*slot), space.worker_of(*slot), opened->registry->describe());
  return kExitOk;
}

int run_init(const WorkerFlags& flags) {
  Result<OpenedRegistry> opened = open_from(flags);
  if (!opened.ok()) return fail(opened.status());
  if (Status recorded = opened->registry->record_new(); !recorded.ok()) return fail(recorded);
  fmt::print("{} is recorded as new: its first leases issue at once\n",
             opened->registry->describe());
  return kExitOk;
}

// The flags every worker subcommand takes; `flags` must outlive `cmd`.
void add_common_flags(CLI::App& cmd, WorkerFlags& flags, bool with_identity) {
  add_registry_flags(cmd, flags.registry, /*required=*/true, with_identity);
  cmd.add_option("-l,--layout", flags.layout,
                 "Layout whose node fields make the slots: preset or custom spec (slot = "
                 "datacenter << worker bits | worker)")
      ->type_name("NAME|SPEC")
      ->default_str("twitter");
  cmd.add_option("--data-dir", flags.data_dir,
                 "Local state directory: slot files of local: (without DIR) and static:")
      ->type_name("DIR")
      ->default_str(kDefaultDataDir);
}

}  // namespace

void add_worker_command(CLI::App& app, int& exit_status) {
  CLI::App* worker =
      app.add_subcommand("worker", "Worker-id leases: status, acquire, release, init");
  worker->require_subcommand(1);
  worker->footer(
      "A slot is a (datacenter, worker) pair of the layout's node fields:\n"
      "  slot = datacenter << worker bits | worker\n"
      "Layouts with other node names use the field named worker (else the first node field)\n"
      "as the worker and the other one, if any, as the datacenter (discord: worker, process;\n"
      "instagram: shard; sonyflake: machine).\n"
      "Examples:\n"
      "  idforge worker acquire --registry local:./idforge-data --hold-ms 60000\n"
      "  idforge worker status --registry redis://127.0.0.1:6379\n"
      "  idforge worker release --registry redis://127.0.0.1:6379 7\n"
      "Registries (--registry):\n" +
      coord::describe_registry_kinds());

  auto status_flags = std::make_shared<WorkerFlags>();
  CLI::App* status = worker->add_subcommand("status", "List the taken worker slots");
  add_common_flags(*status, *status_flags, /*with_identity=*/false);
  status->add_flag("--json", status_flags->json, "One JSON object");
  status->callback([status_flags, &exit_status] { exit_status = run_status(*status_flags); });

  auto acquire_flags = std::make_shared<WorkerFlags>();
  CLI::App* acquire = worker->add_subcommand(
      "acquire",
      "Take a worker slot, print it, keep the lease renewed until SIGTERM/SIGINT or --hold-ms, "
      "then release it");
  add_common_flags(*acquire, *acquire_flags, /*with_identity=*/true);
  acquire
      ->add_option_function<std::string>(
          "--hold-ms", [f = acquire_flags.get()](const std::string& v) { f->hold_ms = v; },
          "Release after this many ms (0: at once); default: hold until stopped")
      ->type_name("MS");
  acquire->add_flag("--json", acquire_flags->json, "Print the lease as one JSON line");
  acquire->callback([acquire_flags, &exit_status] { exit_status = run_acquire(*acquire_flags); });

  auto init_flags = std::make_shared<WorkerFlags>();
  CLI::App* init = worker->add_subcommand(
      "init",
      "Record that a registry no fleet has used yet is new, so that its first leases issue at "
      "once (Redis; the others need nothing)");
  add_common_flags(*init, *init_flags, /*with_identity=*/false);
  init->footer(
      "A Redis registry cannot tell a new registry from one that lost its data (a flush, a\n"
      "restart without persistence), so its first leases wait 2 x ttl for holders it may\n"
      "have forgotten. Run this once, before the fleet's first start, on a registry nothing\n"
      "has used: it refuses one that holds any key of the cluster.\n"
      "Example:\n"
      "  idforge worker init --registry 'redis://10.0.0.5:6379?cluster=orders'");
  init->callback([init_flags, &exit_status] { exit_status = run_init(*init_flags); });

  auto release_flags = std::make_shared<WorkerFlags>();
  CLI::App* release = worker->add_subcommand(
      "release",
      "Free a slot whatever holds it (local: and static: only stale ones: a live process's "
      "lock cannot be broken)");
  add_common_flags(*release, *release_flags, /*with_identity=*/false);
  release->add_option("SLOT", release_flags->slot, "The slot number `worker status` shows");
  release->callback([release_flags, &exit_status] { exit_status = run_release(*release_flags); });
}

}  // namespace idforge::cli
