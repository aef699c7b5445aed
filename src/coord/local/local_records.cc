#include "coord/local/local_records.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <sstream>

#include "core/text.h"
#include "core/thread_annotations.h"
#include "store/batched_calls.h"
#include "store/durable_file.h"

namespace idforge::coord {
namespace {

constexpr std::string_view kHeader = "idforge fleet records 1\n";
// The log is written anew once its appended lines make it this much more than twice its
// compact size: one line per change, a whole rewrite only now and then.
constexpr uint64_t kCompactSlack = 64 * 1024;

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class LocalRecords final : public FleetRecords {
 public:
  LocalRecords(std::string dir, std::string described)
      : dir_(std::move(dir)),
        path_(dir_ + "/fleet-records"),
        described_(std::move(described)),
        lock_(path_ + ".lock") {}
  ~LocalRecords() override {
    if (log_fd_ >= 0) ::close(log_fd_);
  }

  Result<FleetRecord> read(std::string_view name) override IDFORGE_EXCLUDES(mu_) {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    MutexLock guard(mu_);
    IDFORGE_RETURN_IF_ERROR(
        with_flock(/*shared=*/true, [&]() IDFORGE_REQUIRES(mu_) { return refresh_locked(); }));
    auto it = records_.find(name);
    if (it == records_.end()) return FleetRecord{};
    return FleetRecord{true, it->second};
  }

  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override IDFORGE_EXCLUDES(mu_) {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    if (value.find('\n') != std::string_view::npos) {
      return Status::InvalidArgument("a fleet record's value is one line");
    }
    bool replaced = false;
    {
      MutexLock guard(mu_);
      IDFORGE_RETURN_IF_ERROR(with_flock(/*shared=*/false, [&]() IDFORGE_REQUIRES(mu_) -> Status {
        IDFORGE_RETURN_IF_ERROR(refresh_locked());
        FleetRecord current;
        if (auto it = records_.find(name); it != records_.end()) current = {true, it->second};
        if (!(current == expected)) {
          *now = std::move(current);
          return Status::Ok();
        }
        IDFORGE_RETURN_IF_ERROR(append_locked(name, value));
        replaced = true;
        return Status::Ok();
      }));
    }
    if (replaced) IDFORGE_RETURN_IF_ERROR(sync());
    return replaced;
  }

  std::string describe() const override { return described_; }

 private:
  // Runs fn under an flock of DIR/fleet-records.lock (the log itself is replaced by
  // compaction, so it cannot carry the lock). A read of a directory that does not exist
  // yet has no log to read and creates nothing.
  // The lock file stays open (store::LockFile) once the directory is there. `fn` runs on
  // this thread with mu_ still held: say so on the lambda (IDFORGE_REQUIRES(mu_)).
  Status with_flock(bool shared, const std::function<Status()>& fn) IDFORGE_REQUIRES(mu_) {
    if (!dir_made_) {
      if (shared && !std::filesystem::exists(dir_)) return fn();
      if (!shared) {
        IDFORGE_RETURN_IF_ERROR(store::make_dirs_durably(dir_, "registry directory"));
        dir_made_ = true;
      }
    }
    return lock_.with_lock(fn, shared);
  }

  // Takes in what other processes appended since the last look; everything again when
  // one of them wrote the log anew (another inode: the log is opened again). Under the
  // flock, so the log cannot be replaced between the stat and the open.
  Status refresh_locked() IDFORGE_REQUIRES(mu_) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      if (errno != ENOENT) {
        return Status::IoError(fmt::format("stat {}: {}", path_, text::errno_text()));
      }
      if (exists_) return Status::IoError(fmt::format("{} disappeared", path_));
      if (!imported_) {
        imported_ = true;
        return import_old_files();
      }
      return Status::Ok();
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    if (!exists_ || st.st_ino != inode_ || size < offset_) {
      IDFORGE_RETURN_IF_ERROR(open_log_locked());
      records_.clear();
      offset_ = 0;
      inode_ = st.st_ino;
      exists_ = true;
      compact_bytes_ = size;
    }
    torn_ = false;
    if (size == offset_) return Status::Ok();
    std::string tail(size - offset_, '\0');
    size_t got = 0;
    while (got < tail.size()) {
      const ssize_t n =
          ::pread(log_fd_, tail.data() + got, tail.size() - got, static_cast<off_t>(offset_ + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IoError(fmt::format("read {}: {}", path_, text::errno_text()));
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    tail.resize(got);
    // A last line without its newline is an append a crash cut short: never answered,
    // so never counted; the next append writes over it.
    size_t at = 0;
    for (size_t end; (end = tail.find('\n', at)) != std::string::npos; at = end + 1) {
      IDFORGE_RETURN_IF_ERROR(take_line(std::string_view(tail).substr(at, end - at)));
      offset_ += end + 1 - at;
    }
    torn_ = at < tail.size();
    return Status::Ok();
  }

  Status take_line(std::string_view line) IDFORGE_REQUIRES(mu_) {
    if (offset_ == 0) {
      if (line != kHeader.substr(0, kHeader.size() - 1)) {
        return Status::InvalidArgument(
            fmt::format("{} does not start with '{}': it was not written by idforge", path_,
                        kHeader.substr(0, kHeader.size() - 1)));
      }
      return Status::Ok();
    }
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || !check_record_name(line.substr(0, space)).ok()) {
      return Status::InvalidArgument(
          fmt::format("{} at byte {}: '{}' is not a fleet record line", path_, offset_, line));
    }
    records_[std::string(line.substr(0, space))] = std::string(line.substr(space + 1));
    return Status::Ok();
  }

  // One line per change, written under the flock; its fsync comes after the flock is let
  // go (sync), so changes made meanwhile, by this process or another, share one.
  // Until then the line may be read, by a later change here or in another process, but
  // not yet answered: a crash that loses it loses a change nobody was told of, and a
  // decision taken on it was only more careful. A line written in part is cut off again.
  Status append_locked(std::string_view name, std::string_view value) IDFORGE_REQUIRES(mu_) {
    if (!exists_) {
      records_[std::string(name)] = std::string(value);
      return compact_locked();  // durable by itself; the fsync after it finds nothing left
    }
    const std::string line = fmt::format("{} {}\n", name, value);
    Status st = Status::Ok();
    if (torn_ && ::ftruncate(log_fd_, static_cast<off_t>(offset_)) != 0) {
      st = Status::IoError(fmt::format("truncate {}: {}", path_, text::errno_text()));
    } else if (::pwrite(log_fd_, line.data(), line.size(), static_cast<off_t>(offset_)) !=
               static_cast<ssize_t>(line.size())) {
      st = Status::IoError(fmt::format("append to {}: {}", path_, text::errno_text()));
    }
    if (!st.ok()) {
      (void)::ftruncate(log_fd_, static_cast<off_t>(offset_));
      return st;
    }
    offset_ += line.size();
    torn_ = false;
    records_[std::string(name)] = std::string(value);
    if (offset_ > 2 * compact_bytes_ + kCompactSlack) return compact_locked();
    return Status::Ok();
  }

  // Makes every line written so far durable: one fsync, shared by every change that
  // asks while another is under way (store/batched_calls.h). The batch that holds a
  // change runs after its line was written, so its fsync covers the line.
  Status sync() IDFORGE_EXCLUDES(mu_) {
    Status st = Status::Ok();
    syncs_.run(st, [this](std::span<Status* const> waiting) {
      Status done = Status::Ok();
      Fd out;
      {
        MutexLock guard(mu_);
        out.fd = ::dup(log_fd_);  // the log may be opened again while the fsync runs
      }
      if (out.fd < 0) {
        done = Status::IoError(fmt::format("dup {}: {}", path_, text::errno_text()));
      } else if (::fsync(out.fd) != 0) {
        // A rewrite since the dup is durable by itself.
        done = Status::IoError(fmt::format("fsync {}: {}", path_, text::errno_text()));
      }
      for (Status* each : waiting) *each = done;
    });
    return st;
  }

  // The log written anew: one line per record.
  Status compact_locked() IDFORGE_REQUIRES(mu_) {
    std::string whole(kHeader);
    for (const auto& [name, value] : records_) whole += fmt::format("{} {}\n", name, value);
    IDFORGE_RETURN_IF_ERROR(store::write_file_durably(path_, whole));
    IDFORGE_RETURN_IF_ERROR(open_log_locked());
    struct stat st {};
    if (::fstat(log_fd_, &st) != 0) {
      return Status::IoError(fmt::format("stat {}: {}", path_, text::errno_text()));
    }
    exists_ = true;
    inode_ = st.st_ino;
    offset_ = whole.size();
    compact_bytes_ = whole.size();
    torn_ = false;
    return Status::Ok();
  }

  // log_fd_ on the file now at path_, for reading, appending and fsyncs.
  Status open_log_locked() IDFORGE_REQUIRES(mu_) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path_, text::errno_text()));
    if (log_fd_ >= 0) ::close(log_fd_);
    log_fd_ = fd;
    return Status::Ok();
  }

  // Data directories from before the log kept one file per record in DIR/fleet: taken
  // in, so the first write carries them into the log.
  Status import_old_files() IDFORGE_REQUIRES(mu_) {
    const std::string old_dir = dir_ + "/fleet";
    DIR* d = ::opendir(old_dir.c_str());
    if (d == nullptr) return Status::Ok();
    Status st = Status::Ok();
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (!check_record_name(name).ok() || name.ends_with(".tmp")) continue;
      std::ifstream in(old_dir + "/" + name, std::ios::binary);
      std::ostringstream value;
      value << in.rdbuf();
      std::string v = value.str();
      if (!in || v.empty() || v.back() != '\n') {
        st =
            Status::InvalidArgument(fmt::format("{}/{} is cut short or unreadable", old_dir, name));
        break;
      }
      v.pop_back();
      records_[name] = std::move(v);
    }
    ::closedir(d);
    return st;
  }

  const std::string dir_;
  const std::string path_;
  const std::string described_;
  Mutex mu_;  // the fields below; held around the flock
  store::LockFile lock_ IDFORGE_GUARDED_BY(mu_);
  // dir_ was created (or found) by an exclusive lock.
  bool dir_made_ IDFORGE_GUARDED_BY(mu_) = false;
  int log_fd_ IDFORGE_GUARDED_BY(mu_) = -1;  // the log at inode_, open while exists_
  std::map<std::string, std::string, std::less<>> records_ IDFORGE_GUARDED_BY(mu_);
  bool exists_ IDFORGE_GUARDED_BY(mu_) = false;    // the log has been seen
  bool imported_ IDFORGE_GUARDED_BY(mu_) = false;  // DIR/fleet was looked at
  // Of the log last read: another inode means it was rewritten.
  ino_t inode_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t offset_ IDFORGE_GUARDED_BY(mu_) = 0;  // bytes of whole lines taken in
  // The log goes on past offset_ with a line cut short.
  bool torn_ IDFORGE_GUARDED_BY(mu_) = false;
  uint64_t compact_bytes_ IDFORGE_GUARDED_BY(mu_) = 0;  // its size when last written whole
  store::BatchedCalls<Status> syncs_{64};  // fsyncs of the log, taken after mu_ is let go
};

}  // namespace

std::unique_ptr<FleetRecords> make_local_records(std::string dir, std::string described) {
  return std::make_unique<LocalRecords>(std::move(dir), std::move(described));
}

}  // namespace idforge::coord
