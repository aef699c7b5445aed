#include "coord/local_records.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "core/text.h"
#include "store/durable_file.h"

namespace idforge::coord {
namespace {

class LocalRecords final : public FleetRecords {
 public:
  LocalRecords(std::string dir, std::string described)
      : dir_(std::move(dir) + "/fleet"), described_(std::move(described)) {}

  Result<FleetRecord> read(std::string_view name) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    return read_file(path_of(name));
  }

  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    IDFORGE_RETURN_IF_ERROR(store::make_dirs_durably(dir_, "fleet records directory"));
    const std::string lock_path = dir_ + "/.lock";
    const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0) {
      return Status::IoError(fmt::format("open {}: {}", lock_path, text::errno_text()));
    }
    Result<bool> out = replace_locked(lock, path_of(name), expected, value, now);
    ::close(lock);  // drops the flock
    return out;
  }

  std::string describe() const override { return described_; }

 private:
  std::string path_of(std::string_view name) const { return dir_ + "/" + std::string(name); }

  Result<bool> replace_locked(int lock, const std::string& path, const FleetRecord& expected,
                              std::string_view value, FleetRecord* now) {
    while (::flock(lock, LOCK_EX) != 0) {
      if (errno != EINTR)
        return Status::IoError(fmt::format("lock {}/.lock: {}", dir_, text::errno_text()));
    }
    IDFORGE_ASSIGN_OR_RETURN(FleetRecord current, read_file(path));
    if (!(current == expected)) {
      *now = std::move(current);
      return false;
    }
    IDFORGE_RETURN_IF_ERROR(store::write_file_durably(path, std::string(value) + "\n"));
    return true;
  }

  static Result<FleetRecord> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      if (errno == ENOENT) return FleetRecord{};
      return Status::IoError(fmt::format("open {}: {}", path, text::errno_text()));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return Status::IoError(fmt::format("read {}", path));
    std::string value = text.str();
    if (value.empty() || value.back() != '\n') {
      return Status::InvalidArgument(
          fmt::format("{} is cut short (no final newline): it was not written by idforge", path));
    }
    value.pop_back();
    return FleetRecord{true, std::move(value)};
  }

  const std::string dir_;
  const std::string described_;
};

}  // namespace

std::unique_ptr<FleetRecords> make_local_records(std::string dir, std::string described) {
  return std::make_unique<LocalRecords>(std::move(dir), std::move(described));
}

}  // namespace idforge::coord
