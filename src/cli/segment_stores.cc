#include "cli/segment_stores.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "idforge/segment_buffer.h"
#include "idforge/striped_source.h"
#include "store/store_factory.h"

namespace idforge::cli {
namespace {

namespace fs = std::filesystem;

// IDs taken from the buffer per call: large enough that the call overhead vanishes,
// small enough to stay in cache.
constexpr size_t kBatch = 1 << 14;
// Longest a one-shot run waits for a segment: SQLite alone may wait 5 s for a lock.
constexpr int64_t kWaitMs = 15'000;
constexpr uint64_t kMaxDynamicStep = 1'000'000;

// Stands in for a store that could not be opened, so the striped source keeps every
// store at its own position: dropping one would shift the others' residues and let
// two stores hand out the same ID.
class UnreachableSource final : public RangeSource {
 public:
  explicit UnreachableSource(Status why) : why_(std::move(why)) {}
  Result<Segment> allocate(std::string_view, uint64_t) override {
    return Status::Unavailable(why_.message());
  }

 private:
  Status why_;
};

Status ensure_data_dir(const std::string& data_dir) {
  if (data_dir.empty()) return Status::InvalidArgument("--data-dir is empty");
  const fs::path dir(data_dir);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return Status::Ok();
  if (fs::exists(dir, ec)) {
    return Status::InvalidArgument(
        fmt::format("--data-dir '{}' exists and is not a directory", data_dir));
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return Status::IoError(
        fmt::format("cannot create data directory '{}': {}", data_dir, ec.message()));
  }
  // It will hold lock files and the ID store: nobody else needs to read or touch it.
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) {
    return Status::IoError(fmt::format("cannot restrict data directory '{}' to its owner: {}",
                                       data_dir, ec.message()));
  }
  return Status::Ok();
}

// With several stores an error says which one it comes from.
Status from_store(const Status& status, const OpenedStore& opened, size_t stores) {
  if (stores == 1 || status.message().find(opened.url) != std::string::npos) return status;
  return Status(status.code(), fmt::format("{}: {}", opened.url, status.message()));
}

}  // namespace

void add_store_flags(CLI::App& cmd, StoreFlags& flags) {
  cmd.add_option("--store", flags.urls,
                 "Segment store: sqlite:PATH, postgres://USER@HOST:PORT/DB or redis://HOST:PORT; "
                 "repeat to stripe a tag over several (always the same stores, same order)")
      ->type_name("URL")
      ->allow_extra_args(false);
  cmd.add_option("--data-dir", flags.data_dir,
                 "Local state directory (created 0700); the default store is "
                 "sqlite:DIR/segments.db")
      ->type_name("DIR")
      ->default_str(kDefaultDataDir);
}

bool store_flags_given(const CLI::App& cmd) {
  return cmd.count("--store") > 0 || cmd.count("--data-dir") > 0;
}

Result<std::vector<OpenedStore>> open_stores(const StoreFlags& flags) {
  std::vector<std::string> urls = flags.urls;
  if (urls.empty()) {
    IDFORGE_RETURN_IF_ERROR(ensure_data_dir(flags.data_dir));
    urls.push_back("sqlite:" + (fs::path(flags.data_dir) / "segments.db").string());
  }
  for (size_t i = 0; i < urls.size(); ++i) {
    if (std::find(urls.begin(), urls.begin() + static_cast<ptrdiff_t>(i), urls[i]) !=
        urls.begin() + static_cast<ptrdiff_t>(i)) {
      return Status::InvalidArgument(fmt::format("--store '{}' is given twice", urls[i]));
    }
  }

  std::vector<OpenedStore> stores;
  for (const std::string& url : urls) {
    Result<std::unique_ptr<SegmentStore>> store = store::open_store(url);
    OpenedStore opened;
    opened.url = url;
    if (store.ok()) {
      opened.store = std::move(store).value();
    } else if (store.status().code() == StatusCode::kInvalidArgument) {
      return store.status();  // a malformed URL is the user's to fix, not an outage
    } else {
      opened.error = store.status();
    }
    stores.push_back(std::move(opened));
  }
  return stores;
}

int print_segment_ids(const StoreFlags& flags, const std::string& tag, uint64_t count) {
  if (Status valid = validate_tag_name(tag); !valid.ok()) return fail(valid);
  Result<std::vector<OpenedStore>> opened = open_stores(flags);
  if (!opened.ok()) return fail(opened.status());
  const size_t k = opened->size();

  // With one store any failure ends the run. With several, the run goes on as long as
  // one store answers; a tag missing from any store that answers is still an error,
  // since its share of the IDs would be missing too.
  std::vector<std::unique_ptr<RangeSource>> placeholders;
  std::vector<RangeSource*> sources;
  uint64_t step = 0;
  std::string down;
  for (OpenedStore& o : *opened) {
    Status why = o.error;
    if (o.store) {
      Result<TagInfo> info = o.store->get_tag(tag);
      if (info.ok()) {
        step = std::max(step, info->step);
        sources.push_back(o.store.get());
        continue;
      }
      why = info.status();
      if (k == 1 || why.code() == StatusCode::kNotFound ||
          why.code() == StatusCode::kInvalidArgument) {
        return fail(from_store(why, o, k));
      }
    }
    if (k == 1) return fail(why);
    down += fmt::format("{}{}", down.empty() ? "" : "; ", from_store(why, o, k).message());
    placeholders.push_back(std::make_unique<UnreachableSource>(from_store(why, o, k)));
    sources.push_back(placeholders.back().get());
  }
  if (step == 0) return fail(Status::Unavailable("no store could be reached: " + down));
  if (!down.empty()) print_error(fmt::format("warning: continuing without {}", down));

  std::unique_ptr<StripedSource> striped;
  RangeSource* source = sources.front();
  if (k > 1) {
    striped = std::make_unique<StripedSource>(sources);
    source = striped.get();
  }

  SegmentBufferOptions options;
  options.tag = tag;
  options.min_step = step;
  // A one-shot run never needs a segment larger than what it prints; a larger one
  // would only leave a bigger gap behind.
  options.max_step = std::max(step, std::min(count, kMaxDynamicStep));
  options.wait_ms = kWaitMs;
  auto buffer = SegmentBuffer::create(source, options);
  if (!buffer.ok()) return fail(buffer.status());

  std::vector<uint64_t> ids(std::min<uint64_t>(count, kBatch));
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
