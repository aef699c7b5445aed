// The table behind serve_config.h: every setting of `idforge serve` with its names,
// how its value is checked, where it goes in ServeConfig and how --print-config shows
// it, plus the checks shared by the layers. Internal to src/config: serve_config.cc reads
// the TOML file and the text layers with it.
//
// Thread-safety: constant data and pure functions (check_text reads zoneinfo files).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/serve_config.h"
#include "idforge/status.h"

namespace idforge::config::settings {

// How a setting's value is read and checked.
enum class Kind {
  kEndpoint,  // HOST:PORT
  kDir,       // a non-empty path
  kText,      // any string ("" = the default)
  kSecret,    // the admin token itself
  kFile,      // a file the admin token is read from ("" = none)
  kUint,      // whole number in [min, max]
  kStores,    // list of segment store URLs
  kRegistry,  // worker registry URL ("" = the default)
  kPolicy,
  kLayout,  // preset name or custom spec
  kEpoch,   // Unix ms, ISO-8601 text, or a TOML date-time
  kZone,    // time zone name ("" = UTC)
  kBool,    // true or false (TOML: a boolean)
  kLogLevel,
  kLogFormat,
};

struct Value {
  std::string text;
  uint64_t number = 0;
  std::vector<std::string> list;
};

// What a value may be: its kind and, for kUint, the range.
struct Check {
  Kind kind;
  uint64_t min = 0;
  uint64_t max = 0;
};

struct Spec {
  SettingInfo info;
  Check check;
  void (*apply)(ServeConfig&, Value&) = nullptr;
  std::string (*show)(const ServeConfig&) = nullptr;  // the effective value as TOML
  // What the default means when it is empty or 0 ("one per core"), or where its value
  // comes from when the table has none ("the layout's").
  std::string_view empty_hint = {};
  std::string_view see = {};  // docs/operations.md links here: "snowflake.md", "#logs"
};

// Every setting, in the documented order.
std::span<const Spec> all();
// The setting's help as --help and the docs show it: "{forms}" in the table's text
// becomes the URL forms of the layer's table of kinds (store_factory.h,
// registry_factory.h), "{mysql}" the form of a MySQL URL.
std::string help_of(const Spec& spec);
// The setting with this TOML key, or null.
const Spec* find(std::string_view key);

// "snowflake" of "snowflake.policy"; "" for a top-level key.
std::string_view section_of(std::string_view key);
// "policy" of "snowflake.policy".
std::string_view name_in_section(std::string_view key);
// Whether `name` is a table of the file ([snowflake], [limits], ...).
bool is_section(std::string_view name);
// The keys a table may hold, for "unknown key" messages: a section's names, or the
// top-level names followed by the sections as [name].
std::string known_keys(std::string_view section);

// The errors and checks every layer shares; `subject` names the setting as the user
// wrote it ("--max-count", "IDFORGE_MAX_COUNT", "FILE:LINE: limits.max_count").
Status range_error(const Spec& spec, const std::string& subject, const std::string& shown);
// Checks a string value of any kind but the numbers and lists.
Status check_text(const Spec& spec, const std::string& subject, const std::string& text);
// Appends a segment store URL after checking its scheme and that it is not a repeat.
Status add_store(const std::string& subject, const std::string& url,
                 std::vector<std::string>& list);
// Unix ms or ISO-8601 text, not before 1970.
Result<uint64_t> epoch_from_text(const std::string& subject, const std::string& text);
// A flag's or variable's text as the setting's value.
Result<Value> value_from_text(const Spec& spec, const TextSetting& given);

// The default as docs and --help show it: "10000", "0 (one per core)", "the layout's".
std::string default_shown(const Spec& spec);

}  // namespace idforge::config::settings
