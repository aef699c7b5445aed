#include "idforge/time_zone.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calendar.h"
#include "quote.h"

namespace idforge {
namespace {

constexpr int64_t kSecondsPerDay = 86400;
constexpr int32_t kSecondsPerHour = 3600;
// tzfile(5): offsets should lie in -89999..93599 (just over a day either way); anything
// outside is a corrupt file, and rejecting it keeps the local-time arithmetic far from
// overflow.
constexpr int32_t kMinUtcOffset = -89999;
constexpr int32_t kMaxUtcOffset = 93599;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b < 0) --q;
  return q;
}

// ---- POSIX TZ rules -------------------------------------------------------------------

// One end of the DST period: a day of the year and a local time on it.
struct RuleDate {
  enum class Kind { kJulian, kZeroBased, kMonthWeekDay };
  Kind kind = Kind::kMonthWeekDay;
  int day = 0;  // Jn: 1..365 (Feb 29 never counted); n: 0..365
  int month = 0;
  int week = 0;     // 1..5, 5 = the last such weekday of the month
  int weekday = 0;  // 0 = Sunday
  int32_t time = 2 * kSecondsPerHour;
};

struct PosixRule {
  int32_t std_offset = 0;  // seconds east of UTC (the POSIX text has the opposite sign)
  bool has_dst = false;
  int32_t dst_offset = 0;
  RuleDate start;  // local standard time
  RuleDate end;    // local daylight time
};

// The rule is evaluated by calendar year; outside 0001-01-01..9999-01-01 a zone keeps
// standard time, which no one will notice and which keeps the date arithmetic (years
// 0..9999, plus one for December) in its range. Literals rather than calls, so no static
// initialization order is involved.
constexpr int64_t kMinRuleSeconds = -719162 * kSecondsPerDay;
constexpr int64_t kMaxRuleSeconds = 2932532 * kSecondsPerDay;

int64_t rule_day(const RuleDate& d, int year) {
  const int64_t jan1 = unix_days_from_civil(year, 1, 1);
  switch (d.kind) {
    case RuleDate::Kind::kJulian: {
      const bool leap = unix_days_from_civil(year, 3, 1) - unix_days_from_civil(year, 2, 1) == 29;
      return jan1 + d.day - 1 + (leap && d.day >= 60 ? 1 : 0);
    }
    case RuleDate::Kind::kZeroBased:
      return jan1 + d.day;
    case RuleDate::Kind::kMonthWeekDay:
      break;
  }
  const int64_t first = unix_days_from_civil(year, d.month, 1);
  const int64_t next = d.month == 12 ? unix_days_from_civil(year + 1, 1, 1)
                                     : unix_days_from_civil(year, d.month + 1, 1);
  // 1970-01-01 was a Thursday (weekday 4).
  const auto first_weekday = static_cast<int>(first + 4 - floor_div(first + 4, 7) * 7);
  int64_t day = first + (d.weekday - first_weekday + 7) % 7 + 7 * (d.week - 1);
  while (day >= next) day -= 7;
  return day;
}

int32_t evaluate(const PosixRule& r, int64_t unix_seconds) {
  if (!r.has_dst) return r.std_offset;
  const int64_t local = unix_seconds + r.std_offset;
  if (local < kMinRuleSeconds || local >= kMaxRuleSeconds) return r.std_offset;
  const int year = civil_time_from_unix_ms(local * 1000)->year;
  const int64_t start = rule_day(r.start, year) * kSecondsPerDay + r.start.time - r.std_offset;
  const int64_t end = rule_day(r.end, year) * kSecondsPerDay + r.end.time - r.dst_offset;
  // Southern-hemisphere rules start DST late in the year and end it early in the next.
  const bool dst = start <= end ? (unix_seconds >= start && unix_seconds < end)
                                : (unix_seconds < end || unix_seconds >= start);
  return dst ? r.dst_offset : r.std_offset;
}

// A cursor over a POSIX TZ string; on failure `error_` says what was expected where.
class PosixParser {
 public:
  explicit PosixParser(std::string_view text) : text_(text) {}

  std::optional<PosixRule> parse() {
    PosixRule r;
    if (!rule(&r)) return std::nullopt;
    return r;
  }

  const std::string& error() const { return error_; }

 private:
  bool rule(PosixRule* out) {
    PosixRule& r = *out;
    int32_t value = 0;
    if (!name() || !hms(24, &value, "a UTC offset like 5, -8 or 3:30")) return false;
    r.std_offset = -value;
    if (done()) return true;
    if (!name()) return false;
    r.has_dst = true;
    // POSIX: without an explicit DST offset, DST is one hour ahead of standard time.
    r.dst_offset = r.std_offset + kSecondsPerHour;
    if (!done() && text_[pos_] != ',') {
      if (!hms(24, &value, "a DST offset or ','")) return false;
      r.dst_offset = -value;
    }
    if (!take(',')) return fail("',' and the DST start (a DST name needs its rule)");
    if (!date(&r.start)) return false;
    if (!take(',')) return fail("',' and the DST end");
    if (!date(&r.end)) return false;
    if (!done()) return fail("the end of the rule");
    return true;
  }

  bool done() const { return pos_ == text_.size(); }
  bool take(char c) {
    if (done() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // Records what was expected at the current position; always false.
  bool fail(std::string_view expected) { return fail_at(pos_, expected); }
  bool fail_at(size_t at, std::string_view expected) {
    pos_ = at;
    error_ = "expected " + std::string(expected) + " at position " + std::to_string(at + 1);
    return false;
  }

  // "EST", or "<+0330>" for names that are not all letters.
  bool name() {
    const size_t start = pos_;
    if (take('<')) {
      while (!done() && (is_alpha(text_[pos_]) || is_digit(text_[pos_]) || text_[pos_] == '+' ||
                         text_[pos_] == '-')) {
        ++pos_;
      }
      if (pos_ - start - 1 < 3 || !take('>')) {
        pos_ = start;
        return fail("a zone name of 3 or more letters, digits or signs inside <>");
      }
      return true;
    }
    while (!done() && is_alpha(text_[pos_])) ++pos_;
    if (pos_ - start < 3) {
      pos_ = start;
      return fail("a zone name of 3 or more letters");
    }
    return true;
  }

  // Up to `max_digits` digits, at least one.
  bool number(int max_digits, int* value) {
    int n = 0;
    int v = 0;
    while (n < max_digits && !done() && is_digit(text_[pos_])) {
      v = v * 10 + (text_[pos_] - '0');
      ++pos_;
      ++n;
    }
    *value = v;
    return n > 0;
  }

  // [+-]h[h[h]][:mm[:ss]] in seconds, hours at most `max_hours`.
  bool hms(int max_hours, int32_t* seconds, std::string_view what) {
    const size_t start = pos_;
    const bool negative = take('-');
    if (!negative) take('+');
    int h = 0, m = 0, s = 0;
    bool ok = number(max_hours > 99 ? 3 : 2, &h) && h <= max_hours;
    if (ok && take(':')) ok = number(2, &m) && m <= 59;
    if (ok && take(':')) ok = number(2, &s) && s <= 59;
    if (!ok) {
      pos_ = start;
      return fail(what);
    }
    *seconds = (negative ? -1 : 1) * (h * kSecondsPerHour + m * 60 + s);
    return true;
  }

  // Errors point at the start of the part that is wrong, not where reading stopped.
  bool date(RuleDate* d) {
    int v = 0;
    size_t at = pos_;
    if (take('J')) {
      at = pos_;
      if (!number(3, &v) || v < 1 || v > 365) return fail_at(at, "a day J1..J365");
      d->kind = RuleDate::Kind::kJulian;
      d->day = v;
    } else if (take('M')) {
      d->kind = RuleDate::Kind::kMonthWeekDay;
      at = pos_;
      if (!number(2, &d->month) || d->month < 1 || d->month > 12) {
        return fail_at(at, "a month 1..12 after 'M'");
      }
      at = pos_;
      if (!take('.') || !number(1, &d->week) || d->week < 1 || d->week > 5) {
        return fail_at(at, "'.' and a week 1..5");
      }
      at = pos_;
      if (!take('.') || !number(1, &d->weekday) || d->weekday > 6) {
        return fail_at(at, "'.' and a weekday 0..6");
      }
    } else {
      if (!number(3, &v) || v > 365) return fail_at(at, "a date Jn, n or Mm.w.d");
      d->kind = RuleDate::Kind::kZeroBased;
      d->day = v;
    }
    // RFC 8536 extends the hours of a rule time to -167..167.
    if (take('/') && !hms(167, &d->time, "a time like 2 or 2:00:00 after '/'")) return false;
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

// ---- TZif -----------------------------------------------------------------------------

struct TzifHeader {
  char version = 0;
  uint32_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;

  // Bytes of the data block that follows, for 4- or 8-byte times.
  uint64_t block_size(uint64_t time_size) const {
    return uint64_t{timecnt} * time_size + timecnt + uint64_t{typecnt} * 6 + charcnt +
           uint64_t{leapcnt} * (time_size + 4) + isstdcnt + isutcnt;
  }
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  bool has(uint64_t n) const { return n <= remaining(); }
  std::string_view take(size_t n) {
    const std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t big_endian(size_t n) {
    uint64_t v = 0;
    for (const char c : take(n)) v = v << 8 | static_cast<unsigned char>(c);
    return v;
  }
  void skip(uint64_t n) { pos_ += static_cast<size_t>(n); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class TzifParser {
 public:
  TzifParser(std::string_view bytes, const std::string& name) : in_(bytes), name_(name) {}

  Result<std::shared_ptr<const TimeZone::Rules>> parse();

 private:
  Status error(std::string_view why) const {
    return Status::InvalidArgument("time zone file " + quote_text(name_) + ": " + std::string(why));
  }
  Status truncated(uint64_t needed) const {
    return error("truncated at byte " + std::to_string(in_.pos()) + " (needs " +
                 std::to_string(needed) + " more bytes, has " + std::to_string(in_.remaining()) +
                 ")");
  }

  Result<TzifHeader> header();
  Status data_block(const TzifHeader& h, int time_size, TimeZone::Rules* rules);

  ByteReader in_;
  const std::string& name_;
};

}  // namespace

struct TimeZone::Rules {
  int32_t initial_offset = 0;        // before the first transition
  std::vector<int64_t> transitions;  // Unix seconds, strictly ascending
  std::vector<int32_t> offsets;      // in effect from transitions[i]
  std::optional<PosixRule> rule;     // after the last transition
};

namespace {

Result<TzifHeader> TzifParser::header() {
  constexpr size_t kHeaderSize = 44;
  if (!in_.has(kHeaderSize)) return truncated(kHeaderSize);
  if (in_.take(4) != "TZif") return error("not a TZif file (no 'TZif' magic)");
  TzifHeader h;
  h.version = in_.take(1)[0];
  if (h.version != '\0' && (h.version < '2' || h.version > '4')) {
    return error("unsupported TZif version byte " + std::to_string(static_cast<int>(h.version)));
  }
  in_.skip(15);
  h.isutcnt = static_cast<uint32_t>(in_.big_endian(4));
  h.isstdcnt = static_cast<uint32_t>(in_.big_endian(4));
  h.leapcnt = static_cast<uint32_t>(in_.big_endian(4));
  h.timecnt = static_cast<uint32_t>(in_.big_endian(4));
  h.typecnt = static_cast<uint32_t>(in_.big_endian(4));
  h.charcnt = static_cast<uint32_t>(in_.big_endian(4));
  if (h.typecnt == 0) return error("has no local time types");
  if (h.isutcnt != 0 && h.isutcnt != h.typecnt) return error("isutcnt is neither 0 nor typecnt");
  if (h.isstdcnt != 0 && h.isstdcnt != h.typecnt) {
    return error("isstdcnt is neither 0 nor typecnt");
  }
  return h;
}

Status TzifParser::data_block(const TzifHeader& h, int time_size, TimeZone::Rules* rules) {
  const uint64_t size = h.block_size(static_cast<uint64_t>(time_size));
  if (!in_.has(size)) return truncated(size);
  // Unix time has no leap seconds; a file that counts them has transition times that
  // are not Unix times.
  if (h.leapcnt != 0) return error("has leap-second records (a right/ zone); not supported");

  rules->transitions.resize(h.timecnt);
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    const uint64_t raw = in_.big_endian(static_cast<size_t>(time_size));
    rules->transitions[i] = time_size == 8 ? static_cast<int64_t>(raw)
                                           : static_cast<int32_t>(static_cast<uint32_t>(raw));
    if (i > 0 && rules->transitions[i] <= rules->transitions[i - 1]) {
      return error("transition times are not strictly ascending");
    }
  }
  std::vector<uint8_t> type_of(h.timecnt);
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    type_of[i] = static_cast<uint8_t>(in_.big_endian(1));
    if (type_of[i] >= h.typecnt)
      return error("a transition names a local time type that is not there");
  }
  std::vector<int32_t> type_offsets(h.typecnt);
  for (uint32_t i = 0; i < h.typecnt; ++i) {
    const auto utoff = static_cast<int32_t>(static_cast<uint32_t>(in_.big_endian(4)));
    const uint64_t isdst = in_.big_endian(1);
    const uint64_t desigidx = in_.big_endian(1);
    if (utoff < kMinUtcOffset || utoff > kMaxUtcOffset) {
      return error("UTC offset " + std::to_string(utoff) + " s is outside -89999..93599");
    }
    if (isdst > 1) return error("isdst is neither 0 nor 1");
    if (desigidx >= h.charcnt) return error("an abbreviation index points past the names");
    type_offsets[i] = utoff;
  }
  rules->initial_offset = type_offsets[0];
  rules->offsets.resize(h.timecnt);
  for (uint32_t i = 0; i < h.timecnt; ++i) rules->offsets[i] = type_offsets[type_of[i]];
  // Abbreviations, leap seconds (none) and the standard/UT indicators are not needed:
  // the indicators only matter when a POSIX TZ string without rules is combined with
  // the file, which this class does not do.
  in_.skip(uint64_t{h.charcnt} + h.isstdcnt + h.isutcnt);
  return Status::Ok();
}

Result<std::shared_ptr<const TimeZone::Rules>> TzifParser::parse() {
  Result<TzifHeader> first = header();
  if (!first.ok()) return first.status();
  auto rules = std::make_shared<TimeZone::Rules>();
  if (first->version == '\0') {
    IDFORGE_RETURN_IF_ERROR(data_block(*first, 4, rules.get()));
    return std::shared_ptr<const TimeZone::Rules>(std::move(rules));
  }

  // Version 2+: the 32-bit block is only for old readers; skip to the 64-bit one.
  const uint64_t v1_size = first->block_size(4);
  if (!in_.has(v1_size)) return truncated(v1_size);
  in_.skip(v1_size);
  Result<TzifHeader> second = header();
  if (!second.ok()) return second.status();
  IDFORGE_RETURN_IF_ERROR(data_block(*second, 8, rules.get()));

  if (!in_.has(1) || in_.take(1) != "\n") return error("the footer does not start with a newline");
  const std::string_view rest = in_.take(in_.remaining());
  const size_t newline = rest.find('\n');
  if (newline == std::string_view::npos) return error("the footer does not end with a newline");
  const std::string_view footer = rest.substr(0, newline);
  if (!footer.empty()) {
    PosixParser p(footer);
    std::optional<PosixRule> rule = p.parse();
    if (!rule) return error("footer rule " + quote_text(footer) + ": " + p.error());
    rules->rule = *rule;
  }
  return std::shared_ptr<const TimeZone::Rules>(std::move(rules));
}

std::string format_offset(int32_t seconds) {
  std::string out(1, seconds < 0 ? '-' : '+');
  const int32_t abs = seconds < 0 ? -seconds : seconds;
  const int32_t h = abs / kSecondsPerHour;
  const int32_t m = abs / 60 % 60;
  out += static_cast<char>('0' + h / 10);
  out += static_cast<char>('0' + h % 10);
  out += ':';
  out += static_cast<char>('0' + m / 10);
  out += static_cast<char>('0' + m % 10);
  return out;
}

}  // namespace

Result<TimeZone> TimeZone::fixed(std::string_view text) {
  if (text == "UTC" || text == "Z") return TimeZone();
  auto bad = [&]() {
    return Status::InvalidArgument("time zone " + quote_text(text) +
                                   " is not UTC, Z or an offset like +08:00, -0530 or +08");
  };
  auto two_digits = [&](size_t at, int* v) {
    if (at + 2 > text.size() || !is_digit(text[at]) || !is_digit(text[at + 1])) return false;
    *v = (text[at] - '0') * 10 + (text[at + 1] - '0');
    return true;
  };
  if (text.empty() || (text[0] != '+' && text[0] != '-')) return bad();
  int hours = 0, minutes = 0;
  if (!two_digits(1, &hours)) return bad();
  if (text.size() > 3) {
    const size_t at = text[3] == ':' ? 4 : 3;
    if (!two_digits(at, &minutes) || text.size() != at + 2) return bad();
  }
  if (hours > 23 || minutes > 59) {
    return Status::InvalidArgument("time zone " + quote_text(text) + " is outside -23:59..+23:59");
  }
  const int32_t seconds = (text[0] == '-' ? -1 : 1) * (hours * kSecondsPerHour + minutes * 60);
  return TimeZone(format_offset(seconds), seconds, nullptr);
}

Result<TimeZone> TimeZone::from_posix_tz(std::string_view rule) {
  PosixParser p(rule);
  std::optional<PosixRule> parsed = p.parse();
  if (!parsed) {
    return Status::InvalidArgument("POSIX TZ rule " + quote_text(rule) + ": " + p.error());
  }
  if (!parsed->has_dst) return TimeZone(std::string(rule), parsed->std_offset, nullptr);
  auto rules = std::make_shared<Rules>();
  rules->initial_offset = parsed->std_offset;
  rules->rule = *parsed;
  return TimeZone(std::string(rule), parsed->std_offset, std::move(rules));
}

Result<TimeZone> TimeZone::from_tzif(std::string_view bytes, std::string name) {
  Result<std::shared_ptr<const Rules>> rules = TzifParser(bytes, name).parse();
  if (!rules.ok()) return rules.status();
  const int32_t initial = (*rules)->initial_offset;
  return TimeZone(std::move(name), initial, std::move(*rules));
}

int32_t TimeZone::offset_seconds_at(int64_t unix_ms) const {
  if (!rules_) return fixed_offset_;
  const Rules& r = *rules_;
  const int64_t t = floor_div(unix_ms, 1000);
  if (r.transitions.empty()) return r.rule ? evaluate(*r.rule, t) : r.initial_offset;
  if (t < r.transitions.front()) return r.initial_offset;
  if (t > r.transitions.back() && r.rule) return evaluate(*r.rule, t);
  const auto it = std::upper_bound(r.transitions.begin(), r.transitions.end(), t);
  return r.offsets[static_cast<size_t>(it - r.transitions.begin()) - 1];
}

}  // namespace idforge
