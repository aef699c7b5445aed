// Segment-mode workloads for `idforge bench`: the double buffer's own cost over an
// instant in-memory source, and over a real SQLite store.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/bench_workload.h"
#include "core/thread_annotations.h"
#include "idforge/segment_buffer.h"
#include "store/store_factory.h"

namespace idforge::cli::bench {
namespace {

constexpr size_t kSegmentBatch = 256;

// Hands out ranges from a counter: an allocation costs nanoseconds, so what is timed
// is the buffer.
class MemorySource final : public RangeSource {
 public:
  Result<Segment> allocate(std::string_view, uint64_t step) override IDFORGE_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    Segment s{next_, step, 1, {}};
    next_ += step;
    return s;
  }

 private:
  Mutex mu_;
  uint64_t next_ IDFORGE_GUARDED_BY(mu_) = 1;
};

class SegmentWorkload final : public Workload {
 public:
  SegmentWorkload(std::unique_ptr<RangeSource> source, std::unique_ptr<SegmentBuffer> buffer,
                  std::string dir, bool batch)
      : source_(std::move(source)),
        buffer_(std::move(buffer)),
        dir_(std::move(dir)),
        batch_(batch) {}
  ~SegmentWorkload() override {
    buffer_.reset();
    source_.reset();
    if (!dir_.empty()) {
      std::string cmd = "rm -rf '" + dir_ + "'";
      if (std::system(cmd.c_str()) != 0) {
        // Leaving a temporary directory behind is not worth failing the run for.
      }
    }
  }

  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive_u64_generator<kSegmentBatch>(*buffer_, batch_, stop, tally);
  }

 private:
  std::unique_ptr<RangeSource> source_;
  std::unique_ptr<SegmentBuffer> buffer_;
  std::string dir_;
  bool batch_;
};

SegmentBufferOptions bench_options() {
  SegmentBufferOptions o;
  o.tag = "bench";
  o.min_step = 100'000;
  o.max_step = 1'000'000;
  return o;
}

}  // namespace

WorkloadResult make_segment_memory(bool batch) {
  auto source = std::make_unique<MemorySource>();
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SegmentBuffer> buffer,
                           SegmentBuffer::create(source.get(), bench_options()));
  return std::unique_ptr<Workload>(std::make_unique<SegmentWorkload>(
      std::move(source), std::move(buffer), std::string(), batch));
}

WorkloadResult make_segment_sqlite() {
  char tmpl[] = "/tmp/idforge-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::IoError("cannot make a temporary directory");
  std::string dir = tmpl;
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SegmentStore> store,
                           store::open_store(store::sqlite_url(dir + "/bench.db")));
  TagSpec spec;
  spec.name = "bench";
  spec.step = bench_options().min_step;
  IDFORGE_RETURN_IF_ERROR(store->create_tag(spec));
  std::unique_ptr<RangeSource> source = std::move(store);
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SegmentBuffer> buffer,
                           SegmentBuffer::create(source.get(), bench_options()));
  return std::unique_ptr<Workload>(std::make_unique<SegmentWorkload>(
      std::move(source), std::move(buffer), std::move(dir), false));
}

}  // namespace idforge::cli::bench
