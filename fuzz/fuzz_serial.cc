// SerialTemplate::parse and format. Input lines:
//   1: a template   2: the number   3: a Unix ms time   4: a time zone (fixed offset or
//   POSIX TZ rule; empty or invalid: UTC)
// Non-numeric number and time lines are hashed to 64 bits. Checked:
// - a parsed template keeps its text and limits; a serial is printable ASCII no longer
//   than max_length(), holds the number zero-padded to seq_width(), and append_to
//   writes the same;
// - two different numbers give two different serials at any two times (the promise
//   that makes serials unique), and a template without date fields ignores the time.
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "idforge/serial.h"
#include "idforge/time_zone.h"

namespace idforge::fuzz {
namespace {

TimeZone zone_of(std::string_view text) {
  if (text.empty()) return TimeZone();
  if (Result<TimeZone> fixed = TimeZone::fixed(text); fixed.ok()) return *fixed;
  if (Result<TimeZone> rule = TimeZone::from_posix_tz(text); rule.ok()) return *rule;
  return TimeZone();
}

std::string format_checked(const SerialTemplate& t, uint64_t seq, int64_t ms,
                           const TimeZone& zone) {
  const std::string serial = t.format(seq, ms, zone);
  IDFORGE_FUZZ_CHECK(
      serial.size() <= t.max_length(),
      "serial " + serial + " longer than max_length " + std::to_string(t.max_length()));
  for (char c : serial) {
    IDFORGE_FUZZ_CHECK(c >= 0x20 && c <= 0x7e, "unprintable byte in serial " + escaped(serial));
  }
  std::string appended = "x";
  t.append_to(appended, seq, ms, zone);
  IDFORGE_FUZZ_CHECK(appended == "x" + serial, "append_to differs from format");
  std::string digits = std::to_string(seq);
  if (digits.size() < static_cast<size_t>(t.seq_width())) {
    digits.insert(0, static_cast<size_t>(t.seq_width()) - digits.size(), '0');
  }
  IDFORGE_FUZZ_CHECK(serial.find(digits) != std::string::npos,
                     "serial " + serial + " does not hold " + digits);
  return serial;
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  using idforge::SerialTemplate;
  std::string_view rest = as_text(data, size);
  const std::string_view text = take_line(rest);
  const std::string_view seq_line = take_line(rest);
  const std::string_view ms_line = take_line(rest);
  const idforge::TimeZone zone = zone_of(take_line(rest));

  const idforge::Result<SerialTemplate> parsed = SerialTemplate::parse(text);
  if (!parsed.ok()) {
    IDFORGE_FUZZ_CHECK(!parsed.status().message().empty(), "an error without a message");
    return 0;
  }
  const SerialTemplate& t = *parsed;
  IDFORGE_FUZZ_CHECK(t.text() == text, "text() is not the template");
  IDFORGE_FUZZ_CHECK(text.size() <= SerialTemplate::kMaxTemplateLength, "template above the limit");
  IDFORGE_FUZZ_CHECK(t.seq_width() >= 0 && t.seq_width() <= SerialTemplate::kMaxSeqWidth,
                     "seq_width");

  const uint64_t seq = to_uint64(seq_line).value_or(hash64(seq_line));
  const int64_t ms =
      to_int64(ms_line).value_or(static_cast<int64_t>(hash64(ms_line) >> 20) - (int64_t{1} << 43));
  const std::string serial = format_checked(t, seq, ms, zone);

  // Another number at other times, the extremes included.
  const uint64_t other = seq == std::numeric_limits<uint64_t>::max() ? 0 : seq + 1;
  for (int64_t when : {ms, int64_t{0}, std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<int64_t>::max(), ms / 2 + 86'400'000}) {
    const std::string different = format_checked(t, other, when, zone);
    IDFORGE_FUZZ_CHECK(different != serial, "numbers " + std::to_string(seq) + " and " +
                                                std::to_string(other) + " both give " + serial);
    const std::string same = format_checked(t, seq, when, zone);
    if (!t.uses_time()) {
      IDFORGE_FUZZ_CHECK(same == serial, "a template without date fields depends on the time");
    }
  }
  return 0;
}
