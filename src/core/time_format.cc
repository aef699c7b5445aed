#include "idforge/time_format.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "calendar.h"
#include "parse_u64.h"
#include "quote.h"
#include "text.h"

namespace idforge {
namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kMsPerMinute = 60 * kMsPerSecond;
constexpr int64_t kMsPerHour = 60 * kMsPerMinute;
constexpr int64_t kMsPerDay = 24 * kMsPerHour;
constexpr int kMinYear = 0;
constexpr int kMaxYear = 9999;

constexpr bool is_leap(int64_t year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

constexpr int days_in_month(int64_t year, int month) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kDays[month - 1];
}

// Days from 0000-01-01 to January 1st of `year` (0..10000) in the proleptic Gregorian
// calendar, where year 0 is a leap year.
constexpr int64_t days_before_year(int64_t year) {
  if (year <= 0) return 0;
  const int64_t y = year - 1;
  return 365 * year + y / 4 - y / 100 + y / 400 + 1;
}

constexpr int64_t kDaysTo1970 = days_before_year(1970);
static_assert(kDaysTo1970 == 719528, "0000-01-01 is 719528 days before the Unix epoch");

// Days since 1970-01-01 of a valid date in years 0..9999.
constexpr int64_t days_from_civil(int64_t year, int month, int day) {
  int64_t days = days_before_year(year) - kDaysTo1970;
  for (int m = 1; m < month; ++m) days += days_in_month(year, m);
  return days + day - 1;
}

constexpr int64_t kMinMs = days_from_civil(kMinYear, 1, 1) * kMsPerDay;
constexpr int64_t kMaxMs = days_from_civil(kMaxYear + 1, 1, 1) * kMsPerDay - 1;

struct CivilDate {
  int64_t year;
  int month;
  int day;
};

// The inverse of days_from_civil for days inside years 0..9999. The mean Gregorian year
// (146097 days per 400 years) gives a guess at most one year off, corrected by
// comparing with days_before_year; then at most eleven month steps.
CivilDate civil_from_days(int64_t days) {
  const int64_t since_year0 = days + kDaysTo1970;
  int64_t year = since_year0 * 400 / 146097;
  while (days_before_year(year) > since_year0) --year;
  while (days_before_year(year + 1) <= since_year0) ++year;
  int64_t day_of_year = since_year0 - days_before_year(year);
  int month = 1;
  while (day_of_year >= days_in_month(year, month)) {
    day_of_year -= days_in_month(year, month);
    ++month;
  }
  return {year, month, static_cast<int>(day_of_year) + 1};
}

void append_padded(std::string& out, int64_t value, int width) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (int i = n; i < width; ++i) out += '0';
  while (n > 0) out += digits[--n];
}

std::string quote(std::string_view text) { return quote_text(text, '"'); }

// A cursor over ISO-8601 text; every reader returns false without consuming on mismatch.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool done() const { return pos_ == text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }

  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  // Exactly `count` digits.
  bool digits(int count, int* value) {
    if (text_.size() - pos_ < static_cast<size_t>(count)) return false;
    int v = 0;
    for (int i = 0; i < count; ++i) {
      const char c = text_[pos_ + static_cast<size_t>(i)];
      if (!text::is_digit(c)) return false;
      v = v * 10 + (c - '0');
    }
    pos_ += static_cast<size_t>(count);
    *value = v;
    return true;
  }

  // One or more digits read as a fraction of a second, truncated to milliseconds.
  bool fraction_ms(int* ms) {
    const size_t start = pos_;
    int value = 0;
    while (!done() && text::is_digit(peek())) {
      if (pos_ - start < 3) value = value * 10 + (peek() - '0');
      ++pos_;
    }
    const size_t n = pos_ - start;
    if (n == 0) return false;
    for (size_t i = n; i < 3; ++i) value *= 10;
    *ms = value;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

Status time_error(std::string_view text, std::string_view why) {
  std::string m = "time " + quote(text) + " ";
  m += why;
  return Status::InvalidArgument(std::move(m));
}

constexpr std::string_view kExpected =
    "is neither Unix ms nor an ISO-8601 time like 2017-09-20T13:43:08.849Z, "
    "2017-09-20 15:43:08+02:00 or 2017-09-20";

Result<int64_t> parse_decimal_ms(std::string_view text) {
  const bool negative = text[0] == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty()) return time_error(text, kExpected);
  Result<uint64_t> magnitude = parse_u64(digits, "time");
  if (!magnitude.ok()) return time_error(text, kExpected);
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (*magnitude > kMax + (negative ? 1 : 0)) {
    return time_error(text, "does not fit a 64-bit count of milliseconds");
  }
  if (negative) return static_cast<int64_t>(0 - *magnitude);
  return static_cast<int64_t>(*magnitude);
}

}  // namespace

std::string format_iso8601_utc(int64_t unix_ms) {
  if (unix_ms < kMinMs || unix_ms > kMaxMs) return std::to_string(unix_ms);
  // Floor division: the ms before 1970 belong to the earlier day.
  int64_t days = unix_ms / kMsPerDay;
  int64_t ms_of_day = unix_ms % kMsPerDay;
  if (ms_of_day < 0) {
    ms_of_day += kMsPerDay;
    --days;
  }
  const CivilDate date = civil_from_days(days);
  std::string out;
  out.reserve(24);
  append_padded(out, date.year, 4);
  out += '-';
  append_padded(out, date.month, 2);
  out += '-';
  append_padded(out, date.day, 2);
  out += 'T';
  append_padded(out, ms_of_day / kMsPerHour, 2);
  out += ':';
  append_padded(out, ms_of_day / kMsPerMinute % 60, 2);
  out += ':';
  append_padded(out, ms_of_day / kMsPerSecond % 60, 2);
  out += '.';
  append_padded(out, ms_of_day % kMsPerSecond, 3);
  out += 'Z';
  return out;
}

std::optional<CivilTime> civil_time_from_unix_ms(int64_t unix_ms) {
  if (unix_ms < kMinMs || unix_ms > kMaxMs) return std::nullopt;
  int64_t days = unix_ms / kMsPerDay;
  int64_t ms_of_day = unix_ms % kMsPerDay;
  if (ms_of_day < 0) {
    ms_of_day += kMsPerDay;
    --days;
  }
  const CivilDate date = civil_from_days(days);
  return CivilTime{static_cast<int>(date.year),
                   date.month,
                   date.day,
                   static_cast<int>(ms_of_day / kMsPerHour),
                   static_cast<int>(ms_of_day / kMsPerMinute % 60),
                   static_cast<int>(ms_of_day / kMsPerSecond % 60),
                   static_cast<int>(ms_of_day % kMsPerSecond)};
}

int64_t unix_days_from_civil(int year, int month, int day) {
  return days_from_civil(year, month, day);
}

Result<int64_t> parse_time(std::string_view text) {
  if (text.empty()) return time_error(text, kExpected);
  if (text[0] == '-' || std::all_of(text.begin(), text.end(), text::is_digit)) {
    return parse_decimal_ms(text);
  }

  Scanner s(text);
  int year = 0, month = 0, day = 0;
  if (!s.digits(4, &year) || !s.take('-') || !s.digits(2, &month) || !s.take('-') ||
      !s.digits(2, &day)) {
    return time_error(text, kExpected);
  }
  if (month < 1 || month > 12) {
    return time_error(text, "has month " + std::to_string(month) + ", not 01..12");
  }
  if (day < 1 || day > days_in_month(year, month)) {
    return time_error(text, "has day " + std::to_string(day) + ", which month " +
                                std::to_string(month) + " of " + std::to_string(year) +
                                " does not have");
  }
  int64_t ms = days_from_civil(year, month, day) * kMsPerDay;
  if (s.done()) return ms;  // date only: midnight UTC

  int hour = 0, minute = 0, second = 0, frac_ms = 0;
  if (!(s.take('T') || s.take('t') || s.take(' ')) || !s.digits(2, &hour) || !s.take(':') ||
      !s.digits(2, &minute)) {
    return time_error(text, kExpected);
  }
  if (s.take(':')) {
    if (!s.digits(2, &second)) return time_error(text, kExpected);
    if ((s.take('.') || s.take(',')) && !s.fraction_ms(&frac_ms)) {
      return time_error(text, kExpected);
    }
  }
  // Unix time has no leap seconds, so 23:59:60 has no number to map to.
  if (hour > 23 || minute > 59 || second > 59) {
    return time_error(text, "has a time of day outside 00:00:00..23:59:59");
  }
  ms += hour * kMsPerHour + minute * kMsPerMinute + second * kMsPerSecond + frac_ms;

  if (s.done() || s.take('Z') || s.take('z')) {
    if (!s.done()) return time_error(text, kExpected);
    return ms;
  }
  const char sign = s.peek();
  if (!(s.take('+') || s.take('-'))) return time_error(text, kExpected);
  int off_hours = 0, off_minutes = 0;
  if (!s.digits(2, &off_hours)) return time_error(text, kExpected);
  if (!s.done()) {
    s.take(':');  // ±HH:MM and ±HHMM are both ISO-8601
    if (!s.digits(2, &off_minutes) || !s.done()) return time_error(text, kExpected);
  }
  if (off_hours > 23 || off_minutes > 59) {
    return time_error(text, "has a zone offset outside -23:59..+23:59");
  }
  const int64_t offset = off_hours * kMsPerHour + off_minutes * kMsPerMinute;
  // Local time = UTC + offset, so UTC = local - offset.
  return sign == '+' ? ms - offset : ms + offset;
}

}  // namespace idforge
