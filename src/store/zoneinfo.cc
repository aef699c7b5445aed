#include "store/zoneinfo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/quote.h"

namespace idforge::store {
namespace {

constexpr std::string_view kSystemZoneDir = "/usr/share/zoneinfo";
constexpr size_t kMaxNameLength = 255;
// The largest TZif files are tens of kilobytes; anything far bigger is not one.
constexpr off_t kMaxFileSize = 1 << 20;

// Only what IANA names use, so nothing in a name can mean something to the file system
// beyond "a relative path below the zone directory".
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '_' || c == '-' || c == '+' || c == '.';
}

Status check_name(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("time zone " + quote_text(name) + " " + std::string(why));
  };
  if (name.empty())
    return bad("is empty; expected UTC, an offset like +08:00 or a name like Asia/Shanghai");
  if (name.size() > kMaxNameLength) return bad("is longer than 255 characters");
  if (name.front() == '/') return bad("starts with '/'; expected a name like Asia/Shanghai");
  if (name.find("..") != std::string_view::npos) return bad("contains '..'");
  if (name.back() == '/' || name.find("//") != std::string_view::npos) {
    return bad("has an empty path component");
  }
  for (const char c : name) {
    if (!is_name_char(c)) {
      return bad("has a character that no zone name has (letters, digits and /_-+. only)");
    }
  }
  return Status::Ok();
}

struct FileRead {
  bool found = false;
  std::string bytes;
};

// found == false when the file does not exist, so the next directory is tried.
Result<FileRead> read_zone_file(const std::string& path, std::string_view name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return FileRead{};
    return Status::IoError("time zone " + quote_text(name) + ": cannot open " + path + ": " +
                           std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::IoError("time zone " + quote_text(name) + ": cannot stat " + path + ": " +
                           std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("time zone " + quote_text(name) +
                                   " is a directory of zones, not a zone (e.g. " +
                                   std::string(name) + "/...)");
  }
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxFileSize) {
    return Status::InvalidArgument("time zone " + quote_text(name) + ": " + path +
                                   " is not a zoneinfo file");
  }
  FileRead out;
  out.found = true;
  out.bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.bytes.size()) {
    const ssize_t n = ::read(fd, out.bytes.data() + done, out.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::IoError("time zone " + quote_text(name) + ": cannot read " + path + ": " +
                             std::strerror(errno));
    }
    if (n == 0) break;  // shrank while reading; the parser reports truncation
    done += static_cast<size_t>(n);
  }
  out.bytes.resize(done);
  return out;
}

}  // namespace

Result<TimeZone> load_time_zone(std::string_view name) {
  if (name == "UTC" || name == "Z" || (!name.empty() && (name[0] == '+' || name[0] == '-'))) {
    return TimeZone::fixed(name);
  }
  IDFORGE_RETURN_IF_ERROR(check_name(name));

  std::vector<std::string> dirs;
  // getenv is safe here as long as no thread calls setenv, which this program never does.
  const char* tzdir = std::getenv("TZDIR");
  if (tzdir != nullptr && *tzdir != '\0') dirs.emplace_back(tzdir);
  if (dirs.empty() || dirs.front() != kSystemZoneDir) dirs.emplace_back(kSystemZoneDir);

  for (const std::string& dir : dirs) {
    Result<FileRead> file = read_zone_file(dir + "/" + std::string(name), name);
    if (!file.ok()) return file.status();
    if (file->found) return TimeZone::from_tzif(file->bytes, std::string(name));
  }
  std::string where;
  for (const std::string& dir : dirs) where += (where.empty() ? "" : " or ") + dir;
  return Status::NotFound("time zone " + quote_text(name) + " not found in " + where +
                          " (expected UTC, an offset like +08:00 or an IANA name like "
                          "Asia/Shanghai)");
}

}  // namespace idforge::store
