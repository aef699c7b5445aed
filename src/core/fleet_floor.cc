#include "fleet_floor.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>

#include "random.h"

namespace idforge {
namespace {

constexpr std::string_view kHeader = "fleet-floor 1";
// Compare-and-set rounds one take tries before it gives up: each failed round means
// another node recorded a range of the same tag meanwhile.
constexpr int kMaxRounds = 32;
constexpr size_t kMaxNameLength = 200;

bool read_number(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

Status bad_record(std::string_view text, std::string_view why) {
  return Status::InvalidArgument(
      "fleet floor record '" + std::string(text.substr(0, 120)) +
      "' is not valid: " + std::string(why) +
      " (it is written by idforge only; a damaged one stops the tag rather "
      "than risk a repeated ID)");
}

}  // namespace

Status check_record_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || name == "." || name == "..") {
    return Status::InvalidArgument("a fleet record name is 1 to 200 characters, not . or ..");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) return Status::InvalidArgument("a fleet record name is made of A-Z a-z 0-9 _ . : -");
  }
  return Status::Ok();
}

Result<FloorState> FloorState::parse(std::string_view text) {
  if (!text.starts_with(kHeader)) return bad_record(text, "no 'fleet-floor 1' header");
  std::string_view rest = text.substr(kHeader.size());
  std::vector<std::string_view> words;
  while (!rest.empty()) {
    if (rest.front() != ' ') return bad_record(text, "words are separated by one space");
    rest.remove_prefix(1);
    const size_t end = std::min(rest.find(' '), rest.size());
    words.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (words.empty()) return bad_record(text, "no floor");
  if (words.size() > kMaxRangesAbove + 1) return bad_record(text, "too many ranges");
  FloorState state;
  if (!read_number(words[0], &state.floor)) return bad_record(text, "the floor is not a number");
  uint64_t previous = state.floor;
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t dash = words[i].find('-');
    uint64_t first = 0, last = 0;
    if (dash == std::string_view::npos || !read_number(words[i].substr(0, dash), &first) ||
        !read_number(words[i].substr(dash + 1), &last) || first > last) {
      return bad_record(text, "a range is not FIRST-LAST");
    }
    // Sorted, disjoint, with a gap before each (else it would have joined its neighbour
    // or folded into the floor).
    if (first <= previous + 1) return bad_record(text, "ranges out of order");
    state.above.emplace_back(first, last);
    previous = last;
  }
  return state;
}

std::string FloorState::format() const {
  std::string out(kHeader);
  out += ' ';
  out += std::to_string(floor);
  for (const auto& [first, last] : above) {
    out += ' ';
    out += std::to_string(first);
    out += '-';
    out += std::to_string(last);
  }
  return out;
}

bool FloorState::take(uint64_t first, uint64_t last) {
  if (first > last || first <= floor) return false;
  auto at = std::lower_bound(above.begin(), above.end(), std::make_pair(first, uint64_t{0}));
  if (at != above.end() && at->first <= last) return false;                 // overlaps the next
  if (at != above.begin() && std::prev(at)->second >= first) return false;  // the previous
  // Kept canonical: a range that touches a neighbour joins it.
  at = above.insert(at, {first, last});
  if (std::next(at) != above.end() && std::next(at)->first == last + 1) {
    at->second = std::next(at)->second;
    above.erase(std::next(at));
  }
  if (at != above.begin() && std::prev(at)->second + 1 == first) {
    std::prev(at)->second = at->second;
    above.erase(at);
  }
  // A range that starts right above the floor folds into it; so do the lowest ranges
  // once there are too many (their gaps are given up).
  while (!above.empty() && (above.front().first == floor + 1 || above.size() > kMaxRangesAbove)) {
    floor = above.front().second;
    above.erase(above.begin());
  }
  return true;
}

uint64_t FloorState::highest() const { return above.empty() ? floor : above.back().second; }

std::string FleetFloor::record_name(std::string_view place, std::string_view tag) {
  std::string name(place);
  std::replace(name.begin(), name.end(), '/', '-');
  name += '-';
  name += tag;
  return name;
}

Result<FloorTake> FleetFloor::take(std::string_view place, std::string_view tag, uint64_t first,
                                   uint64_t last) {
  const std::string name = record_name(place, tag);
  IDFORGE_RETURN_IF_ERROR(check_record_name(name));
  FleetRecord seen;
  bool have = false;
  {
    MutexLock lock(mu_);
    auto it = known_.find(name);
    if (it != known_.end()) {
      seen = it->second;
      have = true;
    }
  }
  auto forget = [&] {
    MutexLock lock(mu_);
    known_.erase(name);
  };
  if (!have) {
    IDFORGE_ASSIGN_OR_RETURN(seen, records_.read(name));
  }
  for (int round = 0; round < kMaxRounds; ++round) {
    FloorState state;
    if (seen.exists) {
      Result<FloorState> parsed = FloorState::parse(seen.value);
      if (!parsed.ok()) {
        forget();
        return Status(parsed.status().code(),
                      records_.describe() + ": " + std::string(parsed.status().message()));
      }
      state = std::move(parsed).value();
    }
    if (!state.take(first, last)) {
      MutexLock lock(mu_);
      known_[name] = seen;
      return FloorTake{false, state.highest()};
    }
    const std::string value = state.format();
    FleetRecord now;
    Result<bool> replaced = records_.replace(name, seen, value, &now);
    if (!replaced.ok()) {
      forget();  // it may or may not have been written: read it again next time
      return replaced.status();
    }
    if (*replaced) {
      MutexLock lock(mu_);
      known_[name] = FleetRecord{true, value};
      return FloorTake{true, state.highest()};
    }
    seen = std::move(now);
    // Several nodes refilling one tag at once: each lost round means another node's
    // range went in, so spread the retries out a little rather than race again at once.
    if (round >= 2) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(random_u64() % (1000 * static_cast<uint64_t>(round - 1))));
    }
  }
  forget();
  return Status::Unavailable(records_.describe() + ": the fleet floor of tag " + std::string(tag) +
                             " changed under every one of " + std::to_string(kMaxRounds) +
                             " attempts to record a range");
}

Result<uint64_t> FleetFloor::highest(std::string_view place, std::string_view tag) {
  const std::string name = record_name(place, tag);
  IDFORGE_RETURN_IF_ERROR(check_record_name(name));
  IDFORGE_ASSIGN_OR_RETURN(FleetRecord seen, records_.read(name));
  if (!seen.exists) return uint64_t{0};
  IDFORGE_ASSIGN_OR_RETURN(FloorState state, FloorState::parse(seen.value));
  return state.highest();
}

Result<uint64_t> FleetFloor::highest_of_tag(std::string_view tag, uint32_t stores) {
  uint64_t top = 0;
  for (uint32_t i = 0; i < std::max<uint32_t>(stores, 1); ++i) {
    const std::string place =
        std::to_string(i) + "/" + std::to_string(std::max<uint32_t>(stores, 1));
    IDFORGE_ASSIGN_OR_RETURN(uint64_t h, highest(place, tag));
    top = std::max(top, h);
  }
  return top;
}

}  // namespace idforge
