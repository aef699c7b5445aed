#include "cli/segment_stores.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "coord/registry_factory.h"
#include "idforge/segment_buffer.h"
#include "store/store_factory.h"

namespace idforge::cli {
namespace {

// IDs taken from the buffer per call: large enough that the call overhead vanishes,
// small enough to stay in cache.
constexpr size_t kSegmentBatch = 1 << 14;
// Longest a one-shot run waits for a segment: SQLite alone may wait 5 s for a lock.
constexpr int64_t kWaitMs = 15'000;
constexpr uint64_t kMaxDynamicStep = 1'000'000;

}  // namespace

void add_store_flags(CLI::App& cmd, StoreFlags& flags) {
  cmd.add_option("--store", flags.urls,
                 fmt::format("Segment store: {}; repeat to stripe a tag over several (always "
                             "the same stores, same order)",
                             store::store_url_forms()))
      ->type_name("URL")
      ->allow_extra_args(false);
  cmd.add_option("--data-dir", flags.data_dir,
                 fmt::format("Local state directory (created 0700); the default store is {}",
                             store::sqlite_url("DIR/segments.db")))
      ->type_name("DIR")
      ->default_str(kDefaultDataDir);
}

void add_floor_registry_flag(CLI::App& cmd, StoreFlags& flags) {
  cmd.add_option("--registry", flags.registry_url,
                 "Worker-id registry whose fleet floor records what every node took of each tag "
                 "(docs/stores.md, \"The fleet floor\"); the same URL as the servers' "
                 "worker.registry")
      ->type_name("URL")
      ->envname("IDFORGE_REGISTRY")
      ->default_str(coord::local_registry_url("DATA_DIR/workers"));
}

Result<coord::RegistryFloor> open_floor(const StoreFlags& flags) {
  return coord::open_registry_floor(flags.registry_url, flags.data_dir);
}

bool store_flags_given(const CLI::App& cmd) {
  return cmd.count("--store") > 0 || cmd.count("--data-dir") > 0;
}

Result<std::vector<OpenedStore>> open_stores(const StoreFlags& flags) {
  return store::open_stores(flags.urls, flags.data_dir);
}

int print_segment_ids(const StoreFlags& flags, const std::string& tag, uint64_t count) {
  if (Status valid = validate_tag_name(tag); !valid.ok()) return fail(valid);
  // Like the server, a one-shot run never hands out a range at or below what this data
  // directory has served (store_guard.h).
  if (Status dir = store::ensure_data_dir(flags.data_dir); !dir.ok()) return fail(dir);
  Result<std::unique_ptr<store::ServedMarks>> marks =
      store::ServedMarks::open(store::served_marks_path(flags.data_dir));
  if (!marks.ok()) return fail(marks.status());
  // And never one any node of the fleet took (a store that went back after another
  // node served from it).
  Result<coord::RegistryFloor> floor = open_floor(flags);
  if (!floor.ok()) return fail(floor.status());
  store::StoreSafety safety;
  safety.marks = marks->get();
  safety.fleet = floor->floor.get();
  safety.max_step = kMaxDynamicStep;
  safety.allow_unsafe = flags.allow_unsafe;
  safety.log = [](const std::string& line) { print_error(line); };
  Result<std::vector<OpenedStore>> opened = store::open_stores(flags.urls, flags.data_dir, safety);
  if (!opened.ok()) return fail(opened.status());
  Result<store::TagSource> source = store::tag_source(*opened, tag);
  if (!source.ok()) return fail(source.status());
  if (!source->down.empty())
    print_error(fmt::format("warning: continuing without {}", source->down));
  const uint64_t step = source->step;

  SegmentBufferOptions options;
  options.tag = tag;
  options.min_step = step;
  // A one-shot run never needs a segment larger than what it prints; a larger one
  // would only leave a bigger gap behind.
  options.max_step = std::max(step, std::min(count, kMaxDynamicStep));
  options.wait_ms = kWaitMs;
  auto buffer = SegmentBuffer::create(source->source, options);
  if (!buffer.ok()) return fail(buffer.status());

  std::vector<uint64_t> ids(std::min<uint64_t>(count, kSegmentBatch));
  LineWriter out;
  for (uint64_t left = count; left > 0;) {
    std::span<uint64_t> batch(ids.data(), std::min<uint64_t>(left, ids.size()));
    Status made = (*buffer)->next_batch(batch);
    if (!made.ok()) {
      out.flush();
      return fail(made);
    }
    for (uint64_t id : batch) out.line(id);
    left -= batch.size();
  }
  out.flush();
  return kExitOk;
}

}  // namespace idforge::cli
