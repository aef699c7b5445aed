#include "store/served_marks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

#include "core/text.h"
#include "store/durable_file.h"

namespace idforge::store {
namespace {

constexpr std::string_view kHeader = "idforge-served-marks 1";
// The file is written anew once the appended lines make it this much more than twice
// its compact size.
constexpr uint64_t kCompactSlack = 64 * 1024;

bool valid_word(std::string_view w) {
  if (w.empty() || w.size() > 512) return false;
  for (char c : w) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string place_name(uint32_t index, uint32_t count) {
  return fmt::format("{}/{}", index, count);
}

Result<std::unique_ptr<ServedMarks>> ServedMarks::open(std::string path) {
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<ServedMarks> marks, read(std::move(path)));
  ServedMarks& m = *marks;
  MutexLock lock(m.mu_);  // not shared yet: uncontended, taken for the analysis
  if (m.torn_) {
    // Appends start on a fresh line: write the file anew without the cut-short one.
    IDFORGE_RETURN_IF_ERROR(
        m.lock_.with_lock([&]() IDFORGE_REQUIRES(m.mu_) { return m.compact_locked(); }));
  }
  return marks;
}

Result<std::unique_ptr<ServedMarks>> ServedMarks::read(std::string path) {
  std::unique_ptr<ServedMarks> marks(new ServedMarks(std::move(path)));
  if (marks->path_.empty()) return marks;
  MutexLock lock(marks->mu_);  // not shared yet: uncontended, taken for the analysis
  std::ifstream in(marks->path_, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return marks;
    return Status::IoError(fmt::format("open {}: {}", marks->path_, text::errno_text()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("read {}", marks->path_));
  IDFORGE_RETURN_IF_ERROR(marks->parse(text.str()));
  marks->compact_bytes_ = text.str().size();
  return marks;
}

// Lines: the header, then "mark PLACE TAG NUMBER" and "identity PLACE VALUE".
Status ServedMarks::parse(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "{} line {}: {} (this file records the segment IDs this node served; it must not be "
        "edited or truncated)",
        path_, number, why));
  };
  // A last line without its newline is an append a crash cut short: record() returns
  // only after the whole line is fsynced, so nothing of it was ever served.
  const size_t whole = text.empty() || text.back() == '\n' ? text.size() : text.rfind('\n') + 1;
  torn_ = whole != text.size();
  lines.str(text.substr(0, whole));
  while (std::getline(lines, line)) {
    ++number;
    if (number == 1) {
      if (line != kHeader) return bad("not a served-marks file");
      continue;
    }
    std::istringstream words(line);
    std::string kind, place, a, b, extra;
    words >> kind >> place >> a;
    if (kind == "mark") {
      words >> b;
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(b.data(), b.data() + b.size(), value);
      if (ec != std::errc() || end != b.data() + b.size() || b.empty() || !valid_word(a) ||
          !valid_word(place)) {
        return bad("expected 'mark PLACE TAG NUMBER'");
      }
      uint64_t& slot = marks_[place][a];  // appended lines may repeat a mark: the highest
      slot = std::max(slot, value);
    } else if (kind == "identity") {
      if (!valid_word(place) || !valid_word(a)) return bad("expected 'identity PLACE VALUE'");
      identities_[place] = a;
    } else {
      return bad("unknown entry '" + kind.substr(0, 32) + "'");
    }
    if (words >> extra) return bad("trailing text");
  }
  if (number == 0 && !torn_) return bad("empty file");
  return Status::Ok();
}

Status ServedMarks::append_locked(const std::string& line, bool sync) {
  if (path_.empty()) return Status::Ok();
  // The lambda runs on this thread inside with_lock, mu_ still held.
  return lock_.with_lock([&]() IDFORGE_REQUIRES(mu_) -> Status {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return compact_locked();  // the first write: the whole file
    if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path_, text::errno_text()));
    // One line per change, fsynced: O(1) per range however many tags there are.
    struct stat before {};
    Status st = Status::Ok();
    if (::fstat(fd, &before) != 0) {
      st = Status::IoError(fmt::format("stat {}: {}", path_, text::errno_text()));
    } else if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      st = Status::IoError(fmt::format("append to {}: {}", path_, text::errno_text()));
    } else if (sync && ::fsync(fd) != 0) {
      st = Status::IoError(fmt::format("fsync {}: {}", path_, text::errno_text()));
    }
    // A line written in part (a full disk) must not run into the next one: cut it off.
    if (!st.ok() && before.st_size > 0 && ::ftruncate(fd, before.st_size) != 0) {
      st = Status::IoError(fmt::format("{}; cutting the partial line off failed too: {}",
                                       st.message(), text::errno_text()));
    }
    const bool grown = st.ok() && static_cast<uint64_t>(before.st_size) + line.size() >
                                      2 * compact_bytes_ + kCompactSlack;
    ::close(fd);
    if (!st.ok()) return st;
    // The lines a mark's rises left behind: written again as one line a mark.
    return grown ? compact_locked() : Status::Ok();
  });
}

Status ServedMarks::compact_locked() {
  // Other processes append too: take in what they wrote, then write the whole file anew.
  Result<std::unique_ptr<ServedMarks>> disk = read(path_);
  if (!disk.ok()) return disk.status();
  ServedMarks& other = **disk;
  MutexLock other_lock(other.mu_);  // made by read() just now: nobody else has it
  for (const auto& [place, tags] : other.marks_) {
    for (const auto& [tag, value] : tags) {
      uint64_t& slot = marks_[place][tag];
      slot = std::max(slot, value);
    }
  }
  // The file's identities are the latest any process recorded; this one's own are in
  // it already (each change was appended), unless it has none yet.
  for (const auto& [place, identity] : other.identities_) identities_[place] = identity;
  std::string text(kHeader);
  text += '\n';
  for (const auto& [place, identity] : identities_) {
    text += fmt::format("identity {} {}\n", place, identity);
  }
  for (const auto& [place, tags] : marks_) {
    for (const auto& [tag, value] : tags) text += fmt::format("mark {} {} {}\n", place, tag, value);
  }
  IDFORGE_RETURN_IF_ERROR(write_file_durably(path_, text));
  compact_bytes_ = text.size();
  return Status::Ok();
}

uint64_t ServedMarks::highest(std::string_view place, std::string_view tag) const {
  MutexLock lock(mu_);
  auto p = marks_.find(place);
  if (p == marks_.end()) return 0;
  auto t = p->second.find(tag);
  return t == p->second.end() ? 0 : t->second;
}

std::map<std::string, uint64_t, std::less<>> ServedMarks::of_place(std::string_view place) const {
  MutexLock lock(mu_);
  auto p = marks_.find(place);
  if (p == marks_.end()) return {};
  return p->second;
}

Status ServedMarks::record(std::string_view place, std::string_view tag, uint64_t last) {
  if (!valid_word(place) || !valid_word(tag)) {
    return Status::InvalidArgument("a served mark needs a place and a tag without spaces");
  }
  MutexLock lock(mu_);
  uint64_t& slot = marks_[std::string(place)][std::string(tag)];
  if (last <= slot) return Status::Ok();
  const uint64_t before = slot;
  slot = last;
  Status saved = append_locked(fmt::format("mark {} {} {}\n", place, tag, last), mark_fsync_);
  if (!saved.ok()) slot = before;  // not durable: the range must not be used
  return saved;
}

std::string ServedMarks::seen_identity(std::string_view place) const {
  MutexLock lock(mu_);
  auto it = identities_.find(place);
  return it == identities_.end() ? std::string() : it->second;
}

Status ServedMarks::record_identity(std::string_view place, std::string_view identity) {
  if (!valid_word(place) || !valid_word(identity)) {
    return Status::InvalidArgument("a store identity is one word");
  }
  MutexLock lock(mu_);
  std::string& slot = identities_[std::string(place)];
  if (slot == identity) return Status::Ok();
  const std::string before = slot;
  slot = std::string(identity);
  Status saved = append_locked(fmt::format("identity {} {}\n", place, identity));
  if (!saved.ok()) {
    if (before.empty()) {
      identities_.erase(std::string(place));
    } else {
      slot = before;
    }
  }
  return saved;
}

std::vector<ServedMarks::Mark> ServedMarks::all() const {
  MutexLock lock(mu_);
  std::vector<Mark> out;
  for (const auto& [place, tags] : marks_) {
    for (const auto& [tag, value] : tags) out.push_back({place, tag, value});
  }
  return out;
}

}  // namespace idforge::store
