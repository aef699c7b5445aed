// ServedMarks: what this node has served of each segment tag, kept across its restarts.
//
// The segment guard (store_guard.h) refuses a range from a store unless it lies above
// everything this node has served of that tag from that place, so a store that went
// back (a promoted replica that missed writes, a restored backup, a Redis restarted
// without its data) can never make this node repeat an ID. The marks are in the store's
// own numbers (max_id units, before striping) and keyed by the store's place ("0/1", or
// "1/3" for the second of three striped stores), not by its URL: a tag moved to another
// database must still not go back. The file also remembers the identity each place had
// when this node last saw it (StoreIdentity::current).
//
// record() returns only once the new mark is durable: it appends one line and fsyncs it,
// so a range costs the same with ten thousand tags as with one. A line may repeat a
// mark (the highest counts) or an identity (the last counts); a last line a crash cut
// short was never acknowledged and is dropped. Now and then the file is written anew,
// one line a mark (a temporary file, fsync, rename, fsync of the directory). Several
// processes may share the file (`idforge serve` and `idforge next --tag` on one data
// directory): every write holds an flock on PATH.lock, so none loses another's marks. A
// file that cannot be read as marks is an error, never "no marks". An empty path keeps
// the marks in memory (tests, and callers that have no data directory). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_annotations.h"
#include "idforge/status.h"
#include "store/durable_file.h"

namespace idforge::store {

// The place of store `index` among `count` striped stores: "INDEX/COUNT".
std::string place_name(uint32_t index, uint32_t count);

class ServedMarks {
 public:
  // Loads `path` (absent: no marks yet). InvalidArgument for a file that is not a marks
  // file, naming the line.
  static Result<std::unique_ptr<ServedMarks>> open(std::string path);

  // The highest number of `tag` served from `place`, 0 when none.
  uint64_t highest(std::string_view place, std::string_view tag) const IDFORGE_EXCLUDES(mu_);
  // Every tag's highest number served from `place`.
  std::map<std::string, uint64_t, std::less<>> of_place(std::string_view place) const
      IDFORGE_EXCLUDES(mu_);
  // Raises the mark of (place, tag) to `last` (never lowers it); durable on return
  // unless set_mark_fsync(false).
  Status record(std::string_view place, std::string_view tag, uint64_t last) IDFORGE_EXCLUDES(mu_);
  // false: record() writes its line without an fsync. Only for a node whose fleet floor
  // is kept on this host (local:): the floor's record of every range is fsynced before
  // the range is used, and a crash that loses a mark's line keeps that record, which is
  // at least as high. Identities are always fsynced. Set before the marks are shared.
  void set_mark_fsync(bool on) { mark_fsync_ = on; }

  // The identity `place` had when this node last saw it ("" when never).
  std::string seen_identity(std::string_view place) const IDFORGE_EXCLUDES(mu_);
  Status record_identity(std::string_view place, std::string_view identity) IDFORGE_EXCLUDES(mu_);

  // All marks, for status pages: (place, tag, highest).
  struct Mark {
    std::string place;
    std::string tag;
    uint64_t highest = 0;
  };
  std::vector<Mark> all() const IDFORGE_EXCLUDES(mu_);
  const std::string& path() const { return path_; }

 private:
  explicit ServedMarks(std::string path) : path_(std::move(path)), lock_(path_ + ".lock") {}
  // The file as it is (absent: no marks), without mending a torn end (open() does).
  static Result<std::unique_ptr<ServedMarks>> read(std::string path);
  Status parse(const std::string& text) IDFORGE_REQUIRES(mu_);
  // Appends one change (a line) to the file under an flock on PATH.lock and fsyncs it:
  // O(1) however many tags there are. The file is written anew (compact_locked) when
  // it is new, or once the appended lines have made it more than twice its compact size.
  // With `sync` false the line is written, not fsynced.
  Status append_locked(const std::string& line, bool sync = true) IDFORGE_REQUIRES(mu_);
  // Writes the whole file anew, merged with what other processes appended (the flock
  // held).
  Status compact_locked() IDFORGE_REQUIRES(mu_);

  const std::string path_;
  bool mark_fsync_ = true;
  mutable Mutex mu_;
  LockFile lock_ IDFORGE_GUARDED_BY(mu_);  // PATH.lock, kept open; taken with mu_ held
  // place -> tag -> highest
  std::map<std::string, std::map<std::string, uint64_t, std::less<>>, std::less<>> marks_
      IDFORGE_GUARDED_BY(mu_);
  // place -> identity
  std::map<std::string, std::string, std::less<>> identities_ IDFORGE_GUARDED_BY(mu_);
  bool torn_ IDFORGE_GUARDED_BY(mu_) = false;  // the file ended in a line a crash cut short
  // The file's size when it was last written whole.
  uint64_t compact_bytes_ IDFORGE_GUARDED_BY(mu_) = 0;
};

}  // namespace idforge::store
