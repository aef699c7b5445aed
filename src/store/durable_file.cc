#include "store/durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "core/text.h"

namespace idforge::store {

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status sync_dir(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return Status::IoError(fmt::format("open directory {}: {}", dir, text::errno_text()));
  const int rc = ::fsync(dfd);
  const std::string why = rc != 0 ? text::errno_text() : std::string();
  ::close(dfd);
  if (rc != 0) return Status::IoError(fmt::format("fsync directory {}: {}", dir, why));
  return Status::Ok();
}

Status write_file_durably(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", tmp, text::errno_text()));
  Status st = Status::Ok();
  while (st.ok() && !text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Status::IoError(fmt::format("write {}: {}", tmp, text::errno_text()));
      break;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  if (st.ok() && ::fsync(fd) != 0) {
    st = Status::IoError(fmt::format("fsync {}: {}", tmp, text::errno_text()));
  }
  ::close(fd);
  if (!st.ok()) return st;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(fmt::format("rename {} -> {}: {}", tmp, path, text::errno_text()));
  }
  // The rename is durable only once the directory entry is.
  return sync_dir(parent_dir(path));
}

Status make_dirs_durably(const std::string& dir, std::string_view what) {
  namespace fs = std::filesystem;
  if (dir.empty()) return Status::InvalidArgument(fmt::format("{} is empty", what));
  // The missing directories, outermost first.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.insert(missing.begin(), p);
    if (p == p.parent_path()) break;
  }
  for (const fs::path& p : missing) {
    // Another process may create it between our look and our mkdir: that is fine.
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IoError(
          fmt::format("cannot create {} '{}': {}", what, p.string(), text::errno_text()));
    }
    const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
    IDFORGE_RETURN_IF_ERROR(sync_dir(parent.empty() ? "." : parent.string()));
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::InvalidArgument(fmt::format("{} '{}' is not a directory", what, dir));
  }
  return Status::Ok();
}

LockFile::~LockFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status LockFile::with_lock(const std::function<Status()>& fn, bool shared) {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return Status::IoError(fmt::format("open {}: {}", path_, text::errno_text()));
  }
  while (::flock(fd_, shared ? LOCK_SH : LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Status::IoError(fmt::format("lock {}: {}", path_, text::errno_text()));
    }
  }
  Status st = fn();
  ::flock(fd_, LOCK_UN);
  return st;
}

}  // namespace idforge::store
