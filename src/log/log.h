// The process log (docs/operations.md, "Logs"): one line per change of state, never one
// per request (the sampled access log aside), on stderr, where journald or a container
// runtime takes it. An event has a name and key=value fields:
//
//   log::warn("store.down", {{"store", store->describe()}, {"error", status.message()}});
//
// prints, in the text format,
//
//   2026-11-26T04:10:00.123Z warn store.down store=redis://10.0.0.5:6379 error="connection refused"
//
// and in the JSON format one object per line,
//
//   {"ts":"2026-11-26T04:10:00.123Z","level":"warn","event":"store.down","store":"...","error":"..."}
//
// A value never spreads over two lines: text quotes a value that is empty or holds a
// space, '"', '=', '\' or a control character, and escapes inside the quotes (\" \\ \n
// \r \t \u00XX, \xNN for a byte that is not UTF-8); JSON escapes as JSON does (a byte
// that is not UTF-8 becomes U+FFFD). Numbers and booleans are written bare. Field keys
// are the caller's literals; "ts", "level" and "event" are taken.
//
// Secrets: callers pass URLs through their redaction (a store's describe(),
// redact_url) and never pass a header, a token or a password.
//
// Until configure() is called the log writes level info and up in the text format.
// Lines are written whole under one lock (spdlog's stderr sink), flushed at once from
// warn up. Every function is thread-safe.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/status.h"

namespace idforge::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class Format { kText, kJson };

// "trace", "debug", "info", "warn", "error", "off". InvalidArgument naming the choices.
Result<Level> parse_level(std::string_view name);
// "text", "json". InvalidArgument naming the choices.
Result<Format> parse_format(std::string_view name);
std::string_view level_name(Level level);
std::string_view format_name(Format format);

// A field's value: text (a view: the caller's string must live for the call), an
// integer, a floating-point number or a boolean.
class Value {
 public:
  enum class Kind { kText, kInt, kUint, kDouble, kBool };

  Value(std::string_view text) : kind_(Kind::kText), text_(text) {}  // NOLINT: implicit
  Value(const std::string& text) : Value(std::string_view(text)) {}  // NOLINT
  Value(const char* text) : Value(std::string_view(text)) {}         // NOLINT
  Value(bool value) : kind_(Kind::kBool), bool_(value) {}            // NOLINT
  Value(double value) : kind_(Kind::kDouble), double_(value) {}      // NOLINT
  template <std::signed_integral T>
  requires(!std::same_as<T, bool>) Value(T value)
      : kind_(Kind::kInt), int_(static_cast<int64_t>(value)) {}  // NOLINT
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) Value(T value)
      : kind_(Kind::kUint), uint_(static_cast<uint64_t>(value)) {}  // NOLINT

  Kind kind() const { return kind_; }
  std::string_view text() const { return text_; }
  int64_t int_value() const { return int_; }
  uint64_t uint_value() const { return uint_; }
  double double_value() const { return double_; }
  bool bool_value() const { return bool_; }

 private:
  Kind kind_;
  std::string_view text_;
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  double double_ = 0;
  bool bool_ = false;
};

struct Field {
  std::string_view key;
  Value value;
};
using Fields = std::initializer_list<Field>;

// Fields that own their text, for a line logged later than its fields were made
// (RepeatLimiter keeps the last failure's).
class OwnedFields {
 public:
  OwnedFields() = default;
  explicit OwnedFields(std::span<const Field> fields) { assign(fields); }
  void assign(std::span<const Field> fields);
  // Views into this object: valid until it changes.
  std::vector<Field> view() const;

 private:
  struct Owned {
    std::string key;
    std::string text;
    Value value;  // text values point into `text` only through view()
  };
  std::vector<Owned> fields_;
};

// The level and format of every line from now on: info and text until called.
void configure(Level level, Format format);
Level level();
Format format();
// Whether an event at `level` would be written; cheap (one atomic load).
bool enabled(Level level);

// Writes one event, when its level is enabled.
void write(Level level, std::string_view event, std::span<const Field> fields);
inline void write(Level level, std::string_view event, Fields fields) {
  write(level, event, std::span<const Field>(fields.begin(), fields.size()));
}
inline void trace(std::string_view event, Fields fields = {}) {
  write(Level::kTrace, event, fields);
}
inline void debug(std::string_view event, Fields fields = {}) {
  write(Level::kDebug, event, fields);
}
inline void info(std::string_view event, Fields fields = {}) { write(Level::kInfo, event, fields); }
inline void warn(std::string_view event, Fields fields = {}) { write(Level::kWarn, event, fields); }
inline void error(std::string_view event, Fields fields = {}) {
  write(Level::kError, event, fields);
}

// One line as write() prints it, without the newline. Pure: for tests.
std::string format_line(Format format, std::chrono::system_clock::time_point when, Level level,
                        std::string_view event, std::span<const Field> fields);
// "2026-11-26T04:10:00.123Z": UTC, milliseconds.
std::string format_time(std::chrono::system_clock::time_point when);

// Tests: lines (without their newline) go to `writer` instead of stderr; an empty
// function restores stderr. The level filter still applies.
using Writer = std::function<void(Level level, std::string_view line)>;
void set_writer_for_testing(Writer writer);

}  // namespace idforge::log
