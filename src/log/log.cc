#include "log/log.h"

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cmath>
#include <ctime>
#include <memory>

#include "core/json_string.h"
#include "core/thread_annotations.h"

namespace idforge::log {
namespace {

constexpr std::string_view kLevelNames[] = {"trace", "debug", "info", "warn", "error", "off"};
constexpr std::string_view kFormatNames[] = {"text", "json"};

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kText)};

// The test writer, when set. Lines to stderr go through spdlog, which has its own lock.
Mutex g_writer_mu;
Writer* g_writer IDFORGE_GUARDED_BY(g_writer_mu) = nullptr;  // owned
std::atomic<bool> g_has_writer{false};

spdlog::level::level_enum spdlog_level(Level level) {
  switch (level) {
    case Level::kTrace:
      return spdlog::level::trace;
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
    case Level::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

// The stderr logger: made once, never destroyed, so a thread that logs while the
// process exits never finds it gone. The line is formatted here ("%v" is the message
// alone), so spdlog only writes it whole and flushes.
spdlog::logger& stderr_logger() {
  static spdlog::logger* logger = [] {
    auto made = new spdlog::logger("idforge", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("%v");
    made->set_level(spdlog::level::trace);  // filtered by g_level before formatting
    made->flush_on(spdlog::level::warn);
    return made;
  }();
  return *logger;
}

// Whether a text value must be quoted in the text format.
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c <= 0x20 || c == 0x7F || c == '"' || c == '=' || c == '\\') return true;
    const size_t n = text::utf8_sequence(s.substr(i));
    if (n == 0) return true;
    i += n;
  }
  return false;
}

// Appends `s` escaped for the text format: JSON's rules (text::append_json_string), but
// \xNN for a byte that is not UTF-8, where JSON gets U+FFFD.
void append_escaped(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
      ++i;
      continue;
    }
    const size_t n = text::utf8_sequence(s.substr(i));
    if (n == 0) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
}

void append_number(std::string& out, const Value& v, bool json) {
  switch (v.kind()) {
    case Value::Kind::kInt:
      fmt::format_to(std::back_inserter(out), "{}", v.int_value());
      return;
    case Value::Kind::kUint:
      fmt::format_to(std::back_inserter(out), "{}", v.uint_value());
      return;
    case Value::Kind::kDouble:
      if (!std::isfinite(v.double_value())) {
        out += json ? "null" : fmt::format("{}", v.double_value());
      } else {
        fmt::format_to(std::back_inserter(out), "{}", v.double_value());
      }
      return;
    case Value::Kind::kBool:
      out += v.bool_value() ? "true" : "false";
      return;
    case Value::Kind::kText:
      return;
  }
}

}  // namespace

Result<Level> parse_level(std::string_view name) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i) {
    if (name == kLevelNames[i]) return static_cast<Level>(i);
  }
  return Status::InvalidArgument(fmt::format(
      "log level '{}' is not one of trace, debug, info, warn, error, off", name.substr(0, 64)));
}

Result<Format> parse_format(std::string_view name) {
  for (size_t i = 0; i < std::size(kFormatNames); ++i) {
    if (name == kFormatNames[i]) return static_cast<Format>(i);
  }
  return Status::InvalidArgument(
      fmt::format("log format '{}' is not one of text, json", name.substr(0, 64)));
}

std::string_view level_name(Level level) { return kLevelNames[static_cast<size_t>(level)]; }
std::string_view format_name(Format format) { return kFormatNames[static_cast<size_t>(format)]; }

void OwnedFields::assign(std::span<const Field> fields) {
  fields_.clear();
  fields_.reserve(fields.size());
  for (const Field& f : fields) {
    fields_.push_back(Owned{std::string(f.key), std::string(f.value.text()), f.value});
  }
}

std::vector<Field> OwnedFields::view() const {
  std::vector<Field> out;
  out.reserve(fields_.size());
  for (const Owned& f : fields_) {
    if (f.value.kind() == Value::Kind::kText) {
      out.push_back(Field{f.key, Value(std::string_view(f.text))});
    } else {
      out.push_back(Field{f.key, f.value});
    }
  }
  return out;
}

void configure(Level level, Format format) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
  g_format.store(static_cast<int>(format), std::memory_order_relaxed);
}

Level level() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
Format format() { return static_cast<Format>(g_format.load(std::memory_order_relaxed)); }

bool enabled(Level at) {
  return at != Level::kOff && static_cast<int>(at) >= g_level.load(std::memory_order_relaxed);
}

std::string format_time(std::chrono::system_clock::time_point when) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  int64_t seconds = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {  // before 1970: floor, not truncate
    millis += 1000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

std::string format_line(Format format, std::chrono::system_clock::time_point when, Level level,
                        std::string_view event, std::span<const Field> fields) {
  std::string out;
  out.reserve(96 + fields.size() * 24);
  const std::string ts = format_time(when);
  if (format == Format::kJson) {
    out += "{\"ts\":";
    text::append_json_string(out, ts);
    out += ",\"level\":";
    text::append_json_string(out, level_name(level));
    out += ",\"event\":";
    text::append_json_string(out, event);
    for (const Field& f : fields) {
      out += ',';
      text::append_json_string(out, f.key);
      out += ':';
      if (f.value.kind() == Value::Kind::kText) {
        text::append_json_string(out, f.value.text());
      } else {
        append_number(out, f.value, /*json=*/true);
      }
    }
    out += '}';
    return out;
  }
  out += ts;
  out += ' ';
  out += level_name(level);
  out += ' ';
  append_escaped(out, event);
  for (const Field& f : fields) {
    out += ' ';
    append_escaped(out, f.key);
    out += '=';
    if (f.value.kind() != Value::Kind::kText) {
      append_number(out, f.value, /*json=*/false);
    } else if (needs_quotes(f.value.text())) {
      out += '"';
      append_escaped(out, f.value.text());
      out += '"';
    } else {
      out += f.value.text();
    }
  }
  return out;
}

void write(Level at, std::string_view event, std::span<const Field> fields) {
  if (!enabled(at)) return;
  const std::string line =
      format_line(format(), std::chrono::system_clock::now(), at, event, fields);
  if (g_has_writer.load(std::memory_order_acquire)) {
    MutexLock lock(g_writer_mu);
    if (g_writer != nullptr) {
      (*g_writer)(at, line);
      return;
    }
  }
  stderr_logger().log(spdlog_level(at), "{}", line);
}

void set_writer_for_testing(Writer writer) {
  MutexLock lock(g_writer_mu);
  delete g_writer;
  g_writer = writer ? new Writer(std::move(writer)) : nullptr;
  g_has_writer.store(g_writer != nullptr, std::memory_order_release);
}

}  // namespace idforge::log
