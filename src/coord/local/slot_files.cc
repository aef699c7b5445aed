#include "coord/local/slot_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <thread>

#include "core/text.h"
#include "store/durable_file.h"

namespace idforge::coord {
namespace {

constexpr int kRetryPauseMs = 2;
// A lock file found replaced after locking: try again this many times before giving up.
constexpr int kRelockAttempts = 8;

int open_lock_file(const std::string& path, bool create) {
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0600);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

bool lock_nb(int fd) {
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

// The file `fd` refers to is the one at `path` now.
bool same_file(int fd, const std::string& path) {
  struct stat by_fd {};
  struct stat by_path {};
  if (::fstat(fd, &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0) return false;
  return by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino && by_fd.st_nlink > 0;
}

SlotHolder read_holder(int fd) {
  SlotHolder holder;
  char buf[512];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return holder;
  std::string_view text(buf, static_cast<size_t>(n));
  const size_t nl = text.find('\n');
  holder.identity = std::string(text.substr(0, nl));
  if (nl != std::string_view::npos) {
    std::string_view rest = text.substr(nl + 1);
    rest = rest.substr(0, rest.find('\n'));
    int64_t pid = 0;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec == std::errc() && p == rest.data() + rest.size()) holder.pid = pid;
  }
  return holder;
}

Status write_holder(int fd, const std::string& identity, const std::string& path) {
  const std::string text = fmt::format("{}\n{}\n", identity, ::getpid());
  if (::ftruncate(fd, 0) != 0)
    return Status::IoError(fmt::format("truncate {}: {}", path, text::errno_text()));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("write {}: {}", path, text::errno_text()));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

std::string slot_lock_path(const std::string& dir, uint64_t slot) {
  return fmt::format("{}/worker-{}.lock", dir, slot);
}

std::string slot_mark_path(const std::string& dir, uint64_t slot) {
  return fmt::format("{}/worker-{}.mark", dir, slot);
}

Status ensure_private_dir(const std::string& dir, const std::string& what) {
  // Mode 0700 for what we create (lock files name the hosts' identities; nobody else
  // needs to read or touch them), each new directory fsynced into its parent; a
  // directory someone else made keeps its mode. Safe beside another process doing the
  // same at the same moment.
  return store::make_dirs_durably(dir, what);
}

std::string SlotHolder::describe() const {
  if (identity.empty()) return "another process";
  if (pid > 0) return fmt::format("{} (pid {})", identity, pid);
  return identity;
}

SlotLock::~SlotLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<SlotLock>> SlotLock::try_lock(const std::string& path,
                                                     const std::string& identity, int attempts,
                                                     SlotHolder* holder) {
  int busy_left = attempts < 1 ? 1 : attempts;
  int replaced_left = kRelockAttempts;
  while (true) {
    const int fd = open_lock_file(path, /*create=*/true);
    if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path, text::errno_text()));
    if (!lock_nb(fd)) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        return Status::IoError(fmt::format("flock {}: {}", path, std::strerror(err)));
      }
      if (--busy_left > 0) {
        ::close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(kRetryPauseMs));
        continue;
      }
      if (holder != nullptr) *holder = read_holder(fd);
      ::close(fd);
      return std::unique_ptr<SlotLock>();
    }
    // Someone freeing a stale slot may have removed the file between our open and our
    // lock; a lock on a removed file protects nothing.
    if (!same_file(fd, path)) {
      ::close(fd);
      if (--replaced_left == 0) {
        return Status::IoError(fmt::format("{} keeps being replaced while we lock it", path));
      }
      continue;
    }
    Status st = write_holder(fd, identity, path);
    if (!st.ok()) {
      ::close(fd);
      return st;
    }
    return std::unique_ptr<SlotLock>(new SlotLock(fd, path));
  }
}

bool SlotLock::still_linked() const { return same_file(fd_, path_); }

Status SlotLock::unlink_and_unlock() {
  Status st;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    st = Status::IoError(fmt::format("remove {}: {}", path_, text::errno_text()));
  }
  ::close(fd_);
  fd_ = -1;
  return st;
}

Result<bool> slot_held(const std::string& path, SlotHolder* holder) {
  const int fd = open_lock_file(path, /*create=*/false);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return Status::IoError(fmt::format("open {}: {}", path, text::errno_text()));
  }
  bool held = false;
  if (!lock_nb(fd)) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      return Status::IoError(fmt::format("flock {}: {}", path, std::strerror(err)));
    }
    held = true;
    if (holder != nullptr) *holder = read_holder(fd);
  }
  ::close(fd);  // also drops our momentary lock on a free file
  return held;
}

}  // namespace idforge::coord
