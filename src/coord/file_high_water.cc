#include "coord/file_high_water.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace idforge::coord {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("write {}: {}", path, errno_text()));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> FileHighWaterStore::load() {
  std::lock_guard lock(mu_);
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return int64_t{0};
    return Status::IoError(fmt::format("open {}: {}", path_, errno_text()));
  }
  char buf[64];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  int saved = errno;
  ::close(fd);
  if (n < 0) return Status::IoError(fmt::format("read {}: {}", path_, std::strerror(saved)));

  std::string_view text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (text.empty() || text.size() > 19) {
    return Status::IoError(fmt::format("{} does not hold a high-water mark", path_));
  }
  int64_t mark = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Status::IoError(fmt::format("{} does not hold a high-water mark", path_));
    }
    mark = mark * 10 + (c - '0');
  }
  return mark;
}

Status FileHighWaterStore::store(int64_t unix_ms) {
  if (unix_ms < 0) return Status::InvalidArgument("a high-water mark is never negative");
  std::lock_guard lock(mu_);
  std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", tmp, errno_text()));
  Status st = write_all(fd, fmt::format("{}\n", unix_ms), tmp);
  if (st.ok() && ::fsync(fd) != 0)
    st = Status::IoError(fmt::format("fsync {}: {}", tmp, errno_text()));
  ::close(fd);
  if (!st.ok()) return st;
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    return Status::IoError(fmt::format("rename {} -> {}: {}", tmp, path_, errno_text()));
  }
  // The rename is durable only once the directory entry is.
  int dfd = ::open(dir_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int rc = ::fsync(dfd);
    ::close(dfd);
    if (rc != 0) return Status::IoError(fmt::format("fsync dir of {}: {}", path_, errno_text()));
  }
  return Status::Ok();
}

}  // namespace idforge::coord
