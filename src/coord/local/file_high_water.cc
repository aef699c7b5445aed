#include "coord/local/file_high_water.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "core/text.h"

namespace idforge::coord {
namespace {

constexpr std::string_view kLayoutPrefix = "layout ";
// A mark with the longest layout is well under this; more is not our file.
constexpr size_t kMaxFileBytes = 4096;

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
      return Status::IoError(fmt::format("write {}: {}", path, text::errno_text()));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// A layout key as marks write it: printable, no spaces.
bool plain_text(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace

FileHighWaterStore::FileHighWaterStore(std::string path, SyncFn sync)
    : path_(std::move(path)), sync_(sync != nullptr ? sync : &::fsync) {}

Result<int64_t> FileHighWaterStore::load() {
  IDFORGE_ASSIGN_OR_RETURN(HighWaterMark mark, load_mark());
  return mark.unix_ms;
}

Status FileHighWaterStore::store(int64_t unix_ms) { return store_mark({unix_ms, {}}); }

Result<HighWaterMark> FileHighWaterStore::load_mark() {
  MutexLock lock(mu_);
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return HighWaterMark{};
    return Status::IoError(fmt::format("open {}: {}", path_, text::errno_text()));
  }
  std::string buf(kMaxFileBytes + 1, '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      ::close(fd);
      return Status::IoError(fmt::format("read {}: {}", path_, std::strerror(saved)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  const auto bad = [&](std::string_view why) {
    return Status::IoError(fmt::format("{} does not hold a high-water mark: {}", path_, why));
  };
  if (got > kMaxFileBytes) return bad("it is too long");

  std::string_view text(buf.data(), got);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const size_t nl = text.find('\n');
  std::string_view number = text.substr(0, nl);
  if (!number.empty() && number.back() == '\r') number.remove_suffix(1);
  HighWaterMark mark;
  // Digits only (no sign, no space) and within int64: a 19- or 20-digit value that
  // overflows is damage, not a time.
  const bool digits = !number.empty() && number.find_first_not_of("0123456789") == number.npos;
  const auto [end, ec] =
      std::from_chars(number.data(), number.data() + number.size(), mark.unix_ms);
  if (!digits || ec != std::errc() || end != number.data() + number.size()) {
    return bad(fmt::format("'{}' is not a time in Unix ms", number.substr(0, 40)));
  }
  if (nl != std::string_view::npos) {
    std::string_view line = text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with(kLayoutPrefix) || !plain_text(line.substr(kLayoutPrefix.size()))) {
      return bad(fmt::format("'{}' after the time is not 'layout ...'", line.substr(0, 40)));
    }
    mark.layout = std::string(line.substr(kLayoutPrefix.size()));
  }
  return mark;
}

Status FileHighWaterStore::store_mark(const HighWaterMark& mark) {
  if (mark.unix_ms < 0) return Status::InvalidArgument("a high-water mark is never negative");
  if (!mark.layout.empty() && !plain_text(mark.layout)) {
    return Status::InvalidArgument("a mark's layout is printable text without spaces");
  }
  MutexLock lock(mu_);
  std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", tmp, text::errno_text()));
  const std::string text =
      mark.layout.empty() ? fmt::format("{}\n", mark.unix_ms)
                          : fmt::format("{}\n{}{}\n", mark.unix_ms, kLayoutPrefix, mark.layout);
  Status st = write_all(fd, text, tmp);
  if (st.ok() && sync_(fd) != 0)
    st = Status::IoError(fmt::format("fsync {}: {}", tmp, text::errno_text()));
  ::close(fd);
  if (!st.ok()) return st;
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    return Status::IoError(fmt::format("rename {} -> {}: {}", tmp, path_, text::errno_text()));
  }
  // The rename is durable only once the directory entry is: a directory we cannot open
  // or sync leaves the new mark possibly undone by a crash, so that is an error too.
  const std::string dir = dir_of(path_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return Status::IoError(fmt::format("open directory {}: {}", dir, text::errno_text()));
  int rc = sync_(dfd);
  const int saved = errno;
  ::close(dfd);
  if (rc != 0) {
    return Status::IoError(fmt::format("fsync directory {}: {}", dir, std::strerror(saved)));
  }
  return Status::Ok();
}

}  // namespace idforge::coord
