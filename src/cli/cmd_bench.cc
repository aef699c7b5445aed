// `idforge bench`: registers the flags; bench.cc measures and prints.
#include <memory>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace idforge::cli {
namespace {

// An hour per measurement is surely a typo (ms for s), not a plan.
constexpr double kMaxSeconds = 3600;

int run_checked(const BenchOptions& options) {
  if (!(options.seconds > 0 && options.seconds <= kMaxSeconds)) {
    return fail(Status::InvalidArgument(fmt::format(
        "--seconds must be more than 0 and at most {}, got {}", kMaxSeconds, options.seconds)));
  }
  return run_bench(options);
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure in-process throughput of each generator");
  cmd->add_option("--seconds", options->seconds, "Seconds per measurement")
      ->type_name("S")
      ->default_str("1");
  cmd->add_option("--threads", options->threads, "Thread counts to run, e.g. 1,2,8 (default 1,2)")
      ->type_name("T[,T...]")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--only", options->only, "Run only benchmarks whose name starts with PREFIX")
      ->type_name("PREFIX")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--json", options->json, "Print JSON");
  cmd->footer("Example:\n  idforge bench --seconds 0.5 --threads 1,4 --only snowflake");
  cmd->callback([options, &exit_status] { exit_status = run_checked(*options); });
}

}  // namespace idforge::cli
