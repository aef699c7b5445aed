// Shared pieces of the `idforge` subcommands: exit statuses, the one-line error
// format, the flags several commands accept (layout, node fields, counts) and
// buffered line output for commands that print millions of lines.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/values.h"
#include "idforge/layout.h"
#include "idforge/status.h"

namespace idforge::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the input was fine but the work failed
inline constexpr int kExitUsage = 2;    // bad usage or invalid input

using config::kMaxCount;
using config::LayoutFlags;
using config::parse_number;
using config::resolve_layout;

// Prints "idforge: <message>" as one line on stderr.
void print_error(std::string_view message);
// kExitUsage for codes that mean the caller's input is wrong, kExitFailure otherwise.
int exit_status_of(StatusCode code);
// Prints the status's message (not its code name, which users need not learn) and
// returns the exit status it deserves.
int fail(const Status& status);

// --count: 1..kMaxCount.
Result<uint64_t> parse_count(std::string_view text);
// Adds `--count N` storing the raw text, so bad values get our message, not CLI11's.
void add_count_flag(CLI::App& cmd, std::string& count);

// Registers the flags; `flags` must outlive `cmd`. Commands that take the layout as
// a positional argument pass with_layout_option = false.
void add_layout_flags(CLI::App& cmd, LayoutFlags& flags, bool with_layout_option = true);
// "time 41 | datacenter 5 | worker 5 | sequence 12".
std::string describe_fields(const Layout& layout);

// Values for the layout's non-time fields: --datacenter, --worker, --sequence and
// --node NAME=VALUE for any other (shard, machine, process, ...).
struct FieldFlags {
  std::optional<std::string> datacenter;
  std::optional<std::string> worker;
  std::optional<std::string> sequence;
  std::vector<std::string> node;
};

// Registers the flags (--sequence only when with_sequence); `flags` must outlive `cmd`.
void add_field_flags(CLI::App& cmd, FieldFlags& flags, bool with_sequence);
// The values by field name, each checked to name a field of `layout` (a node field,
// or also the sequence when allow_sequence) and to fit its width; errors name the
// field and list the ones the layout has.
Result<std::vector<std::pair<std::string, uint64_t>>> resolve_fields(const Layout& layout,
                                                                     const FieldFlags& flags,
                                                                     bool allow_sequence);

// Buffers lines for stdout and writes them in large blocks: printing ten million IDs
// through one write per line would cost more than making them.
class LineWriter {
 public:
  LineWriter() = default;
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;
  ~LineWriter() { flush(); }

  template <typename T>
  void line(const T& value) {
    fmt::format_to(fmt::appender(buf_), "{}\n", value);
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush();

 private:
  static constexpr size_t kFlushBytes = 1 << 16;
  fmt::memory_buffer buf_;
};

}  // namespace idforge::cli
