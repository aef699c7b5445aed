#include "integration/registry_harness.h"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "integration/services.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::trim;

using Ms = std::chrono::milliseconds;
using test_support::ExitInfo;
using test_support::read_file;
using test_support::reap;

// Generous: ten holders started at once on a busy machine, each opening a connection.
constexpr int64_t kLeaseWaitMs = 20'000;
constexpr int64_t kPollMs = 20;

int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - since).count();
}

// The value of the complete "key: value" line starting with `key`, or empty.
std::string value_of(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // an unfinished line is not read yet
    const std::string_view line(text.data() + pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      return trim(line.substr(key.size() + 1));
    }
    pos = end + 1;
  }
  return "";
}

template <typename T>
bool to_number(std::string_view text, T* out) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && p == text.data() + text.size() && !text.empty();
}

std::string one_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string CommandResult::summary() const {
  return "exit " + std::to_string(exit_code) + "\n--- stdout:\n" + out + "\n--- stderr:\n" + err;
}

RegistryHarness::RegistryHarness(HarnessConfig config) : config_(std::move(config)) {
  data_dir_ = config_.dir + "/data";
  std::error_code ec;
  std::filesystem::create_directories(data_dir_, ec);
}

RegistryHarness::~RegistryHarness() {
  for (pid_t pid : running_) {
    ::kill(pid, SIGKILL);
    reap(pid);
  }
}

std::vector<std::string> RegistryHarness::common_flags(const std::string& layout) const {
  return {"--registry", config_.registry, "--layout", layout.empty() ? config_.layout : layout,
          "--data-dir", data_dir_};
}

std::string RegistryHarness::next_path(const std::string& stem) {
  return config_.dir + "/" + stem + "-" + std::to_string(next_file_++);
}

void RegistryHarness::forget(pid_t pid) { running_.erase(pid); }

CommandResult RegistryHarness::worker(const std::string& sub, const std::vector<std::string>& args,
                                      const std::string& layout) {
  std::vector<std::string> argv = {idforge_bin(), "worker", sub};
  argv.insert(argv.end(), args.begin(), args.end());
  for (std::string& flag : common_flags(layout)) argv.push_back(std::move(flag));
  const std::string base = next_path(sub);
  const test_support::Child child =
      test_support::spawn(argv, {.out_path = base + ".out", .err_path = base + ".err"});
  CommandResult result;
  result.exit_code = reap(child.pid).code;
  result.out = read_file(child.out_path);
  result.err = read_file(child.err_path);
  return result;
}

Status RegistryHarness::await_lease(Holder* holder) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const std::string out = read_file(holder->child.out_path);
    // "registry:" is the last line the command prints.
    if (!value_of(out, "registry").empty()) {
      const bool parsed = to_number(value_of(out, "slot"), &holder->slot) &&
                          to_number(value_of(out, "datacenter"), &holder->datacenter) &&
                          to_number(value_of(out, "worker"), &holder->worker) &&
                          to_number(value_of(out, "high_water_ms"), &holder->high_water_ms) &&
                          to_number(value_of(out, "start_delay_ms"), &holder->start_delay_ms);
      if (!parsed)
        return Status::Internal("cannot read the lease `worker acquire` printed:\n" + out);
      return Status::Ok();
    }
    if (const std::optional<ExitInfo> exit = test_support::try_reap(holder->child.pid)) {
      forget(holder->child.pid);
      return Status::Unavailable("`worker acquire --identity " + holder->identity +
                                 "` exited with " + std::to_string(exit->code) + ": " +
                                 one_line(read_file(holder->child.err_path)));
    }
    if (elapsed_ms(start) > kLeaseWaitMs) {
      return Status::DeadlineExceeded(
          "`worker acquire --identity " + holder->identity + "` printed no lease within " +
          std::to_string(kLeaseWaitMs) +
          " ms; stderr: " + one_line(read_file(holder->child.err_path)));
    }
    std::this_thread::sleep_for(Ms(kPollMs));
  }
}

Result<Holder> RegistryHarness::acquire(const std::string& identity, const std::string& layout) {
  Result<std::vector<Holder>> holders = acquire_all({identity}, layout);
  if (!holders.ok()) return holders.status();
  return std::move(holders->front());
}

Result<std::vector<Holder>> RegistryHarness::acquire_all(const std::vector<std::string>& identities,
                                                         const std::string& layout) {
  std::vector<Holder> holders;
  for (const std::string& identity : identities) {
    std::vector<std::string> argv = {idforge_bin(),
                                     "worker",
                                     "acquire",
                                     "--identity",
                                     identity,
                                     "--hold-ms",
                                     std::to_string(config_.hold_ms)};
    for (std::string& flag : common_flags(layout)) argv.push_back(std::move(flag));
    const std::string base = next_path("holder");
    Holder holder;
    holder.identity = identity;
    holder.child =
        test_support::spawn(argv, {.out_path = base + ".out", .err_path = base + ".err"});
    if (holder.child.pid <= 0) return Status::IoError("cannot start " + idforge_bin());
    running_.insert(holder.child.pid);
    holders.push_back(std::move(holder));
  }
  Status first_error;
  for (Holder& holder : holders) {
    Status st = await_lease(&holder);
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  if (!first_error.ok()) return first_error;
  return holders;
}

Status RegistryHarness::stop(const Holder& holder) {
  if (running_.count(holder.child.pid) == 0) return Status::Ok();
  ::kill(holder.child.pid, SIGTERM);
  const int code = reap(holder.child.pid).code;
  forget(holder.child.pid);
  if (code != 0) {
    return Status::Internal("holder " + holder.identity + " exited with " + std::to_string(code) +
                            " after SIGTERM: " + one_line(read_file(holder.child.err_path)));
  }
  return Status::Ok();
}

void RegistryHarness::kill(const Holder& holder) {
  if (running_.count(holder.child.pid) == 0) return;
  ::kill(holder.child.pid, SIGKILL);
  reap(holder.child.pid);
  forget(holder.child.pid);
}

Result<std::set<uint64_t>> RegistryHarness::taken_slots(const std::string& layout) {
  const CommandResult r = worker("status", {}, layout);
  if (r.exit_code != 0) return Status::Unavailable("`worker status` failed: " + r.summary());
  // A header line, then one row per taken slot starting with the slot number.
  std::set<uint64_t> slots;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t end = r.out.find('\n', pos);
    if (end == std::string::npos) end = r.out.size();
    const std::string_view line(r.out.data() + pos, end - pos);
    const std::string_view first = line.substr(0, line.find(' '));
    uint64_t slot = 0;
    if (to_number(first, &slot)) slots.insert(slot);
    pos = end + 1;
  }
  return slots;
}

Result<int64_t> RegistryHarness::wait_until_free(uint64_t slot, int64_t max_ms,
                                                 const std::string& layout) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    Result<std::set<uint64_t>> taken = taken_slots(layout);
    if (!taken.ok()) return taken.status();
    if (taken->count(slot) == 0) return elapsed_ms(start);
    if (elapsed_ms(start) > max_ms) {
      return Status::DeadlineExceeded("slot " + std::to_string(slot) + " still taken after " +
                                      std::to_string(max_ms) + " ms");
    }
    std::this_thread::sleep_for(Ms(kPollMs));
  }
}

::testing::AssertionResult RegistryHarness::check_distinct_slots(int n) {
  std::vector<std::string> identities;
  for (int i = 0; i < n; ++i) identities.push_back("distinct-" + std::to_string(i));
  Result<std::vector<Holder>> holders = acquire_all(identities);
  if (!holders.ok()) return ::testing::AssertionFailure() << holders.status().to_string();

  std::set<uint64_t> slots;
  std::set<std::pair<uint64_t, uint64_t>> nodes;
  for (const Holder& h : *holders) {
    slots.insert(h.slot);
    nodes.insert({h.datacenter, h.worker});
  }
  if (slots.size() != holders->size() || nodes.size() != holders->size()) {
    auto failure = ::testing::AssertionFailure()
                   << n << " holders got only " << slots.size() << " distinct slots:";
    for (const Holder& h : *holders) {
      failure << " " << h.identity << "=" << h.slot << "(" << h.datacenter << "/" << h.worker
              << ")";
    }
    return failure;
  }
  Result<std::set<uint64_t>> listed = taken_slots();
  if (!listed.ok()) return ::testing::AssertionFailure() << listed.status().to_string();
  for (uint64_t slot : slots) {
    if (listed->count(slot) == 0) {
      return ::testing::AssertionFailure() << "`worker status` does not list held slot " << slot;
    }
  }
  for (const Holder& h : *holders) {
    Status st = stop(h);
    if (!st.ok()) return ::testing::AssertionFailure() << st.to_string();
  }
  listed = taken_slots();
  if (!listed.ok()) return ::testing::AssertionFailure() << listed.status().to_string();
  for (uint64_t slot : slots) {
    if (listed->count(slot) != 0) {
      return ::testing::AssertionFailure()
             << "slot " << slot << " is still listed after its holder released it";
    }
  }
  return ::testing::AssertionSuccess() << n << " distinct slots";
}

::testing::AssertionResult RegistryHarness::check_kill_frees_slot(int64_t max_ms,
                                                                  int64_t* freed_after_ms) {
  Result<Holder> holder = acquire("killed");
  if (!holder.ok()) return ::testing::AssertionFailure() << holder.status().to_string();
  Result<std::set<uint64_t>> listed = taken_slots();
  if (!listed.ok()) return ::testing::AssertionFailure() << listed.status().to_string();
  if (listed->count(holder->slot) == 0) {
    return ::testing::AssertionFailure()
           << "`worker status` does not list held slot " << holder->slot;
  }
  kill(*holder);
  Result<int64_t> freed = wait_until_free(holder->slot, max_ms);
  if (!freed.ok()) return ::testing::AssertionFailure() << freed.status().to_string();
  if (freed_after_ms != nullptr) *freed_after_ms = *freed;
  return ::testing::AssertionSuccess()
         << "slot " << holder->slot << " free " << *freed << " ms after SIGKILL";
}

::testing::AssertionResult RegistryHarness::check_restart_gets_old_slot(bool after_kill) {
  Result<std::vector<Holder>> holders = acquire_all({"restart-a", "restart-b", "restart-c"});
  if (!holders.ok()) return ::testing::AssertionFailure() << holders.status().to_string();
  // The one with the highest slot leaves and comes back; the one with the lowest leaves
  // too, so "the first free slot" would be the wrong answer.
  std::vector<Holder> sorted = *holders;
  std::sort(sorted.begin(), sorted.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
  const Holder& low = sorted.front();
  const Holder& returning = sorted.back();
  const int64_t max_wait_ms = 3 * config_.ttl_ms + 5000;
  if (after_kill) {
    kill(returning);
    Result<int64_t> freed = wait_until_free(returning.slot, max_wait_ms);
    if (!freed.ok()) return ::testing::AssertionFailure() << freed.status().to_string();
  } else {
    Status st = stop(returning);
    if (!st.ok()) return ::testing::AssertionFailure() << st.to_string();
  }
  Status st = stop(low);
  if (!st.ok()) return ::testing::AssertionFailure() << st.to_string();

  Result<Holder> again = acquire(returning.identity);
  if (!again.ok()) return ::testing::AssertionFailure() << again.status().to_string();
  const uint64_t new_slot = again->slot;
  for (const Holder& h : *holders) kill(h);
  kill(*again);
  if (new_slot != returning.slot) {
    return ::testing::AssertionFailure()
           << "identity '" << returning.identity << "' had slot " << returning.slot
           << " and got slot " << new_slot << " when it came back ("
           << (after_kill ? "after SIGKILL" : "after release") << "; slot " << low.slot
           << " was free as well)";
  }
  return ::testing::AssertionSuccess()
         << "identity '" << returning.identity << "' got slot " << returning.slot << " again";
}

::testing::AssertionResult RegistryHarness::check_exhaustion(const std::string& layout, int slots) {
  std::vector<std::string> identities;
  for (int i = 0; i < slots; ++i) identities.push_back("fill-" + std::to_string(i));
  Result<std::vector<Holder>> holders = acquire_all(identities, layout);
  if (!holders.ok()) return ::testing::AssertionFailure() << holders.status().to_string();

  const CommandResult r =
      worker("acquire", {"--identity", "one-too-many", "--hold-ms", "0"}, layout);
  for (const Holder& h : *holders) {
    Status st = stop(h);
    if (!st.ok()) return ::testing::AssertionFailure() << st.to_string();
  }
  const std::string limit = "all " + std::to_string(slots) + " worker slots";
  const bool one_line_error =
      r.err.rfind("idforge: ", 0) == 0 && r.err.find('\n') == r.err.size() - 1;
  if (r.exit_code != 1 || !r.out.empty() || !one_line_error ||
      r.err.find(limit) == std::string::npos || r.err.find(layout) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "acquire number " << slots + 1 << " should fail with exit 1 and one line naming '"
           << limit << "' and the layout '" << layout << "'; got " << r.summary();
  }
  return ::testing::AssertionSuccess() << one_line(r.err);
}

}  // namespace idforge::integration
