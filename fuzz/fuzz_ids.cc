// The text forms of IDs and times: parse_id, parse_u64, parse_request_count,
// Uuid::parse, Ulid::parse, parse_time, and the calendar arithmetic under them. Every
// parser sees the whole input; the first 16 bytes also serve as a raw UUID/ULID and the
// first 8 as a Unix ms value. Checked:
// - parse_id and parse_u64 accept the same texts with the same values, and a value
//   written back is the text without leading zeros; a request count is within 1..max;
// - a parsed UUID or ULID prints to a text that parses back to it, equal to the input
//   up to case and the UUID's optional dashes, braces and urn prefix; any 16 bytes print
//   and parse back; inspect() and unix_ms() read the right bits;
// - a parsed time prints (format_iso8601_utc) to a text that parses back to the same ms,
//   for any int64 ms too; civil_time_from_unix_ms and unix_days_from_civil invert.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/calendar.h"
#include "core/parse_u64.h"
#include "fuzz_support.h"
#include "idforge/time_format.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/service/id_service.h"

namespace idforge::fuzz {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void check_numbers(std::string_view text) {
  const Result<uint64_t> id = server::parse_id(text);
  const Result<uint64_t> u64 = parse_u64(text, "ID");
  IDFORGE_FUZZ_CHECK(id.ok() == u64.ok(), "parse_id and parse_u64 disagree on " + escaped(text));
  if (id.ok()) {
    IDFORGE_FUZZ_CHECK(*id == *u64, "parse_id and parse_u64 read other values");
    const std::string back = std::to_string(*id);
    const size_t first = text.find_first_not_of('0');
    const std::string_view digits = first == std::string_view::npos ? "0" : text.substr(first);
    IDFORGE_FUZZ_CHECK(back == digits, "the ID does not print back as " + escaped(text));
  } else {
    IDFORGE_FUZZ_CHECK(!id.status().message().empty(), "an error without a message");
  }
  constexpr uint64_t kMax = 64;
  const Result<uint64_t> count = server::parse_request_count(text, kMax);
  if (count.ok()) {
    IDFORGE_FUZZ_CHECK(*count >= 1 && *count <= kMax, "count outside 1..max");
    IDFORGE_FUZZ_CHECK(text.empty() || (id.ok() && *id == *count), "count is not the number");
  }
}

void check_uuid(std::string_view text) {
  const Result<Uuid> parsed = Uuid::parse(text);
  if (!parsed.ok()) return;
  const std::string printed = parsed->to_string();
  IDFORGE_FUZZ_CHECK(printed.size() == 36, "UUID text of " + std::to_string(printed.size()));
  const Result<Uuid> again = Uuid::parse(printed);
  IDFORGE_FUZZ_CHECK(again.ok() && *again == *parsed, "UUID text does not parse back");
  // The input's hex digits, without the optional decorations, are the printed ones.
  std::string digits;
  std::string_view body = text;
  if (body.size() > 9 && lower(body.substr(0, 9)) == "urn:uuid:") body.remove_prefix(9);
  for (char c : body) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  }
  std::string printed_digits;
  for (char c : printed) {
    if (c != '-') printed_digits += c;
  }
  IDFORGE_FUZZ_CHECK(lower(digits) == printed_digits,
                     "UUID " + escaped(text) + " printed as " + printed);
  const UuidInfo info = inspect(*parsed);
  IDFORGE_FUZZ_CHECK(info.version == parsed->version(), "inspect() version");
  if (info.version == 7 && info.rfc_variant) {
    int64_t ms = 0;
    for (int i = 0; i < 6; ++i) ms = (ms << 8) | parsed->bytes[static_cast<size_t>(i)];
    IDFORGE_FUZZ_CHECK(info.unix_ms == ms, "UUIDv7 time is not its top 48 bits");
  }
}

void check_ulid(std::string_view text) {
  const Result<Ulid> parsed = Ulid::parse(text);
  if (!parsed.ok()) return;
  const std::string printed = parsed->to_string();
  IDFORGE_FUZZ_CHECK(printed == upper(text), "ULID " + escaped(text) + " printed as " + printed);
  const Result<Ulid> again = Ulid::parse(printed);
  IDFORGE_FUZZ_CHECK(again.ok() && *again == *parsed, "ULID text does not parse back");
}

void check_raw_16(const std::array<uint8_t, 16>& bytes) {
  Uuid uuid;
  uuid.bytes = bytes;
  const Result<Uuid> uuid_back = Uuid::parse(uuid.to_string());
  IDFORGE_FUZZ_CHECK(uuid_back.ok() && *uuid_back == uuid, "UUID of any bytes: no round trip");
  (void)inspect(uuid);
  Ulid ulid;
  ulid.bytes = bytes;
  const std::string text = ulid.to_string();
  IDFORGE_FUZZ_CHECK(text.size() == 26, "ULID text of " + std::to_string(text.size()));
  const Result<Ulid> ulid_back = Ulid::parse(text);
  IDFORGE_FUZZ_CHECK(ulid_back.ok() && *ulid_back == ulid, "ULID of any bytes: no round trip");
  int64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = (ms << 8) | bytes[static_cast<size_t>(i)];
  IDFORGE_FUZZ_CHECK(ulid.unix_ms() == ms, "ULID time is not its top 48 bits");
}

void check_time_ms(int64_t ms) {
  const std::string text = format_iso8601_utc(ms);
  const Result<int64_t> back = parse_time(text);
  IDFORGE_FUZZ_CHECK(back.ok() && *back == ms,
                     std::to_string(ms) + " printed as " + text + " does not parse back");
  const std::optional<CivilTime> civil = civil_time_from_unix_ms(ms);
  if (!civil) return;
  const CivilTime& c = *civil;
  IDFORGE_FUZZ_CHECK(c.year >= 0 && c.year <= 9999 && c.month >= 1 && c.month <= 12 && c.day >= 1 &&
                         c.day <= 31 && c.hour >= 0 && c.hour < 24 && c.minute >= 0 &&
                         c.minute < 60 && c.second >= 0 && c.second < 60 && c.millisecond >= 0 &&
                         c.millisecond < 1000,
                     "civil time out of range for " + std::to_string(ms));
  const int64_t days = unix_days_from_civil(c.year, c.month, c.day);
  const int64_t again =
      days * 86'400'000 + c.hour * 3'600'000 + c.minute * 60'000 + c.second * 1000 + c.millisecond;
  IDFORGE_FUZZ_CHECK(again == ms, "civil time of " + std::to_string(ms) + " is not its inverse");
}

void check_time_text(std::string_view text) {
  const Result<int64_t> parsed = parse_time(text);
  if (!parsed.ok()) {
    IDFORGE_FUZZ_CHECK(!parsed.status().message().empty(), "an error without a message");
    return;
  }
  check_time_ms(*parsed);
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  const std::string_view text = as_text(data, size);
  check_numbers(text);
  check_uuid(text);
  check_ulid(text);
  check_time_text(text);
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), data, std::min(size, raw.size()));
  check_raw_16(raw);
  int64_t ms = 0;
  std::memcpy(&ms, raw.data(), sizeof ms);
  check_time_ms(ms);
  return 0;
}
