// static:DC/WORKER (or static:WORKER, or static: with IDFORGE_DATACENTER_ID and
// IDFORGE_WORKER_ID): the operator assigns the id. We still lock the slot's file in
// the data dir, so a second process on this host given the same id is refused rather
// than issuing the same IDs, and keep the slot's mark there across restarts. Other
// hosts are the operator's responsibility: that is what the coordinators are for.
#include "coord/static_registry.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string>

#include "coord/slot_file_registry.h"

namespace idforge::coord {
namespace {

constexpr const char* kEnvDatacenter = "IDFORGE_DATACENTER_ID";
constexpr const char* kEnvWorker = "IDFORGE_WORKER_ID";
// A `worker status` probe holds a free slot's lock for microseconds; a static id has
// nowhere else to go, so it looks a few times before calling the id taken.
constexpr int kLockAttempts = 5;

Result<uint64_t> parse_id(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
    return Status::InvalidArgument(fmt::format(
        "static worker id: {} must be a non-negative whole number, got '{}'", what, text));
  }
  return v;
}

class StaticRegistry final : public SlotFileRegistry {
 public:
  StaticRegistry(std::string dir, RegistryOptions options, uint64_t slot, std::string source)
      : SlotFileRegistry(std::move(dir), std::move(options)),
        slot_(slot),
        source_(std::move(source)) {}

  Result<Lease> acquire(const std::string& identity) override {
    IDFORGE_RETURN_IF_ERROR(ensure_private_dir(dir(), "data directory"));
    SlotHolder holder;
    Result<std::unique_ptr<Lease>> lease = try_take(slot_, identity, kLockAttempts, &holder);
    if (!lease.ok()) return lease.status();
    if (*lease == nullptr) {
      const SlotSpace& space = options().space;
      return Status::Unavailable(fmt::format(
          "static worker id datacenter {} / worker {} (slot {}) is already in use by {} on this "
          "host (lock file {}); two processes with one worker id would issue the same IDs",
          space.datacenter_of(slot_), space.worker_of(slot_), slot_, holder.describe(),
          slot_lock_path(dir(), slot_)));
    }
    return **lease;
  }

  std::string describe() const override {
    return fmt::format("{} (datacenter {}, worker {}; marks and locks in {})", source_,
                       options().space.datacenter_of(slot_), options().space.worker_of(slot_),
                       dir());
  }

 private:
  const uint64_t slot_;
  const std::string source_;
};

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_static_registry(std::string_view target,
                                                             const RegistryOptions& options) {
  constexpr std::string_view kScheme = "static:";
  std::string_view ids = target.substr(kScheme.size());
  std::string source(target);
  std::string from_env;
  if (ids.empty()) {
    const char* worker = std::getenv(kEnvWorker);
    const char* datacenter = std::getenv(kEnvDatacenter);
    if (worker == nullptr || *worker == '\0') {
      return Status::InvalidArgument(fmt::format(
          "static: without ids needs {} (and {} when the layout has a datacenter field) in the "
          "environment, or give them as static:DC/WORKER",
          kEnvWorker, kEnvDatacenter));
    }
    from_env =
        fmt::format("{}/{}", datacenter != nullptr && *datacenter ? datacenter : "0", worker);
    ids = from_env;
    source = fmt::format("static:{} (from {}/{})", from_env, kEnvDatacenter, kEnvWorker);
  }

  const size_t slash = ids.find('/');
  uint64_t datacenter = 0;
  uint64_t worker = 0;
  if (slash == std::string_view::npos) {
    Result<uint64_t> w = parse_id(ids, "the worker");
    if (!w.ok()) return w.status();
    worker = *w;
  } else {
    Result<uint64_t> d = parse_id(ids.substr(0, slash), "the datacenter");
    if (!d.ok()) return d.status();
    Result<uint64_t> w = parse_id(ids.substr(slash + 1), "the worker");
    if (!w.ok()) return w.status();
    datacenter = *d;
    worker = *w;
  }

  const SlotSpace& space = options.space;
  const uint64_t max_dc = (uint64_t{1} << space.datacenter_bits) - 1;
  const uint64_t max_worker = (uint64_t{1} << space.worker_bits) - 1;
  if (datacenter > max_dc) {
    return Status::OutOfRange(
        space.datacenter_bits == 0
            ? fmt::format("static worker id: layout {} has no datacenter field, so the "
                          "datacenter must be 0, got {}",
                          options.layout_name, datacenter)
            : fmt::format("static worker id: datacenter {} does not fit the {} datacenter bits of "
                          "layout {} (0..{})",
                          datacenter, space.datacenter_bits, options.layout_name, max_dc));
  }
  if (worker > max_worker) {
    return Status::OutOfRange(fmt::format(
        "static worker id: worker {} does not fit the {} worker bits of layout {} (0..{})", worker,
        space.worker_bits, options.layout_name, max_worker));
  }
  if (options.data_dir.empty()) {
    return Status::InvalidArgument(
        "a static worker id needs a data dir for its high-water mark and lock file");
  }
  const uint64_t slot = (datacenter << space.worker_bits) | worker;
  return std::unique_ptr<WorkerRegistry>(
      new StaticRegistry(options.data_dir, options, slot, std::move(source)));
}

}  // namespace idforge::coord
