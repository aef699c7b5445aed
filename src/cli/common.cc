#include "cli/common.h"

#include <chrono>
#include <cstdio>

#include "core/parse_u64.h"
#include "log/log.h"

namespace idforge::cli {
namespace {

// The fields a user may set on this command, for error messages.
std::string settable_fields(const Layout& layout, bool allow_sequence) {
  std::string names;
  for (const Field& field : layout.fields()) {
    bool settable =
        field.role == FieldRole::kNode || (allow_sequence && field.role == FieldRole::kSequence);
    if (!settable) continue;
    if (!names.empty()) names += ", ";
    names += field.name;
  }
  return names.empty() ? "none" : names;
}

struct GivenField {
  std::string name;
  std::string text;
  std::string flag;  // how the user wrote it, for messages
};

}  // namespace

void print_error(std::string_view message) {
  // Whatever went to stdout first, so a terminal shows output and error in order.
  std::fflush(stdout);
  // With --log-format json (idforge serve) every line on stderr is one JSON object, so
  // a log collector that parses them loses none, this last one least of all.
  if (log::format() == log::Format::kJson) {
    const log::Field fields[] = {{"message", message}};
    fmt::print(stderr, "{}\n",
               log::format_line(log::Format::kJson, std::chrono::system_clock::now(),
                                log::Level::kError, "idforge.error", fields));
    return;
  }
  fmt::print(stderr, "idforge: {}\n", message);
}

int exit_status_of(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

int fail(const Status& status) {
  print_error(status.message().empty() ? status.to_string() : status.message());
  return exit_status_of(status.code());
}

Result<uint64_t> parse_count(std::string_view text) {
  Result<uint64_t> count = parse_u64(text, "--count");
  if (!count.ok() || *count == 0 || *count > kMaxCount) {
    return Status::InvalidArgument(
        fmt::format("--count must be a whole number from 1 to {}, got '{}'", kMaxCount, text));
  }
  return count;
}

void add_count_flag(CLI::App& cmd, std::string& count) {
  cmd.add_option("-n,--count", count, fmt::format("How many to print, 1..{}", kMaxCount))
      ->type_name("N")
      ->default_str("1");
}

void add_layout_flags(CLI::App& cmd, LayoutFlags& flags, bool with_layout_option) {
  if (with_layout_option) {
    cmd.add_option("-l,--layout", flags.layout,
                   "Preset (twitter, discord, instagram, sonyflake, baidu) or custom spec "
                   "'time:41,datacenter:5,worker:5,sequence:12'")
        ->type_name("NAME|SPEC")
        ->default_str("twitter");
  }
  cmd.add_option_function<std::string>(
         "--epoch", [&flags](const std::string& v) { flags.epoch = v; },
         "Epoch as Unix ms or ISO-8601 (default: the layout's)")
      ->type_name("MS|ISO");
  cmd.add_option_function<std::string>(
         "--tick-ms", [&flags](const std::string& v) { flags.tick_ms = v; },
         "Tick length in ms (default: the layout's)")
      ->type_name("MS");
}

std::string describe_fields(const Layout& layout) {
  std::string text;
  for (const Field& field : layout.fields()) {
    if (!text.empty()) text += " | ";
    text += fmt::format("{} {}", field.name, field.bits);
  }
  return text;
}

void add_field_flags(CLI::App& cmd, FieldFlags& flags, bool with_sequence) {
  cmd.add_option_function<std::string>(
         "-d,--datacenter", [&flags](const std::string& v) { flags.datacenter = v; },
         "Datacenter field (layouts that have one)")
      ->type_name("D");
  cmd.add_option_function<std::string>(
         "-w,--worker", [&flags](const std::string& v) { flags.worker = v; },
         "Worker field (layouts that have one)")
      ->type_name("W");
  if (with_sequence) {
    cmd.add_option_function<std::string>(
           "-s,--sequence", [&flags](const std::string& v) { flags.sequence = v; },
           "Sequence field (default 0)")
        ->type_name("S");
  }
  // One value per occurrence, so `--node a=1 --node b=2` and a following argument
  // never get swallowed into the list.
  cmd.add_option("--node", flags.node, "Any node field, NAME=VALUE (shard=5); repeatable")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
}

Result<std::vector<std::pair<std::string, uint64_t>>> resolve_fields(const Layout& layout,
                                                                     const FieldFlags& flags,
                                                                     bool allow_sequence) {
  std::vector<GivenField> given;
  if (flags.datacenter) given.push_back({"datacenter", *flags.datacenter, "--datacenter"});
  if (flags.worker) given.push_back({"worker", *flags.worker, "--worker"});
  if (flags.sequence) given.push_back({"sequence", *flags.sequence, "--sequence"});
  for (const std::string& item : flags.node) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(fmt::format("--node expects NAME=VALUE, got '{}'", item));
    }
    given.push_back({item.substr(0, eq), item.substr(eq + 1), "--node " + item.substr(0, eq)});
  }

  std::vector<std::pair<std::string, uint64_t>> values;
  for (const GivenField& field : given) {
    int index = layout.field_index(field.name);
    // Custom layouts may call the sequence `seq` or `increment`; --sequence means it.
    if (index < 0 && field.flag == "--sequence") index = layout.sequence_index();
    if (index < 0) {
      return Status::InvalidArgument(fmt::format(
          "layout '{}' has no field '{}' (fields you can set: {}; use --node NAME=VALUE)",
          layout.name(), field.name, settable_fields(layout, allow_sequence)));
    }
    const Field& def = layout.fields()[static_cast<size_t>(index)];
    if (def.role == FieldRole::kTime) {
      return Status::InvalidArgument(fmt::format("{}: the time field is set {}", field.flag,
                                                 allow_sequence ? "with --time" : "by the clock"));
    }
    if (def.role == FieldRole::kSequence && !allow_sequence) {
      return Status::InvalidArgument(
          fmt::format("{}: the generator chooses the sequence; it cannot be set here", field.flag));
    }
    for (const auto& [name, value] : values) {
      if (name == def.name) {
        return Status::InvalidArgument(fmt::format("field '{}' is given twice", def.name));
      }
    }
    IDFORGE_ASSIGN_OR_RETURN(uint64_t value, parse_number(field.text, field.flag));
    uint64_t max = layout.max_value(index);
    if (value > max) {
      return Status::OutOfRange(
          fmt::format("{} {} does not fit the {}-bit {} field of layout '{}' (0..{})", field.flag,
                      value, def.bits, def.name, layout.name(), max));
    }
    values.emplace_back(def.name, value);
  }
  return values;
}

void LineWriter::flush() {
  if (buf_.size() == 0) return;
  // A short write sets stdout's error flag, which main() checks before exiting.
  std::fwrite(buf_.data(), 1, buf_.size(), stdout);
  buf_.clear();
}

}  // namespace idforge::cli
