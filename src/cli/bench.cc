#include "cli/bench.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <latch>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cli/bench_baselines.h"
#include "cli/bench_workload.h"
#include "core/snowflake_impl.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"

namespace idforge::cli {
namespace {

using namespace bench;  // NOLINT: the workload kit is this file's vocabulary

constexpr double kMaxSeconds = 600;
constexpr int kMaxThreads = 256;
constexpr size_t kBatch = 256;
constexpr std::string_view kAtomicName = "baseline.atomic_counter";
constexpr std::string_view kMutexName = "baseline.mutex_snowflake";

struct Row {
  std::string name;
  int threads = 0;
  uint64_t ids = 0;
  double seconds = 0;
  double ids_per_sec = 0;
  std::string error;
  std::string note;
  std::optional<SnowflakeFacts> facts;
};

class CounterWorkload final : public Workload {
 public:
  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive<U64Order>(stop, tally, [this](U64Order& order, Status&) -> uint64_t {
      order.see(counter_.next());
      return 1;
    });
  }

 private:
  AtomicCounter counter_;
};

class MutexSnowflakeWorkload final : public Workload {
 public:
  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive<U64Order>(stop, tally, [this](U64Order& order, Status& error) -> uint64_t {
      Result<uint64_t> id = gen_.next();
      if (!id.ok()) {
        error = id.status();
        return 0;
      }
      order.see(*id);
      return 1;
    });
  }

 private:
  MutexSnowflake gen_{1, 1};
};

// Holds the implementation, not the SnowflakeGenerator interface: next() then inlines its
// fast path, and the figures are the generator's own cost. Through the interface each
// next() is a virtual call that also returns its Result through memory: from 0.1 to
// 1.5 ns more, depending on code placement (bench/micro/snowflake_bench.cc,
// BM_SnowflakeNext vs BM_SnowflakeNextImpl); next_batch() pays it once per batch.
class SnowflakeWorkload final : public Workload {
 public:
  SnowflakeWorkload(std::unique_ptr<SnowflakeGeneratorImpl> gen, bool batch)
      : gen_(std::move(gen)), batch_(batch) {}

  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive_u64_generator<kBatch>(*gen_, batch_, stop, tally);
  }

  bool may_revisit() const override { return gen_->policy() == RollbackPolicy::kRing; }

  std::optional<SnowflakeFacts> facts() const override {
    return SnowflakeFacts{gen_->counters(), gen_->drift_ms()};
  }

 private:
  std::unique_ptr<SnowflakeGeneratorImpl> gen_;
  bool batch_;
};

class Uuid7Workload final : public Workload {
 public:
  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive<U128Order>(stop, tally, [this](U128Order& order, Status&) -> uint64_t {
      order.see(gen_->next().bytes);
      return 1;
    });
  }

 private:
  // Through the public interface (a virtual call), as a user of the library calls it.
  std::unique_ptr<Uuid7Generator> gen_ = Uuid7Generator::create();
};

class Uuid4Workload final : public Workload {
 public:
  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive<Unordered>(stop, tally, [](Unordered& order, Status&) -> uint64_t {
      order.see(uuid4().bytes);
      return 1;
    });
  }
};

class UlidWorkload final : public Workload {
 public:
  void run(std::atomic<bool>& stop, Tally& tally) override {
    drive<U128Order>(stop, tally, [this](U128Order& order, Status&) -> uint64_t {
      order.see(gen_->next().bytes);
      return 1;
    });
  }

 private:
  std::unique_ptr<UlidGenerator> gen_ = UlidGenerator::create();
};

template <typename W>
WorkloadResult make() {
  return std::unique_ptr<Workload>(std::make_unique<W>());
}

WorkloadResult make_snowflake(SnowflakeOptions options, bool batch = false) {
  IDFORGE_ASSIGN_OR_RETURN(std::unique_ptr<SnowflakeGeneratorImpl> gen,
                           SnowflakeGeneratorImpl::create(std::move(options), {}));
  return std::unique_ptr<Workload>(std::make_unique<SnowflakeWorkload>(std::move(gen), batch));
}

SnowflakeOptions with_policy(RollbackPolicy policy) {
  SnowflakeOptions options;
  options.policy = policy;
  return options;
}

struct BenchmarkSpec {
  std::string_view name;
  WorkloadResult (*make)();
};

// The order matters: the baselines run first, so every later row can be compared with
// them as soon as it is printed.
const std::vector<BenchmarkSpec>& all_benchmarks() {
  static const std::vector<BenchmarkSpec> specs = {
      {kAtomicName, make<CounterWorkload>},
      {kMutexName, make<MutexSnowflakeWorkload>},
      {"snowflake.logical", [] { return make_snowflake({}); }},
      {"snowflake.classic",
       [] {
         SnowflakeOptions options;
         options.max_drift_ms = 0;
         return make_snowflake(std::move(options));
       }},
      {"snowflake.logical.batch", [] { return make_snowflake({}, /*batch=*/true); }},
      {"snowflake.wide",
       [] {
         // 22 sequence bits: 4 billion IDs/s, far above what one node can draw, so this
         // row is the hot path's own cost with the layout's cap out of the way.
         Result<Layout> layout = Layout::parse("time:41,sequence:22");
         if (!layout.ok()) return WorkloadResult(layout.status());
         SnowflakeOptions options;
         options.layout = std::move(layout).value();
         return make_snowflake(std::move(options));
       }},
      {"snowflake.ring", [] { return make_snowflake(with_policy(RollbackPolicy::kRing)); }},
      {"snowflake.wait", [] { return make_snowflake(with_policy(RollbackPolicy::kWait)); }},
      {"snowflake.reject", [] { return make_snowflake(with_policy(RollbackPolicy::kReject)); }},
      {"segment.next", [] { return bench::make_segment_memory(/*batch=*/false); }},
      {"segment.next.batch", [] { return bench::make_segment_memory(/*batch=*/true); }},
      {"segment.next.sqlite", bench::make_segment_sqlite},
      {"uuid7", make<Uuid7Workload>},
      {"uuid4", make<Uuid4Workload>},
      {"ulid", make<UlidWorkload>},
  };
  return specs;
}

std::atomic<uint64_t> g_digest{0};  // where every run's digest ends up

// Sleeps until `deadline`, waking early when a thread reports an error.
void wait_until(Steady::time_point deadline, const std::atomic<bool>& stop) {
  constexpr auto kSlice = std::chrono::milliseconds(20);
  while (!stop.load(std::memory_order_relaxed)) {
    auto now = Steady::now();
    if (now >= deadline) return;
    std::this_thread::sleep_for(std::min<Steady::duration>(deadline - now, kSlice));
  }
}

Row measure(const BenchmarkSpec& spec, int threads, double seconds) {
  Row row;
  row.name = std::string(spec.name);
  row.threads = threads;
  WorkloadResult made = spec.make();  // fresh per measurement: no borrowed time carries over
  if (!made.ok()) {
    row.error = made.status().to_string();
    return row;
  }
  Workload& work = **made;

  std::vector<Tally> tallies(static_cast<size_t>(threads));
  std::atomic<bool> stop{false};
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  pool.reserve(tallies.size());
  try {
    for (Tally& tally : tallies) {
      pool.emplace_back([&work, &stop, &start, &tally] {
        start.arrive_and_wait();
        work.run(stop, tally);
      });
    }
  } catch (const std::exception& e) {
    // Let the threads already started through the barrier, then stop them at once.
    row.error = std::string("cannot start threads: ") + e.what();
    stop.store(true, std::memory_order_relaxed);
    start.count_down(threads - static_cast<int>(pool.size()));
  }
  start.arrive_and_wait();
  auto duration =
      std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(seconds));
  wait_until(Steady::now() + duration, stop);
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : pool) t.join();
  if (!row.error.empty()) return row;

  Steady::time_point first = tallies.front().start;
  Steady::time_point last = tallies.front().end;
  uint64_t out_of_order = 0;
  uint64_t digest = 0;
  for (const Tally& t : tallies) {
    first = std::min(first, t.start);
    last = std::max(last, t.end);
    row.ids += t.ids;
    out_of_order += t.out_of_order;
    digest ^= t.digest;
    if (row.error.empty() && !t.error.ok()) row.error = t.error.to_string();
  }
  g_digest.fetch_xor(digest, std::memory_order_relaxed);
  row.seconds = std::chrono::duration<double>(last - first).count();
  if (row.seconds > 0) row.ids_per_sec = static_cast<double>(row.ids) / row.seconds;
  row.facts = work.facts();

  if (out_of_order > 0) {
    std::string what = fmt::format("{} IDs not above the same thread's previous one", out_of_order);
    bool explained = work.may_revisit() && row.facts && row.facts->counters.rollbacks > 0;
    if (explained) {
      row.note = what + " (ring revisits after a clock rollback)";
    } else if (row.error.empty()) {
      row.error = what;
    }
  }
  return row;
}

std::string with_commas(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[static_cast<size_t>(i)];
  }
  return out;
}

std::string facts_note(const SnowflakeFacts& f) {
  std::string note;
  auto add = [&note](std::string part) {
    if (!note.empty()) note += ", ";
    note += part;
  };
  if (f.counters.borrowed_ms > 0) add(fmt::format("borrowed {} ms", f.counters.borrowed_ms));
  if (f.drift_ms > 0) add(fmt::format("ended {} ms ahead", f.drift_ms));
  if (f.counters.waited_ms > 0) add(fmt::format("waited {} ms", f.counters.waited_ms));
  if (f.counters.rollbacks > 0) add(fmt::format("{} rollbacks", f.counters.rollbacks));
  if (f.counters.failures > 0) add(fmt::format("{} failures", f.counters.failures));
  return note;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "unknown" : line.substr(begin);
  }
  return "unknown";
}

int cpu_count() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string compiler() {
#if defined(__clang__)
  return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("g++ {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

// The baseline rows of one run, by thread count, for the ratio columns.
class Baselines {
 public:
  void add(const Row& row) {
    if (!row.error.empty() || row.ids_per_sec <= 0) return;
    if (row.name == kAtomicName) atomic_.emplace_back(row.threads, row.ids_per_sec);
    if (row.name == kMutexName) mutex_.emplace_back(row.threads, row.ids_per_sec);
  }
  std::optional<double> vs_atomic(const Row& row) const { return ratio(atomic_, row); }
  std::optional<double> vs_mutex(const Row& row) const { return ratio(mutex_, row); }

 private:
  using Entries = std::vector<std::pair<int, double>>;
  static std::optional<double> ratio(const Entries& entries, const Row& row) {
    if (!row.error.empty()) return std::nullopt;
    for (const auto& [threads, rate] : entries) {
      if (threads == row.threads) return row.ids_per_sec / rate;
    }
    return std::nullopt;
  }
  Entries atomic_;
  Entries mutex_;
};

double ns_per_id(const Row& row) {
  // One caller's view: each of the threads spends this long per ID it gets.
  return row.ids_per_sec > 0 ? 1e9 * row.threads / row.ids_per_sec : 0;
}

std::string ratio_text(std::optional<double> r) {
  return r ? fmt::format("{:.4f}", *r) : std::string("-");
}

void print_header(const BenchOptions& options, const std::vector<int>& threads) {
  std::string counts;
  for (int t : threads) {
    if (!counts.empty()) counts += ',';
    counts += std::to_string(t);
  }
  fmt::print("idforge bench: {} s per measurement, threads {}\n", options.seconds, counts);
  fmt::print("{:<25} {:>7} {:>15} {:>10} {:>10} {:>8}  {}\n", "benchmark", "threads", "ids/s",
             "vs atomic", "vs mutex", "ns/ID", "notes");
  std::fflush(stdout);
}

void print_row(const Row& row, const Baselines& base) {
  if (!row.error.empty()) {
    fmt::print("{:<25} {:>7} {:>15}  error: {}\n", row.name, row.threads, "-", row.error);
  } else {
    std::string note = row.note;
    if (row.facts) {
      std::string f = facts_note(*row.facts);
      if (!f.empty()) note = note.empty() ? f : note + "; " + f;
    }
    fmt::print("{:<25} {:>7} {:>15} {:>10} {:>10} {:>8.2f}  {}\n", row.name, row.threads,
               with_commas(row.ids_per_sec), ratio_text(base.vs_atomic(row)),
               ratio_text(base.vs_mutex(row)), ns_per_id(row), note);
  }
  std::fflush(stdout);
}

void print_footer() {
  fmt::print(
      "host: {} CPUs, {}; built with {}\n"
      "ratios are against the baselines of this run at the same thread count; ns/ID is the\n"
      "time one thread spends per ID (threads / ids per s). A 12-bit sequence with 1 ms ticks\n"
      "caps every generator at 4,096,000 IDs/s per node; snowflake.logical runs above it only\n"
      "while it borrows time (up to max_drift_ms), so its figure falls with longer runs.\n",
      cpu_count(), cpu_model(), compiler());
}

nlohmann::ordered_json row_json(const Row& row, const Baselines& base) {
  nlohmann::ordered_json j;
  j["name"] = row.name;
  j["threads"] = row.threads;
  j["ids_per_sec"] = row.error.empty() ? row.ids_per_sec : 0.0;
  if (!row.error.empty()) {
    j["error"] = row.error;
    return j;
  }
  j["ns_per_id"] = ns_per_id(row);
  j["ids"] = row.ids;
  j["seconds"] = row.seconds;
  if (auto r = base.vs_atomic(row)) j["vs_atomic_counter"] = *r;
  if (auto r = base.vs_mutex(row)) j["vs_mutex_snowflake"] = *r;
  if (row.facts) {
    j["borrowed_ms"] = row.facts->counters.borrowed_ms;
    j["waited_ms"] = row.facts->counters.waited_ms;
    j["drift_ms"] = row.facts->drift_ms;
    j["rollbacks"] = row.facts->counters.rollbacks;
  }
  if (!row.note.empty()) j["note"] = row.note;
  return j;
}

bool selected(std::string_view name, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  return std::any_of(only.begin(), only.end(),
                     [name](const std::string& prefix) { return name.starts_with(prefix); });
}

}  // namespace

int run_bench(const BenchOptions& options) {
  // Written so that NaN fails too.
  if (!(options.seconds > 0 && options.seconds <= kMaxSeconds)) {
    fmt::print(stderr, "idforge bench: --seconds must be in (0, {}], got {}\n", kMaxSeconds,
               options.seconds);
    return 2;
  }
  std::vector<int> threads = options.threads.empty() ? std::vector<int>{1, 2} : options.threads;
  for (int t : threads) {
    if (t < 1 || t > kMaxThreads) {
      fmt::print(stderr, "idforge bench: --threads must be in [1, {}], got {}\n", kMaxThreads, t);
      return 2;
    }
  }
  std::vector<const BenchmarkSpec*> chosen;
  for (const BenchmarkSpec& spec : all_benchmarks()) {
    if (selected(spec.name, options.only)) chosen.push_back(&spec);
  }
  if (chosen.empty()) {
    std::string names;
    for (const BenchmarkSpec& spec : all_benchmarks()) names += fmt::format(" {}", spec.name);
    fmt::print(stderr, "idforge bench: --only matches no benchmark; there are:{}\n", names);
    return 2;
  }

  if (!options.json) print_header(options, threads);
  Baselines base;
  std::vector<Row> rows;
  bool failed = false;
  for (const BenchmarkSpec* spec : chosen) {
    for (int t : threads) {
      Row row = measure(*spec, t, options.seconds);
      base.add(row);
      failed = failed || !row.error.empty();
      if (!options.json) print_row(row, base);
      rows.push_back(std::move(row));
    }
  }

  if (options.json) {
    nlohmann::ordered_json out;
    out["results"] = nlohmann::ordered_json::array();
    for (const Row& row : rows) out["results"].push_back(row_json(row, base));
    out["machine"] = {{"nproc", cpu_count()},
                      {"cpu", cpu_model()},
                      {"compiler", compiler()},
                      {"seconds_per_measurement", options.seconds}};
    fmt::print("{}\n", out.dump());
  } else {
    print_footer();
  }
  return failed ? 1 : 0;
}

}  // namespace idforge::cli
