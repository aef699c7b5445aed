// TimeZone::fixed, from_posix_tz and from_tzif on arbitrary bytes (the corpus holds
// offsets, POSIX TZ rules and real TZif files). Checked:
// - a fixed offset is within -23:59..+23:59, is_fixed(), and its name() parses back to
//   the same offset;
// - a POSIX rule or TZif zone answers offset_seconds_at for any instant (int64 extremes,
//   the ends of years 0000..9999, times from the input) within tzfile(5)'s
//   -89999..93599 seconds, and a copy answers the same;
// - names are kept as given.
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "idforge/time_zone.h"

namespace idforge::fuzz {
namespace {

constexpr int32_t kMinOffset = -89999;
constexpr int32_t kMaxOffset = 93599;

std::vector<int64_t> instants(std::string_view input) {
  std::vector<int64_t> out = {
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min() + 1,
      std::numeric_limits<int64_t>::max() - 1,
      0,
      -1,
      1,
      -62'167'219'200'000,  // 0000-01-01
      253'402'300'799'999,  // 9999-12-31T23:59:59.999
      253'402'300'800'000,
      2'147'483'647'000,   // 2038-01-19, the end of 32-bit TZif times
      -2'147'483'648'000,  // 1901-12-13
      1'700'000'000'000,
      1'711'846'800'000,  // 2024-03-31T01:00Z, a European DST change
  };
  // Times picked by the input, around the interesting range of a zone file.
  uint64_t h = hash64(input);
  for (int i = 0; i < 8; ++i) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<int64_t>(h >> 18) - (int64_t{1} << 45));
  }
  for (int i = 0; i + 8 <= static_cast<int>(input.size()) && i < 64; i += 8) {
    int64_t t = 0;
    std::memcpy(&t, input.data() + i, sizeof t);
    out.push_back(t);
  }
  return out;
}

void check_offsets(const TimeZone& zone, const std::vector<int64_t>& when, const char* kind) {
  const TimeZone copy = zone;  // shares the rules
  for (int64_t t : when) {
    const int32_t offset = zone.offset_seconds_at(t);
    IDFORGE_FUZZ_CHECK(offset >= kMinOffset && offset <= kMaxOffset,
                       std::string(kind) + " zone " + escaped(zone.name()) + ": offset " +
                           std::to_string(offset) + " at " + std::to_string(t));
    IDFORGE_FUZZ_CHECK(copy.offset_seconds_at(t) == offset, "a copy answers differently");
    if (zone.is_fixed()) {
      IDFORGE_FUZZ_CHECK(offset == zone.offset_seconds_at(0), "a fixed zone that is not fixed");
    }
  }
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  using idforge::Result;
  using idforge::TimeZone;
  const std::string_view input = as_text(data, size);
  const std::vector<int64_t> when = instants(input);

  if (Result<TimeZone> fixed = TimeZone::fixed(input); fixed.ok()) {
    IDFORGE_FUZZ_CHECK(fixed->is_fixed(), "a fixed offset with rules");
    const int32_t offset = fixed->offset_seconds_at(0);
    IDFORGE_FUZZ_CHECK(offset >= -86340 && offset <= 86340, "fixed offset beyond 23:59");
    const Result<TimeZone> again = TimeZone::fixed(fixed->name());
    IDFORGE_FUZZ_CHECK(
        again.ok() && again->offset_seconds_at(0) == offset && again->name() == fixed->name(),
        "fixed zone name " + fixed->name() + " does not parse back");
    check_offsets(*fixed, when, "fixed");
  }

  if (Result<TimeZone> rule = TimeZone::from_posix_tz(input); rule.ok()) {
    IDFORGE_FUZZ_CHECK(rule->name() == input, "a rule zone is not named by its rule");
    check_offsets(*rule, when, "POSIX");
  } else {
    IDFORGE_FUZZ_CHECK(!rule.status().message().empty(), "an error without a message");
  }

  if (Result<TimeZone> file = TimeZone::from_tzif(input, "Fuzz/Zone"); file.ok()) {
    IDFORGE_FUZZ_CHECK(file->name() == "Fuzz/Zone", "a TZif zone lost its name");
    check_offsets(*file, when, "TZif");
  } else {
    IDFORGE_FUZZ_CHECK(!file.status().message().empty(), "an error without a message");
  }
  return 0;
}
