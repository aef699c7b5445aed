// `idforge next`: Snowflake IDs from a generator built for this one invocation (with
// --registry, on a worker lease), or with --tag, segment IDs of a tag from its store(s).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/segment_stores.h"
#include "cli/worker_lease.h"
#include "coord/registry_factory.h"
#include "idforge/clock.h"
#include "idforge/snowflake.h"

namespace idforge::cli {
namespace {

// IDs made per next_batch call: large enough that the call overhead vanishes, small
// enough that the buffer stays in cache.
constexpr size_t kNextBatch = 1 << 14;

struct NextFlags {
  std::string count = "1";
  LayoutFlags layout;
  FieldFlags fields;
  std::string policy = "logical";
  std::optional<std::string> max_drift_ms;
  std::optional<std::string> tag;  // segment mode
  StoreFlags stores;
  RegistryFlags registry;  // worker id from a lease instead of --datacenter/--worker
};

// Flags that shape Snowflake IDs and mean nothing for a segment tag.
// (--registry is the fleet floor's with --tag.)
constexpr const char* kSnowflakeOnly[] = {"--layout",       "--epoch",  "--tick-ms",
                                          "--datacenter",   "--worker", "--node",
                                          "--max-drift-ms", "--policy", "--identity"};
// With --registry the lease decides the node fields.
constexpr const char* kNodeFlags[] = {"--datacenter", "--worker", "--node"};

// Segment mode, after checking that no Snowflake flag was given with it (a silently
// ignored --worker would suggest the IDs carry it).
int run_next_tag(const CLI::App& cmd, const NextFlags& flags) {
  for (const char* name : kSnowflakeOnly) {
    if (cmd.count(name) > 0) {
      return fail(Status::InvalidArgument(
          fmt::format("{} applies to Snowflake IDs, not to --tag (segment IDs)", name)));
    }
  }
  Result<uint64_t> count = parse_count(flags.count);
  if (!count.ok()) return fail(count.status());
  StoreFlags stores = flags.stores;
  stores.registry_url = flags.registry.url;
  return print_segment_ids(stores, *flags.tag, *count);
}

Result<SnowflakeOptions> build_options(const NextFlags& flags) {
  IDFORGE_ASSIGN_OR_RETURN(Layout layout, resolve_layout(flags.layout));
  IDFORGE_ASSIGN_OR_RETURN(auto nodes,
                           resolve_fields(layout, flags.fields, /*allow_sequence=*/false));
  Result<RollbackPolicy> policy = parse_policy(flags.policy);
  if (!policy.ok()) {
    return Status::InvalidArgument(
        fmt::format("unknown --policy '{}' (choose logical, wait, reject or ring)", flags.policy));
  }

  SnowflakeOptions options;
  options.layout = std::move(layout);
  options.nodes = std::move(nodes);
  options.policy = *policy;
  if (flags.max_drift_ms) {
    IDFORGE_ASSIGN_OR_RETURN(uint64_t drift, parse_number(*flags.max_drift_ms, "--max-drift-ms"));
    if (drift > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::OutOfRange(fmt::format("--max-drift-ms {} is too large", drift));
    }
    options.max_drift_ms = static_cast<int64_t>(drift);
  }
  return options;
}

// This process keeps no high-water mark, so a second run on this host that started
// inside the last tick issued (or inside ticks borrowed ahead of the clock) would
// repeat IDs. Leaving only once the clock has passed that tick makes back-to-back
// runs safe; concurrent runs with one worker id still need a registry. The wait is
// bounded, so a clock stepped back during the run cannot hang the exit.
void wait_until_tick_passed(const SnowflakeGenerator& generator) {
  constexpr int64_t kSlackMs = 100;
  if (generator.last_unix_ms() == 0) return;  // nothing issued
  Clock& clock = default_clock();
  const int64_t free_from_ms = generator.last_unix_ms() + generator.layout().tick_ms();
  const int64_t now = clock.now_ms();
  if (now < free_from_ms) clock.wait_until(free_from_ms, free_from_ms - now + kSlackMs);
}

int run_next(const CLI::App& cmd, const NextFlags& flags) {
  Result<uint64_t> count = parse_count(flags.count);
  if (!count.ok()) return fail(count.status());
  const bool leased = !flags.registry.url.empty();
  if (leased) {
    for (const char* name : kNodeFlags) {
      if (cmd.count(name) > 0) {
        return fail(Status::InvalidArgument(fmt::format(
            "{} cannot be combined with --registry: the worker lease decides the node fields",
            name)));
      }
    }
  } else if (flags.registry.identity) {
    return fail(Status::InvalidArgument("--identity needs --registry URL"));
  }
  Result<SnowflakeOptions> options = build_options(flags);
  if (!options.ok()) return fail(options.status());

  std::unique_ptr<HeldLease> lease;
  std::unique_ptr<SnowflakeGenerator> own_generator;
  SnowflakeGenerator* generator = nullptr;
  if (leased) {
    const std::string label = flags.layout.layout.empty() ? "twitter" : flags.layout.layout;
    Result<OpenedRegistry> opened =
        open_worker_registry(flags.registry.url, options->layout, label, flags.stores.data_dir);
    if (!opened.ok()) return fail(opened.status());
    Result<std::unique_ptr<HeldLease>> held =
        HeldLease::acquire(std::move(opened).value(), identity_of(flags.registry));
    if (!held.ok()) return fail(held.status());
    lease = std::move(held).value();
    Result<SnowflakeGenerator*> made = lease->make_generator(std::move(options).value());
    if (!made.ok()) return fail(made.status());
    generator = *made;
  } else {
    auto made = SnowflakeGenerator::create(std::move(options).value());
    if (!made.ok()) return fail(made.status());
    own_generator = std::move(made).value();
    generator = own_generator.get();
  }

  std::vector<uint64_t> ids(std::min<size_t>(*count, kNextBatch));
  LineWriter out;
  int status = kExitOk;
  for (uint64_t left = *count; left > 0;) {
    std::span<uint64_t> batch(ids.data(), std::min<size_t>(left, ids.size()));
    Status made = generator->next_batch(batch);
    if (!made.ok()) {
      out.flush();
      status = fail(made);
      break;
    }
    for (uint64_t id : batch) out.line(id);
    left -= batch.size();
  }
  out.flush();
  if (lease) {
    // The lease's high-water mark already keeps the next holder above these IDs;
    // releasing frees the slot sooner than the TTL would.
    Status released = lease->release();
    if (!released.ok() && status == kExitOk) status = fail(released);
  } else {
    wait_until_tick_passed(*generator);
  }
  return status;
}

}  // namespace

void add_next_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<NextFlags>();
  CLI::App* cmd = app.add_subcommand("next", "Print new Snowflake IDs, one per line");
  add_count_flag(*cmd, flags->count);
  add_layout_flags(*cmd, flags->layout);
  add_field_flags(*cmd, flags->fields, /*with_sequence=*/false);
  cmd->add_option("--policy", flags->policy, "Clock rollback policy: logical, wait, reject or ring")
      ->type_name("POLICY")
      ->default_str("logical");
  cmd->add_option_function<std::string>(
         "--max-drift-ms", [f = flags.get()](const std::string& v) { f->max_drift_ms = v; },
         "logical policy: how far ahead of the clock IDs may run (default 1000)")
      ->type_name("MS");
  cmd->add_option_function<std::string>(
         "--tag", [f = flags.get()](const std::string& v) { f->tag = v; },
         "Segment mode: the next IDs of this tag (see 'idforge tag --help')")
      ->type_name("NAME");
  add_store_flags(*cmd, flags->stores);
  cmd->add_flag("--allow-unsafe-store", flags->stores.allow_unsafe,
                "With --tag: issue IDs from a store whose settings can lose committed ranges "
                "(Redis without appendfsync always, PostgreSQL with fsync off; docs/stores.md)");
  add_registry_flags(*cmd, flags->registry, /*required=*/false, /*with_identity=*/true);
  cmd->get_option("--registry")
      ->description(fmt::format(
          "Worker-id registry: {}. Snowflake: the worker id comes from a lease. With --tag: the "
          "fleet floor the ranges are recorded in (default {}; docs/stores.md, \"The fleet "
          "floor\")",
          coord::registry_url_forms(), coord::local_registry_url("DATA_DIR/workers")));
  cmd->footer(
      "Without --registry the node fields come from the flags and IDs are unique only\n"
      "within this process (and, thanks to a short wait at exit, across back-to-back runs);\n"
      "give every concurrent run its own --worker, or use --registry: the worker lease\n"
      "then fills the node fields, keeps the high-water mark across restarts, and is\n"
      "released at exit (see 'idforge worker --help').\n"
      "Examples:\n"
      "  idforge next --count 3 --datacenter 1 --worker 7\n"
      "  idforge next --layout instagram --node shard=42\n"
      "  idforge next --registry local:./idforge-data --count 5\n"
      "  idforge next --tag order --count 10");
  cmd->callback([flags, cmd, &exit_status] {
    if (flags->tag) {
      exit_status = run_next_tag(*cmd, *flags);
    } else if (cmd->count("--store") > 0 ||
               (cmd->count("--data-dir") > 0 && flags->registry.url.empty())) {
      exit_status = fail(Status::InvalidArgument(
          cmd->count("--store") > 0 ? "--store needs --tag NAME"
                                    : "--data-dir needs --tag NAME or --registry URL"));
    } else {
      exit_status = run_next(*cmd, *flags);
    }
  });
}

}  // namespace idforge::cli
