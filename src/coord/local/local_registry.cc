// local:DIR: the worker ids of one host, handed out by lock files in DIR (the data dir
// when DIR is empty). A slot is held by an flock on DIR/worker-<slot>.lock for the life
// of the lease, so processes on this host always get different ids and a dead one's
// slot is free at once. DIR/identities/<identity> remembers each identity's last slot,
// which it gets back when free. Only one host may use DIR (never a network share: flock
// over NFS is not reliable, and two hosts would need a coordinator anyway).
#include "coord/local/local_registry.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "coord/local/file_high_water.h"
#include "coord/local/local_records.h"
#include "coord/local/slot_file_registry.h"
#include "core/text.h"

namespace idforge::coord {
namespace {

// The remembered slot is where a restarted identity belongs; a `worker status` probe
// can hold it for microseconds, so look twice more before moving elsewhere.
constexpr int kPreferredAttempts = 3;
// File names are at most 255 bytes; an escaped identity stays under that.
constexpr size_t kMaxEscapedIdentity = 200;

// The identity as a file name: [A-Za-z0-9._-] kept, everything else %XX, so distinct
// identities never share a file and none can climb out of the directory.
std::string escape_identity(const std::string& identity) {
  std::string out;
  for (unsigned char c : identity) {
    const bool plain = text::is_alnum(c) || c == '-' || c == '_' || (c == '.' && !out.empty());
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

class LocalRegistry final : public SlotFileRegistry {
 public:
  LocalRegistry(std::string dir, RegistryOptions options)
      : SlotFileRegistry(std::move(dir), std::move(options)),
        records_(make_local_records(this->dir(), "local:" + this->dir())) {}

  Result<Lease> acquire(const std::string& identity) override {
    if (identity.empty()) return Status::InvalidArgument("a worker identity must not be empty");
    const std::string escaped = escape_identity(identity);
    if (escaped.size() > kMaxEscapedIdentity) {
      return Status::InvalidArgument(
          fmt::format("worker identity '{}' is too long for the local registry", identity));
    }
    IDFORGE_RETURN_IF_ERROR(ensure_private_dir(dir(), "worker slot directory"));
    const std::string identity_path = dir() + "/identities/" + escaped;

    const uint64_t slots = options().space.slots();
    Result<int64_t> remembered = FileHighWaterStore(identity_path).load();  // a number file
    // An unreadable memory only costs the preference, never correctness.
    const bool has_preferred = remembered.ok() && std::filesystem::exists(identity_path) &&
                               *remembered >= 0 && static_cast<uint64_t>(*remembered) < slots;
    const uint64_t preferred = has_preferred ? static_cast<uint64_t>(*remembered) : 0;

    std::unique_ptr<Lease> lease;
    if (has_preferred) {
      IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> took,
                               try_take(preferred, identity, kPreferredAttempts, nullptr));
      lease = std::move(took);
    }
    for (uint64_t slot = 0; lease == nullptr && slot < slots; ++slot) {
      if (has_preferred && slot == preferred) continue;
      IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> took, try_take(slot, identity, 1, nullptr));
      lease = std::move(took);
    }
    if (lease == nullptr) return all_slots_taken(options().space, options().layout_name);

    if (!has_preferred || preferred != lease->slot) remember(identity_path, lease->slot);
    return *lease;
  }

  std::string describe() const override { return "local:" + dir(); }
  FleetRecords* fleet_records() override { return records_.get(); }

 private:
  std::unique_ptr<FleetRecords> records_;

  // Best effort: written with the mark store's durable replace, but a failure only
  // means the identity may get another slot next time.
  void remember(const std::string& path, uint64_t slot) {
    if (!ensure_private_dir(dir() + "/identities", "identities directory").ok()) return;
    FileHighWaterStore(path).store(static_cast<int64_t>(slot)).ignore_error();
  }
};

}  // namespace

Result<std::unique_ptr<WorkerRegistry>> open_local_registry(std::string_view target,
                                                            const RegistryOptions& options) {
  constexpr std::string_view kScheme = "local:";
  std::string dir(target.substr(kScheme.size()));
  if (dir.empty()) dir = options.data_dir;
  if (dir.empty()) {
    return Status::InvalidArgument("local: needs a directory (local:DIR) or a data dir");
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // An absolute path, so status and error messages say exactly which files are meant.
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
  if (!ec) dir = absolute.lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return std::unique_ptr<WorkerRegistry>(new LocalRegistry(std::move(dir), options));
}

}  // namespace idforge::coord
