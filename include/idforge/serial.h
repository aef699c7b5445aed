// SerialTemplate: turns a segment tag's numbers into business serial numbers.
//
//   auto t = SerialTemplate::parse("PAY{yyyyMMdd}{seq:08}");   // once, when the tag is created
//   t->format(42, now_ms, zone)                                // "PAY2026112200000042"
//
// Template syntax (at most kMaxTemplateLength bytes):
//   {seq}            the number in decimal, no padding
//   {seq:N} {seq:0N} the number zero-padded to N digits, N in 1..20. A number with more
//                    than N digits is printed in full, never truncated: {seq:03} gives
//                    "007" for 7 and "12345" for 12345.
//   {yyyy} {yy} {MM} {dd} {HH} {mm} {ss} {SSS}
//                    year, two-digit year, month, day, hour (00-23), minute, second and
//                    millisecond of the local time in the given zone; letters as in
//                    Java, exactly these widths. Several may share one brace: {yyyyMMdd},
//                    {HHmmss}, {HHmmssSSS}; a run of one letter is one field, so {MMMM}
//                    is an error, not MM twice. Separators go outside: {yyyy}-{MM}-{dd}.
//   {{ and }}        a literal '{' or '}'
//   anything else    printable ASCII (0x20-0x7e) copied as is
// {seq} must appear exactly once: a serial without the number would not be unique.
//
// Every part except the number has a fixed width (years are clamped to 0000..9999), so
// two different numbers always give two different serials, whatever the times.
//
// A SerialTemplate is immutable; multiple threads may call const methods on the same
// object without synchronization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"
#include "idforge/time_zone.h"

namespace idforge {

class SerialTemplate {
 public:
  static constexpr size_t kMaxTemplateLength = 128;
  static constexpr int kMaxSeqWidth = 20;  // digits in the largest uint64_t

  // Checks the whole template once. An error is an InvalidArgument that quotes the
  // template and gives the 1-based position and what was expected there, e.g.
  // "template 'PAY{yyyMMdd}{seq}': unknown date pattern 'yyy' at position 5 (use yyyy,
  // yy, MM, dd, HH, mm, ss, SSS)".
  static Result<SerialTemplate> parse(std::string_view text);

  // The serial for `seq` at `unix_ms`, date fields in local time of `zone`. Instants
  // whose local date falls outside years 0000..9999 print as the nearest end of that
  // range. Never fails.
  std::string format(uint64_t seq, int64_t unix_ms, const TimeZone& zone = TimeZone()) const;

  // As format, appending to `out` (reuse one buffer for a batch).
  void append_to(std::string& out, uint64_t seq, int64_t unix_ms,
                 const TimeZone& zone = TimeZone()) const;

  // The template as given to parse.
  const std::string& text() const { return text_; }

  // An upper bound on the length of any serial it formats (the number counted at 20
  // digits): a size for a database column.
  size_t max_length() const { return max_length_; }

  // False when the template has no date or time fields, so the time and zone are unused.
  bool uses_time() const { return uses_time_; }

  // The N of {seq:N}, or 0 for plain {seq}.
  int seq_width() const { return seq_width_; }

 private:
  enum class PieceKind : uint8_t {
    kText,
    kYear4,
    kYear2,
    kMonth,
    kDay,
    kHour,
    kMinute,
    kSecond,
    kMillisecond,
    kSeq,
  };
  struct Piece {
    PieceKind kind;
    std::string text;  // kText only
  };
  class Parser;

  SerialTemplate() = default;

  std::string text_;
  std::vector<Piece> pieces_;
  size_t max_length_ = 0;
  bool uses_time_ = false;
  int seq_width_ = 0;
};

}  // namespace idforge
