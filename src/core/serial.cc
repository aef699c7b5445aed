#include "idforge/serial.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "calendar.h"
#include "quote.h"
#include "text.h"

namespace idforge {
namespace {

constexpr int64_t kMsPerDay = 86'400'000;
constexpr int64_t kMsPerSecond = 1000;
// The instants whose date lies in years 0000..9999 (days from 1970-01-01 to 0000-01-01
// and to 10000-01-01), the range of the civil-date arithmetic. A zone offset moves a
// date by little more than a day, so clamping UTC to two days beyond the range first
// keeps the addition far from overflow.
constexpr int64_t kMinMs = -719528 * kMsPerDay;
constexpr int64_t kMaxMs = 2932897 * kMsPerDay - 1;

constexpr std::string_view kDatePatterns = "(use yyyy, yy, MM, dd, HH, mm, ss, SSS)";

std::string hex_byte(unsigned char c) {
  constexpr char kHex[] = "0123456789abcdef";
  return {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
}

bool is_printable(char c) { return c >= 0x20 && c < 0x7f; }

std::string quote(std::string_view text) { return quote_text(text, '\'', 160); }

// How a character is named in a message: 'x', or \x0a for one that would not print.
std::string describe(char c) {
  if (is_printable(c)) return std::string{'\'', c, '\''};
  return hex_byte(static_cast<unsigned char>(c));
}

void append_padded(std::string& out, uint64_t value, int width) {
  char digits[20];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  const auto n = static_cast<int>(end - digits);
  if (n < width) out.append(static_cast<size_t>(width - n), '0');
  out.append(digits, end);
}

}  // namespace

// Turns template text into pieces. Positions in messages are 1-based byte offsets into
// the whole template.
class SerialTemplate::Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<SerialTemplate> parse() {
    if (text_.size() > kMaxTemplateLength) {
      return error("is " + std::to_string(text_.size()) + " characters long, over the limit of " +
                   std::to_string(kMaxTemplateLength) + " (the excess starts at position " +
                   std::to_string(kMaxTemplateLength + 1) + ")");
    }
    if (text_.empty()) return error("is empty (expected text and a {seq}, e.g. PAY{seq:08})");
    out_.text_ = std::string(text_);
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      const bool doubled = i + 1 < text_.size() && text_[i + 1] == c;
      if (c == '{' && doubled) {
        add_text('{');
        i += 2;
      } else if (c == '}' && doubled) {
        add_text('}');
        i += 2;
      } else if (c == '}') {
        return error_at(i, "unmatched '}'", "(write }} for a literal '}')");
      } else if (c == '{') {
        const size_t close = text_.find('}', i + 1);
        if (close == std::string_view::npos) {
          return error_at(i, "unclosed '{'", "(write {{ for a literal '{')");
        }
        IDFORGE_RETURN_IF_ERROR(placeholder(i, close));
        i = close + 1;
      } else if (!is_printable(c)) {
        return error_at(i, "character " + describe(c), "is not printable ASCII");
      } else {
        add_text(c);
        ++i;
      }
    }
    if (!seen_seq_) {
      return error(
          "has no {seq}: a serial without the number is not unique (add {seq} or {seq:08})");
    }
    size_t max = 0;
    for (const Piece& p : out_.pieces_) max += width(p);
    out_.max_length_ = max;
    return std::move(out_);
  }

 private:
  Status error(std::string_view why) const {
    return Status::InvalidArgument("template " + quote(text_) + ": " + std::string(why));
  }
  // "<what> at position <i+1> <hint>"
  Status error_at(size_t i, std::string_view what, std::string_view hint) const {
    std::string m(what);
    m += " at position " + std::to_string(i + 1);
    if (!hint.empty()) {
      m += ' ';
      m += hint;
    }
    return error(m);
  }

  void add_text(char c) {
    if (out_.pieces_.empty() || out_.pieces_.back().kind != PieceKind::kText) {
      out_.pieces_.push_back({PieceKind::kText, {}});
    }
    out_.pieces_.back().text += c;
  }

  size_t width(const Piece& p) const {
    switch (p.kind) {
      case PieceKind::kText:
        return p.text.size();
      case PieceKind::kYear4:
        return 4;
      case PieceKind::kMillisecond:
        return 3;
      case PieceKind::kSeq:
        return kMaxSeqWidth;  // a padded number is at most 20 digits too
      default:
        return 2;
    }
  }

  // The placeholder between text_[open] == '{' and text_[close] == '}'.
  Status placeholder(size_t open, size_t close) {
    const std::string_view body = text_.substr(open + 1, close - open - 1);
    if (body.empty()) return error_at(open, "empty placeholder '{}'", "(write {{}} for '{}')");
    if (const size_t nested = body.find('{'); nested != std::string_view::npos) {
      return error_at(open + 1 + nested,
                      "'{' inside the placeholder opened at position " + std::to_string(open + 1),
                      "(write {{ for a literal '{')");
    }
    if (body.substr(0, 3) == "seq") return seq(open, close);
    size_t i = open + 1;
    while (i < close) {
      const char c = text_[i];
      if (!text::is_alpha(c)) {
        return error_at(i, "unexpected " + describe(c),
                        "in a date placeholder (put separators outside the braces, e.g. "
                        "{yyyy}-{MM}-{dd})");
      }
      size_t run = 1;
      while (i + run < close && text_[i + run] == c) ++run;
      const std::optional<PieceKind> kind = date_field(c, run);
      if (!kind) {
        return error_at(i, "unknown date pattern '" + std::string(text_.substr(i, run)) + "'",
                        kDatePatterns);
      }
      out_.pieces_.push_back({*kind, {}});
      out_.uses_time_ = true;
      i += run;
    }
    return Status::Ok();
  }

  static std::optional<PieceKind> date_field(char letter, size_t run) {
    struct DateField {
      char letter;
      size_t run;
      PieceKind kind;
    };
    static constexpr DateField kFields[] = {
        {'y', 4, PieceKind::kYear4},  {'y', 2, PieceKind::kYear2},
        {'M', 2, PieceKind::kMonth},  {'d', 2, PieceKind::kDay},
        {'H', 2, PieceKind::kHour},   {'m', 2, PieceKind::kMinute},
        {'s', 2, PieceKind::kSecond}, {'S', 3, PieceKind::kMillisecond},
    };
    for (const DateField& f : kFields) {
      if (f.letter == letter && f.run == run) return f.kind;
    }
    return std::nullopt;
  }

  // {seq}, {seq:N} or {seq:0N}; text_[open + 1..] starts with "seq".
  Status seq(size_t open, size_t close) {
    if (seen_seq_) {
      return error_at(open, "second {seq}",
                      "(a template has exactly one, so each serial is unique)");
    }
    seen_seq_ = true;
    size_t i = open + 4;  // after "{seq"
    int width = 0;
    if (i < close) {
      if (text_[i] != ':') {
        return error_at(i, "unexpected " + describe(text_[i]),
                        "after 'seq' (expected '}' or ':N')");
      }
      ++i;
      const size_t digits_start = i;
      while (i < close && text::is_digit(text_[i])) {
        width = std::min(width * 10 + (text_[i] - '0'), 1000);  // capped: it only has to fail
        ++i;
      }
      if (i == digits_start) {
        return error_at(i, "expected a width 1..20 after 'seq:'",
                        i < close ? "(found " + describe(text_[i]) + ")" : "");
      }
      if (width < 1 || width > kMaxSeqWidth) {
        return error_at(digits_start,
                        "seq width " + std::string(text_.substr(digits_start, i - digits_start)),
                        "is outside 1..20");
      }
      if (i < close) {
        return error_at(i, "unexpected " + describe(text_[i]),
                        "after the seq width (expected '}')");
      }
    }
    out_.seq_width_ = width;
    out_.pieces_.push_back({PieceKind::kSeq, {}});
    return Status::Ok();
  }

  std::string_view text_;
  SerialTemplate out_;
  bool seen_seq_ = false;
};

Result<SerialTemplate> SerialTemplate::parse(std::string_view text) { return Parser(text).parse(); }

std::string SerialTemplate::format(uint64_t seq, int64_t unix_ms, const TimeZone& zone) const {
  std::string out;
  out.reserve(max_length_);
  append_to(out, seq, unix_ms, zone);
  return out;
}

void SerialTemplate::append_to(std::string& out, uint64_t seq, int64_t unix_ms,
                               const TimeZone& zone) const {
  CivilTime t{};
  if (uses_time_) {
    const int64_t utc = std::clamp(unix_ms, kMinMs - 2 * kMsPerDay, kMaxMs + 2 * kMsPerDay);
    const int64_t local =
        std::clamp(utc + int64_t{zone.offset_seconds_at(utc)} * kMsPerSecond, kMinMs, kMaxMs);
    t = *civil_time_from_unix_ms(local);
  }
  for (const Piece& p : pieces_) {
    switch (p.kind) {
      case PieceKind::kText:
        out += p.text;
        break;
      case PieceKind::kYear4:
        append_padded(out, static_cast<uint64_t>(t.year), 4);
        break;
      case PieceKind::kYear2:
        append_padded(out, static_cast<uint64_t>(t.year % 100), 2);
        break;
      case PieceKind::kMonth:
        append_padded(out, static_cast<uint64_t>(t.month), 2);
        break;
      case PieceKind::kDay:
        append_padded(out, static_cast<uint64_t>(t.day), 2);
        break;
      case PieceKind::kHour:
        append_padded(out, static_cast<uint64_t>(t.hour), 2);
        break;
      case PieceKind::kMinute:
        append_padded(out, static_cast<uint64_t>(t.minute), 2);
        break;
      case PieceKind::kSecond:
        append_padded(out, static_cast<uint64_t>(t.second), 2);
        break;
      case PieceKind::kMillisecond:
        append_padded(out, static_cast<uint64_t>(t.millisecond), 3);
        break;
      case PieceKind::kSeq:
        append_padded(out, seq, seq_width_);
        break;
    }
  }
}

}  // namespace idforge
