// `idforge uuid7`, `idforge uuid4` and `idforge ulid`: 128-bit IDs, one per line.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"

namespace idforge::cli {
namespace {

constexpr size_t kUuidBatch = 1 << 12;

// Prints `count` values made by `fill`, a batch at a time. `fill` must continue the
// previous batch's order, as the process-wide generators do.
template <typename T, typename Fill>
int print_batches(std::string_view count_text, Fill fill) {
  Result<uint64_t> count = parse_count(count_text);
  if (!count.ok()) return fail(count.status());
  std::vector<T> values(std::min<size_t>(*count, kUuidBatch));
  LineWriter out;
  for (uint64_t left = *count; left > 0;) {
    std::span<T> batch(values.data(), std::min<size_t>(left, values.size()));
    fill(batch);
    for (const T& value : batch) out.line(value.to_string());
    left -= batch.size();
  }
  return kExitOk;
}

// Registers a command whose only flag is --count.
void add_counted(CLI::App& app, const char* name, const char* description, const char* example,
                 int& exit_status, int (*run)(std::string_view count)) {
  auto count = std::make_shared<std::string>("1");
  CLI::App* cmd = app.add_subcommand(name, description);
  add_count_flag(*cmd, *count);
  cmd->footer(std::string("Example:\n  ") + example);
  cmd->callback([count, run, &exit_status] { exit_status = run(*count); });
}

int run_uuid7(std::string_view count) {
  return print_batches<Uuid>(count,
                             [](std::span<Uuid> out) { Uuid7Generator::shared().next_batch(out); });
}

int run_uuid4(std::string_view count) {
  return print_batches<Uuid>(count, [](std::span<Uuid> out) {
    for (Uuid& uuid : out) uuid = uuid4();
  });
}

int run_ulid(std::string_view count) {
  return print_batches<Ulid>(count,
                             [](std::span<Ulid> out) { UlidGenerator::shared().next_batch(out); });
}

}  // namespace

void add_uuid7_command(CLI::App& app, int& exit_status) {
  add_counted(app, "uuid7", "Print time-ordered UUIDv7s (RFC 9562), one per line",
              "idforge uuid7 --count 3", exit_status, run_uuid7);
}

void add_uuid4_command(CLI::App& app, int& exit_status) {
  add_counted(app, "uuid4", "Print random UUIDv4s, one per line", "idforge uuid4 --count 3",
              exit_status, run_uuid4);
}

void add_ulid_command(CLI::App& app, int& exit_status) {
  add_counted(app, "ulid", "Print ULIDs (time-ordered, Crockford base32), one per line",
              "idforge ulid --count 3", exit_status, run_ulid);
}

}  // namespace idforge::cli
