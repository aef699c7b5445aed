// `idforge inspect`: what a UUID or ULID says about itself (kind, version, time).
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "idforge/time_format.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"

namespace idforge::cli {
namespace {

struct InspectFlags {
  std::string value;
  bool json = false;
};

// One shape for both kinds, so the JSON keys stay the same whatever was given.
struct Inspection {
  std::string value;  // canonical text
  std::string kind;   // "uuid" or "ulid"
  std::optional<int> version;
  std::optional<bool> rfc_variant;
  std::optional<int64_t> unix_ms;
};

Result<Inspection> inspect_value(std::string_view text) {
  Result<Uuid> uuid = Uuid::parse(text);
  if (uuid.ok()) {
    UuidInfo info = inspect(*uuid);
    return Inspection{uuid->to_string(), "uuid", info.version, info.rfc_variant, info.unix_ms};
  }
  Result<Ulid> ulid = Ulid::parse(text);
  if (ulid.ok()) return Inspection{ulid->to_string(), "ulid", {}, {}, ulid->unix_ms()};
  return Status::InvalidArgument(fmt::format("'{}' is neither a UUID ({}) nor a ULID ({})", text,
                                             uuid.status().message(), ulid.status().message()));
}

void print_json(const Inspection& in) {
  nlohmann::ordered_json out;
  out["value"] = in.value;
  out["kind"] = in.kind;
  if (in.version) out["version"] = *in.version;
  if (in.rfc_variant) out["rfc_variant"] = *in.rfc_variant;
  // null rather than absent, so a reader can always look the keys up.
  out["unix_ms"] = in.unix_ms ? nlohmann::ordered_json(*in.unix_ms) : nullptr;
  out["time"] = in.unix_ms ? nlohmann::ordered_json(format_iso8601_utc(*in.unix_ms)) : nullptr;
  fmt::print("{}\n", out.dump());
}

void print_text(const Inspection& in) {
  std::vector<std::pair<std::string, std::string>> rows = {{"value", in.value}, {"kind", in.kind}};
  if (in.version) rows.emplace_back("version", std::to_string(*in.version));
  if (in.rfc_variant) rows.emplace_back("variant", *in.rfc_variant ? "RFC 9562" : "not RFC 9562");
  if (in.unix_ms) {
    rows.emplace_back("unix_ms", std::to_string(*in.unix_ms));
    rows.emplace_back("time", format_iso8601_utc(*in.unix_ms));
  }
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (const auto& [key, value] : rows) fmt::print("{:<{}}  {}\n", key + ":", width + 1, value);
}

int run_inspect(const InspectFlags& flags) {
  Result<Inspection> inspection = inspect_value(flags.value);
  if (!inspection.ok()) return fail(inspection.status());
  if (flags.json) {
    print_json(*inspection);
  } else {
    print_text(*inspection);
  }
  return kExitOk;
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show the kind, version and time of a UUID or ULID");
  cmd->add_option("value", flags->value, "A UUID (any case, braces or urn:uuid: allowed) or a ULID")
      ->type_name("VALUE")
      ->required();
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  cmd->footer(
      "Examples:\n"
      "  idforge inspect 01890a5d-ac96-774b-bcce-b302099a8057\n"
      "  idforge inspect 01ARZ3NDEKTSV4RRFFQ69G5FAV --json");
  cmd->callback([flags, &exit_status] { exit_status = run_inspect(*flags); });
}

}  // namespace idforge::cli
