#include "integration/redis_serve_nodes.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "integration/services.h"
#include "support/process.h"

namespace idforge::integration::redis_ha {
namespace {

using std::chrono::milliseconds;

constexpr size_t kMaxRefusalsKept = 20;

// A refusal with its numbers (times, counts, ports) left out: two refusals of one kind
// differ only in those, so a node under load that is refused for a slow renewal a
// thousand times keeps one of them and room for the kinds that come later.
std::string refusal_kind(const std::string& why) {
  std::string kind;
  for (char c : why) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit) {
      kind += c;
    } else if (kind.empty() || kind.back() != '#') {
      kind += '#';
    }
  }
  return kind;
}
constexpr auto kStatusEvery = milliseconds(100);
constexpr auto kCallTimeout = milliseconds(3000);

int64_t ms_between(Steady::time_point from, Steady::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

std::vector<uint64_t> parse_ids(const std::string& text) {
  std::vector<uint64_t> ids;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) ids.push_back(std::strtoull(line.c_str(), nullptr, 10));
  }
  return ids;
}

// The lease's state and slot out of /v1/status (the keys of its "lease" object).
LeaseSample parse_lease(const std::string& body, Steady::time_point at) {
  LeaseSample s;
  s.at = at;
  const size_t lease = body.find("\"lease\":{");
  if (lease == std::string::npos) return s;
  const size_t end = body.find('}', lease);
  const std::string object = body.substr(lease, end - lease);
  if (const size_t slot = object.find("\"slot\":"); slot != std::string::npos) {
    s.slot = std::atoll(object.c_str() + slot + 7);
  }
  if (const size_t state = object.find("\"state\":\""); state != std::string::npos) {
    const size_t from = state + 9;
    s.state = object.substr(from, object.find('"', from) - from);
  }
  return s;
}

}  // namespace

uint64_t slot_of(uint64_t id) { return (id >> 12) & 0x3FF; }

Result<std::unique_ptr<PullingNode>> PullingNode::launch(const std::string& name,
                                                         const std::string& dir,
                                                         const std::vector<std::string>& args) {
  std::unique_ptr<PullingNode> node(new PullingNode());
  node->name_ = name;
  Result<std::unique_ptr<ServeNode>> serve = ServeNode::launch(dir, args);
  if (!serve.ok()) return serve.status();
  node->serve_ = std::move(serve).value();
  return node;
}

Status PullingNode::await(milliseconds limit) {
  // Until it issues Snowflake IDs: it listens before a lease's start delay is over.
  const auto deadline = Steady::now() + limit;
  Status listening = serve_->await(limit);
  if (listening.ok()) {
    listening = serve_->await_ready(
        "snowflake", std::chrono::duration_cast<milliseconds>(deadline - Steady::now()));
  }
  if (!listening.ok()) return Status(listening.code(), name_ + ": " + listening.message());
  port_ = serve_->http_port();
  return Status::Ok();
}

PullingNode::~PullingNode() { stop_pulling(); }  // serve_ ends the process

void PullingNode::start_pulling(const std::string& tag) {
  puller_ = std::thread([this, tag] { pull(tag); });
}

void PullingNode::stop_pulling() {
  stopping_.store(true);
  if (puller_.joinable()) puller_.join();
}

Status PullingNode::stop() {
  stop_pulling();
  Status stopped = serve_->stop();
  if (!stopped.ok()) return Status(stopped.code(), name_ + ": " + stopped.message());
  return Status::Ok();
}

void PullingNode::pull(const std::string& tag) {
  HttpClient http(port_);
  auto next_status = Steady::now();
  while (!stopping_.load()) {
    const auto sent = Steady::now();
    Result<HttpReply> got = http.get("/v1/snowflake?count=20&format=text", kCallTimeout);
    const auto received = Steady::now();
    bool ok = got.ok() && got->status == 200;
    {
      MutexLock lock(mu_);
      if (ok) {
        batches_.push_back({sent, received, parse_ids(got->body)});
      } else {
        ++refused_;
        const std::string why =
            got.ok() ? std::to_string(got->status) + " " + got->body : got.status().to_string();
        if (refusals_.size() < kMaxRefusalsKept &&
            refusal_kinds_.insert(refusal_kind(why)).second) {
          refusals_.push_back(why);
        }
      }
    }
    if (!tag.empty()) {
      Result<HttpReply> seg =
          http.get("/v1/segment/" + tag + "?count=10&format=text", kCallTimeout);
      if (seg.ok() && seg->status == 200) {
        std::vector<uint64_t> ids = parse_ids(seg->body);
        MutexLock lock(mu_);
        segment_ids_.insert(segment_ids_.end(), ids.begin(), ids.end());
      }
    }
    if (Steady::now() >= next_status) {
      next_status = Steady::now() + kStatusEvery;
      Result<HttpReply> status = http.get("/v1/status", kCallTimeout);
      if (status.ok() && status->status == 200) {
        LeaseSample s = parse_lease(status->body, Steady::now());
        MutexLock lock(mu_);
        leases_.push_back(std::move(s));
      }
    }
    // A refusing node is asked again soon, not in a tight loop.
    std::this_thread::sleep_for(milliseconds(ok ? 1 : 5));
  }
}

std::vector<Batch> PullingNode::batches() const {
  MutexLock lock(mu_);
  return batches_;
}
std::vector<uint64_t> PullingNode::segment_ids() const {
  MutexLock lock(mu_);
  return segment_ids_;
}
std::vector<LeaseSample> PullingNode::leases() const {
  MutexLock lock(mu_);
  return leases_;
}
std::vector<std::string> PullingNode::refusals() const {
  MutexLock lock(mu_);
  return refusals_;
}
uint64_t PullingNode::refused() const {
  MutexLock lock(mu_);
  return refused_;
}
Steady::time_point PullingNode::last_issued() const {
  MutexLock lock(mu_);
  return batches_.empty() ? Steady::time_point{} : batches_.back().received;
}
std::string PullingNode::stderr_text() const { return serve_->stderr_text(); }

Result<std::string> PullingNode::get(const std::string& target) const {
  HttpClient http(port_);
  Result<HttpReply> a = http.get(target, kCallTimeout);
  if (!a.ok()) return a.status();
  if (a->status != 200) {
    return Status::Unavailable(name_ + ": GET " + target + ": " + std::to_string(a->status) + " " +
                               a->body);
  }
  return a->body;
}

// The number after "key": in a JSON text, or -1.
int64_t json_number(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\":";
  const size_t at = json.find(quoted);
  return at == std::string::npos ? -1 : std::atoll(json.c_str() + at + quoted.size());
}

// The string after "key": in a JSON text, or "".
std::string json_string(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\":\"";
  const size_t at = json.find(quoted);
  if (at == std::string::npos) return "";
  const size_t from = at + quoted.size();
  return json.substr(from, json.find('"', from) - from);
}

std::string IssueReport::summary() const {
  std::string s = std::to_string(ids) + " IDs, " + std::to_string(repeated) + " repeated; " +
                  std::to_string(handovers) + " slot handovers, shortest gap " +
                  (handovers > 0 ? std::to_string(min_handover_gap_ms) + " ms" : "-") + "; " +
                  std::to_string(overlaps.size()) + " overlaps; " +
                  std::to_string(slot_mismatches) + " batches off their /v1/status slot";
  for (size_t i = 0; i < overlaps.size() && i < 5; ++i) s += "\n  overlap: " + overlaps[i];
  return s;
}

IssueReport check_issued(const std::vector<PullingNode*>& nodes) {
  IssueReport report;
  struct Use {
    size_t node;
    Steady::time_point sent;
    Steady::time_point received;
  };
  std::map<uint64_t, std::vector<Use>> by_slot;
  std::vector<uint64_t> all;
  const auto t0 = Steady::now();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const std::vector<LeaseSample> leases = nodes[n]->leases();
    for (const Batch& b : nodes[n]->batches()) {
      if (b.ids.empty()) continue;
      all.insert(all.end(), b.ids.begin(), b.ids.end());
      const uint64_t slot = slot_of(b.ids.front());
      by_slot[slot].push_back({n, b.sent, b.received});
      // The status just before and just after the batch: one of them names its slot.
      const LeaseSample* before = nullptr;
      const LeaseSample* after = nullptr;
      for (const LeaseSample& s : leases) {
        if (s.at <= b.sent) before = &s;
        if (s.at >= b.received && after == nullptr) after = &s;
      }
      const bool matches = (before != nullptr && before->slot == static_cast<int64_t>(slot)) ||
                           (after != nullptr && after->slot == static_cast<int64_t>(slot)) ||
                           (before == nullptr && after == nullptr);
      if (!matches) ++report.slot_mismatches;
    }
  }
  report.ids = all.size();
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) report.repeated += all[i] == all[i - 1];
  for (auto& [slot, uses] : by_slot) {
    std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.sent < b.sent; });
    size_t holder = uses.front().node;
    Steady::time_point last = uses.front().received;
    for (const Use& u : uses) {
      if (u.node == holder) {
        last = std::max(last, u.received);
        continue;
      }
      // In microseconds: batches that interleave are less than a millisecond apart.
      const int64_t gap_us =
          std::chrono::duration_cast<std::chrono::microseconds>(u.sent - last).count();
      ++report.handovers;
      report.min_handover_gap_ms = std::min(report.min_handover_gap_ms, gap_us / 1000);
      if (gap_us < 0) {
        report.overlaps.push_back("slot " + std::to_string(slot) + ": " + nodes[holder]->name() +
                                  " answered until " + std::to_string(ms_between(t0, last)) +
                                  " ms, " + nodes[u.node]->name() + " asked at " +
                                  std::to_string(ms_between(t0, u.sent)) + " ms (from now)");
      }
      holder = u.node;
      last = u.received;
    }
  }
  return report;
}

bool all_issue_after(const std::vector<PullingNode*>& nodes, Steady::time_point since,
                     milliseconds limit) {
  const auto deadline = Steady::now() + limit;
  while (Steady::now() < deadline) {
    bool all = true;
    for (PullingNode* n : nodes) all = all && n->last_issued() > since;
    if (all) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

}  // namespace idforge::integration::redis_ha
