#include "store/served_marks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
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
  std::unique_ptr<ServedMarks> marks(new ServedMarks(std::move(path)));
  if (marks->path_.empty()) return marks;
  std::ifstream in(marks->path_, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return marks;
    return Status::IoError(fmt::format("open {}: {}", marks->path_, text::errno_text()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("read {}", marks->path_));
  IDFORGE_RETURN_IF_ERROR(marks->parse(text.str()));
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
      marks_[place][a] = value;
    } else if (kind == "identity") {
      if (!valid_word(place) || !valid_word(a)) return bad("expected 'identity PLACE VALUE'");
      identities_[place] = a;
    } else {
      return bad("unknown entry '" + kind.substr(0, 32) + "'");
    }
    if (words >> extra) return bad("trailing text");
  }
  if (number == 0) return bad("empty file");
  return Status::Ok();
}

Status ServedMarks::save_locked() {
  if (path_.empty()) return Status::Ok();
  // Another process on this data directory (`idforge next --tag` beside `idforge
  // serve`) writes the same file: one writer at a time, and each first takes in what
  // the others recorded, so no process's marks are lost to another's older copy.
  const std::string lock_path = path_ + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return Status::IoError(fmt::format("open {}: {}", lock_path, text::errno_text()));
  while (::flock(lock, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const std::string why = text::errno_text();
      ::close(lock);
      return Status::IoError(fmt::format("lock {}: {}", lock_path, why));
    }
  }
  Status st = merge_from_disk_locked();
  if (st.ok()) {
    std::string text(kHeader);
    text += '\n';
    for (const auto& [place, identity] : identities_) {
      text += fmt::format("identity {} {}\n", place, identity);
    }
    for (const auto& [place, tags] : marks_) {
      for (const auto& [tag, value] : tags) {
        text += fmt::format("mark {} {} {}\n", place, tag, value);
      }
    }
    st = write_file_durably(path_, text);
  }
  ::close(lock);  // drops the flock
  return st;
}

Status ServedMarks::merge_from_disk_locked() {
  Result<std::unique_ptr<ServedMarks>> disk = open(path_);
  if (!disk.ok()) return disk.status();
  for (const auto& [place, tags] : (*disk)->marks_) {
    for (const auto& [tag, value] : tags) {
      uint64_t& slot = marks_[place][tag];
      slot = std::max(slot, value);
    }
  }
  // This process's own view of a place's identity wins; one it never saw is taken.
  for (const auto& [place, identity] : (*disk)->identities_) identities_.emplace(place, identity);
  return Status::Ok();
}

uint64_t ServedMarks::highest(std::string_view place, std::string_view tag) const {
  std::lock_guard lock(mu_);
  auto p = marks_.find(place);
  if (p == marks_.end()) return 0;
  auto t = p->second.find(tag);
  return t == p->second.end() ? 0 : t->second;
}

std::map<std::string, uint64_t, std::less<>> ServedMarks::of_place(std::string_view place) const {
  std::lock_guard lock(mu_);
  auto p = marks_.find(place);
  if (p == marks_.end()) return {};
  return p->second;
}

Status ServedMarks::record(std::string_view place, std::string_view tag, uint64_t last) {
  if (!valid_word(place) || !valid_word(tag)) {
    return Status::InvalidArgument("a served mark needs a place and a tag without spaces");
  }
  std::lock_guard lock(mu_);
  uint64_t& slot = marks_[std::string(place)][std::string(tag)];
  if (last <= slot) return Status::Ok();
  const uint64_t before = slot;
  slot = last;
  Status saved = save_locked();
  if (!saved.ok()) slot = before;  // not durable: the range must not be used
  return saved;
}

std::string ServedMarks::seen_identity(std::string_view place) const {
  std::lock_guard lock(mu_);
  auto it = identities_.find(place);
  return it == identities_.end() ? std::string() : it->second;
}

Status ServedMarks::record_identity(std::string_view place, std::string_view identity) {
  if (!valid_word(place) || !valid_word(identity)) {
    return Status::InvalidArgument("a store identity is one word");
  }
  std::lock_guard lock(mu_);
  std::string& slot = identities_[std::string(place)];
  if (slot == identity) return Status::Ok();
  const std::string before = slot;
  slot = std::string(identity);
  Status saved = save_locked();
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
  std::lock_guard lock(mu_);
  std::vector<Mark> out;
  for (const auto& [place, tags] : marks_) {
    for (const auto& [tag, value] : tags) out.push_back({place, tag, value});
  }
  return out;
}

}  // namespace idforge::store
