// static:DC/WORKER (or static:WORKER, or static: with IDFORGE_DATACENTER_ID and
// IDFORGE_WORKER_ID, or static:ordinal, which reads the worker from the host name as a
// Kubernetes StatefulSet names its pods): the operator assigns the id. We still lock
// the slot's file in the data dir, so a second process on this host given the same id
// is refused rather than issuing the same IDs, and keep the slot's mark there across
// restarts. Other hosts are the operator's responsibility: that is what the
// coordinators are for.
#include "coord/local/static_registry.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "coord/local/slot_file_registry.h"
#include "core/text.h"

namespace idforge::coord {
namespace {

constexpr const char* kEnvDatacenter = "IDFORGE_DATACENTER_ID";
constexpr const char* kEnvWorker = "IDFORGE_WORKER_ID";
// Stands in for gethostname() with static:ordinal (tests, or a container whose host
// name is not its pod name).
constexpr const char* kEnvHostname = "IDFORGE_HOSTNAME";
constexpr std::string_view kOrdinal = "ordinal";
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

// What a static: URL names, and how to say where it came from.
struct StaticIds {
  uint64_t datacenter = 0;
  uint64_t worker = 0;
  std::string source;  // for describe()
  std::string origin;  // appended to a range error: " (from ...)", or empty
};

// The datacenter from IDFORGE_DATACENTER_ID, 0 when unset or empty.
Result<uint64_t> datacenter_from_env() {
  const char* datacenter = std::getenv(kEnvDatacenter);
  if (datacenter == nullptr || *datacenter == '\0') return uint64_t{0};
  return parse_id(datacenter, kEnvDatacenter);
}

// static:DC/WORKER, static:WORKER, or static: (both from the environment).
Result<StaticIds> ids_from_url(std::string_view target, std::string_view ids) {
  StaticIds out;
  out.source = std::string(target);
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
    out.source = fmt::format("static:{} (from {}/{})", from_env, kEnvDatacenter, kEnvWorker);
  }
  const size_t slash = ids.find('/');
  if (slash == std::string_view::npos) {
    IDFORGE_ASSIGN_OR_RETURN(uint64_t w, parse_id(ids, "the worker"));
    out.worker = w;
    return out;
  }
  IDFORGE_ASSIGN_OR_RETURN(uint64_t d, parse_id(ids.substr(0, slash), "the datacenter"));
  IDFORGE_ASSIGN_OR_RETURN(uint64_t w, parse_id(ids.substr(slash + 1), "the worker"));
  out.datacenter = d;
  out.worker = w;
  return out;
}

// static:ordinal: the worker is the N that ends the host name's first label, as a
// StatefulSet names its pods (idforge-0, idforge-1, ...); the datacenter comes from
// IDFORGE_DATACENTER_ID. Only a plain N is taken: leading zeros or a number past 64 bits
// mean the name is not a pod ordinal, and guessing would hand two pods one id.
Result<StaticIds> ids_from_host_name() {
  std::string host;
  const char* forced = std::getenv(kEnvHostname);
  if (forced != nullptr && *forced != '\0') {
    host = forced;
  } else {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof(buffer) - 1) != 0) {
      return Status::IoError(
          fmt::format("static:ordinal: cannot read the host name: {}", std::strerror(errno)));
    }
    host = buffer;
  }
  const std::string_view label = std::string_view(host).substr(0, host.find('.'));
  const size_t dash = label.rfind('-');
  const std::string_view digits =
      dash == std::string_view::npos ? std::string_view() : label.substr(dash + 1);
  const auto refuse = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "static:ordinal: host name '{}' {}; the worker id is the number after the last '-' of "
        "the host name's first label, written without leading zeros, as a StatefulSet names "
        "its pods (idforge-0, idforge-7){}",
        host, why,
        forced != nullptr && *forced != '\0' ? fmt::format(" (read from {})", kEnvHostname)
                                             : std::string()));
  };
  const bool all_digits =
      !digits.empty() && std::all_of(digits.begin(), digits.end(), text::is_digit);
  if (!all_digits) return refuse("does not end in -N");
  if (digits.size() > 1 && digits.front() == '0')
    return refuse("has an ordinal with leading zeros");
  uint64_t worker = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), worker);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return refuse("has an ordinal too large for a 64-bit number");
  }
  IDFORGE_ASSIGN_OR_RETURN(uint64_t datacenter, datacenter_from_env());
  StaticIds out;
  out.datacenter = datacenter;
  out.worker = worker;
  out.source =
      fmt::format("static:ordinal (host name {}, datacenter from {})", host, kEnvDatacenter);
  out.origin =
      fmt::format(" (worker from host name '{}', datacenter from {})", host, kEnvDatacenter);
  return out;
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
    IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease,
                             try_take(slot_, identity, kLockAttempts, &holder));
    if (lease == nullptr) {
      const SlotSpace& space = options().space;
      return Status::Unavailable(fmt::format(
          "static worker id datacenter {} / worker {} (slot {}) is already in use by {} on this "
          "host (lock file {}); two processes with one worker id would issue the same IDs",
          space.datacenter_of(slot_), space.worker_of(slot_), slot_, holder.describe(),
          slot_lock_path(dir(), slot_)));
    }
    return *lease;
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
  IDFORGE_ASSIGN_OR_RETURN(StaticIds parsed,
                           target.substr(kScheme.size()) == kOrdinal
                               ? ids_from_host_name()
                               : ids_from_url(target, target.substr(kScheme.size())));
  const StaticIds& ids = parsed;

  const SlotSpace& space = options.space;
  const uint64_t max_dc = (uint64_t{1} << space.datacenter_bits) - 1;
  const uint64_t max_worker = (uint64_t{1} << space.worker_bits) - 1;
  if (ids.datacenter > max_dc) {
    return Status::OutOfRange(
        space.datacenter_bits == 0
            ? fmt::format("static worker id: layout {} has no datacenter field, so the "
                          "datacenter must be 0, got {}{}",
                          options.layout_name, ids.datacenter, ids.origin)
            : fmt::format("static worker id: datacenter {} does not fit the {} datacenter bits of "
                          "layout {} (0..{}){}",
                          ids.datacenter, space.datacenter_bits, options.layout_name, max_dc,
                          ids.origin));
  }
  if (ids.worker > max_worker) {
    return Status::OutOfRange(
        fmt::format("static worker id: worker {} does not fit the {} worker bits of layout {} "
                    "(0..{}){}",
                    ids.worker, space.worker_bits, options.layout_name, max_worker, ids.origin));
  }
  if (options.data_dir.empty()) {
    return Status::InvalidArgument(
        "a static worker id needs a data dir for its high-water mark and lock file");
  }
  const uint64_t slot = (ids.datacenter << space.worker_bits) | ids.worker;
  return std::unique_ptr<WorkerRegistry>(
      new StaticRegistry(options.data_dir, options, slot, ids.source));
}

}  // namespace idforge::coord
