#include "store/store_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <system_error>
#include <utility>

#include "store/durable_file.h"
#include "store/store_factory.h"

namespace idforge::store {
namespace {

namespace fs = std::filesystem;

// Stands in for a store that could not be reached, so the striped source keeps every
// store at its own position.
class UnreachableSource final : public RangeSource {
 public:
  explicit UnreachableSource(Status why) : why_(std::move(why)) {}
  Result<Segment> allocate(std::string_view, uint64_t) override {
    return Status::Unavailable(why_.message());
  }

 private:
  Status why_;
};

}  // namespace

Status ensure_data_dir(const std::string& data_dir) {
  if (data_dir.empty()) return Status::InvalidArgument("--data-dir is empty");
  std::error_code ec;
  if (fs::exists(data_dir, ec) && !fs::is_directory(data_dir, ec)) {
    return Status::InvalidArgument(
        fmt::format("--data-dir '{}' exists and is not a directory", data_dir));
  }
  // Mode 0700 (it will hold lock files and the ID store: nobody else needs to read or
  // touch it), and each new directory fsynced into its parent, so a crash cannot take
  // the directory away with the marks written into it.
  return make_dirs_durably(data_dir, "data directory");
}

std::string served_marks_path(const std::string& data_dir) {
  return (fs::path(data_dir) / "segments-served").string();
}

Result<std::vector<OpenedStore>> open_stores(const std::vector<std::string>& given,
                                             const std::string& data_dir,
                                             const StoreSafety& safety) {
  std::vector<std::string> urls = given;
  if (urls.empty()) {
    IDFORGE_RETURN_IF_ERROR(ensure_data_dir(data_dir));
    urls.push_back(sqlite_url((fs::path(data_dir) / "segments.db").string()));
  }
  for (size_t i = 0; i < urls.size(); ++i) {
    if (std::find(urls.begin(), urls.begin() + static_cast<ptrdiff_t>(i), urls[i]) !=
        urls.begin() + static_cast<ptrdiff_t>(i)) {
      return Status::InvalidArgument(fmt::format("--store '{}' is given twice", urls[i]));
    }
  }

  std::vector<OpenedStore> stores;
  for (const std::string& url : urls) {
    Result<std::unique_ptr<SegmentStore>> store = open_store(url);
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
  if (safety.marks == nullptr) return stores;

  GuardSettings settings;
  settings.marks = safety.marks;
  settings.fleet = safety.fleet;
  settings.margin = safety.margin != 0 ? safety.margin : default_failover_margin(safety.max_step);
  settings.allow_unsafe = safety.allow_unsafe;
  settings.log = safety.log;
  const auto count = static_cast<uint32_t>(stores.size());
  for (uint32_t i = 0; i < count; ++i) {
    OpenedStore& o = stores[i];
    if (!o.store) continue;
    o.guard = std::make_unique<StoreGuard>(o.store.get(), i, count, settings);
    Status checked = o.guard->check();
    // A wrong place or an unsafe store is the operator's to fix; a store that does not
    // answer now is checked again before its first range.
    if (checked.code() == StatusCode::kInvalidArgument) {
      return from_store(checked, o, stores.size());
    }
  }
  return stores;
}

Status record_new_store_identity(SegmentStore& store) {
  Result<StoreIdentity> id = store.identity();
  if (!id.ok() || id->current.empty() || !id->recorded.empty()) return id.status();
  IDFORGE_ASSIGN_OR_RETURN(std::vector<TagInfo> tags, store.list_tags());
  if (!tags.empty()) return Status::Ok();  // a store in use: the guard decides
  IdentityChange fresh;
  fresh.adopt = kNewStorePrefix + id->current;
  return store.adopt_identity(fresh).status();
}

Status from_store(const Status& status, const OpenedStore& opened, size_t stores) {
  if (stores == 1 || status.message().find(opened.url) != std::string::npos) return status;
  return Status(status.code(), fmt::format("{}: {}", opened.url, status.message()));
}

Result<TagSource> tag_source(std::vector<OpenedStore>& stores, const std::string& tag,
                             StripedSource::KnownDown known_down) {
  IDFORGE_RETURN_IF_ERROR(validate_tag_name(tag));
  const size_t k = stores.size();
  if (k == 0) return Status::InvalidArgument("no segment store configured");
  TagSource out;
  std::vector<RangeSource*> sources;
  for (OpenedStore& o : stores) {
    Status why = o.error;
    if (o.store) {
      Result<TagInfo> info = o.store->get_tag(tag);
      if (info.ok()) {
        out.step = std::max(out.step, info->step);
        if (out.serial_template.empty()) out.serial_template = info->serial_template;
        sources.push_back(o.guard ? static_cast<RangeSource*>(o.guard.get()) : o.store.get());
        continue;
      }
      why = info.status();
      if (k == 1 || why.code() == StatusCode::kNotFound ||
          why.code() == StatusCode::kInvalidArgument) {
        return from_store(why, o, k);
      }
    }
    if (k == 1) return why;
    const Status located = from_store(why, o, k);
    out.down += fmt::format("{}{}", out.down.empty() ? "" : "; ", located.message());
    out.placeholders.push_back(std::make_unique<UnreachableSource>(located));
    sources.push_back(out.placeholders.back().get());
  }
  if (out.step == 0) return Status::Unavailable("no store could be reached: " + out.down);
  out.source = sources.front();
  if (k > 1) {
    out.striped = std::make_unique<StripedSource>(sources, std::move(known_down));
    out.source = out.striped.get();
  }
  return out;
}

}  // namespace idforge::store
