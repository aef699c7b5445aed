#include "coord/local/slot_file_registry.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

namespace idforge::coord {
namespace {

// "worker-12.lock" -> 12.
bool slot_of_lock_name(std::string_view name, uint64_t* slot) {
  constexpr std::string_view kPrefix = "worker-";
  constexpr std::string_view kSuffix = ".lock";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return false;
  }
  const std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *slot);
  return ec == std::errc() && p == digits.data() + digits.size();
}

}  // namespace

Result<std::unique_ptr<Lease>> SlotFileRegistry::try_take(uint64_t slot,
                                                          const std::string& identity, int attempts,
                                                          SlotHolder* holder) {
  const std::string lock_path = slot_lock_path(dir_, slot);
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SlotLock> lock,
                           SlotLock::try_lock(lock_path, identity, attempts, holder));
  if (lock == nullptr) return std::unique_ptr<Lease>();

  auto mark = std::make_unique<FileHighWaterStore>(slot_mark_path(dir_, slot));
  Result<HighWaterMark> stored = mark->load_mark();
  if (!stored.ok()) return stored.status();  // the lock goes with `lock`

  auto lease = std::make_unique<Lease>();
  lease->slot = slot;
  lease->datacenter = options_.space.datacenter_of(slot);
  lease->worker = options_.space.worker_of(slot);
  lease->high_water_ms = stored->unix_ms;
  lease->high_water_layout = stored->layout;
  lease->ttl_ms = options_.ttl_ms;
  lease->start_delay_ms = 0;  // a live holder keeps the flock; there is no one to wait out

  MutexLock guard(mu_);
  lease->token = fmt::format("{}-{}-{}", ::getpid(), slot, next_token_++);
  held_[lease->token] = Held{std::move(lock), std::move(mark), stored->unix_ms, stored->layout};
  return lease;
}

Status SlotFileRegistry::renew(const Lease& lease, int64_t high_water_ms) {
  MutexLock guard(mu_);
  auto it = held_.find(lease.token);
  if (it == held_.end()) {
    return Status::LeaseLost(
        fmt::format("worker lease for slot {} lost: this process no longer holds it", lease.slot));
  }
  Held& held = it->second;
  if (!held.lock->still_linked()) {
    const std::string path = held.lock->path();
    held_.erase(it);
    return Status::LeaseLost(
        fmt::format("worker lease for slot {} lost: its lock file {} was removed or replaced",
                    lease.slot, path));
  }
  // The time never goes down; the layout is the writer's (a generator writes a new one
  // only after starting above every ID of the old).
  const std::string& layout =
      lease.high_water_layout.empty() ? held.stored_layout : lease.high_water_layout;
  if (high_water_ms > held.stored_ms || layout != held.stored_layout) {
    const int64_t mark = std::max(high_water_ms, held.stored_ms);
    IDFORGE_RETURN_IF_ERROR(held.mark->store_mark({mark, layout}));
    held.stored_ms = mark;
    held.stored_layout = layout;
  }
  return Status::Ok();
}

Status SlotFileRegistry::release(const Lease& lease) {
  MutexLock guard(mu_);
  held_.erase(lease.token);  // closing the lock file drops the flock
  return Status::Ok();
}

Result<std::vector<SlotStatus>> SlotFileRegistry::status() {
  namespace fs = std::filesystem;
  std::vector<SlotStatus> taken;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return taken;  // nothing ever taken
    return Status::IoError(fmt::format("cannot list {}: {}", dir_, ec.message()));
  }
  for (const fs::directory_entry& entry : it) {
    uint64_t slot = 0;
    if (!slot_of_lock_name(entry.path().filename().string(), &slot)) continue;
    SlotHolder holder;
    IDFORGE_ASSIGN_OR_RETURN(bool held, slot_held(entry.path().string(), &holder));
    if (!held) continue;
    SlotStatus s;
    s.slot = slot;
    s.holder = holder.identity.empty() ? "unknown" : holder.identity;
    FileHighWaterStore mark(slot_mark_path(dir_, slot));
    // A damaged mark file should not hide the slot from an operator.
    s.high_water_ms = mark.load().value_or(-1);
    s.expires_in_ms = -1;
    taken.push_back(std::move(s));
  }
  std::sort(taken.begin(), taken.end(),
            [](const SlotStatus& a, const SlotStatus& b) { return a.slot < b.slot; });
  return taken;
}

Status SlotFileRegistry::force_release(uint64_t slot) {
  {
    // Held by this very object: an ordinary release.
    MutexLock guard(mu_);
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it->second.lock->path() == slot_lock_path(dir_, slot)) {
        held_.erase(it);
        return Status::Ok();
      }
    }
  }
  const std::string path = slot_lock_path(dir_, slot);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(fmt::format("worker slot {} is not taken (no {})", slot, path));
  }
  SlotHolder holder;
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SlotLock> lock,
                           SlotLock::try_lock(path, "force-release", 1, &holder));
  if (lock == nullptr) {
    return Status::Unavailable(fmt::format(
        "worker slot {} is held by {}, a live process on this host; its flock cannot be broken "
        "from outside: stop that process and the slot is free the moment it exits",
        slot, holder.describe()));
  }
  // Stale: nobody holds it. The mark file stays: the slot's next holder must start
  // above every ID issued with it.
  return lock->unlink_and_unlock();
}

}  // namespace idforge::coord
