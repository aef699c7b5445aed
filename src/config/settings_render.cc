// The settings table (serve_settings.cc) rendered for people: --print-config, the
// table in docs/operations.md, the commented config file the Debian package installs,
// and the fields of the start-up log line. Each comes from the one table, so none of
// them can list a setting, default or description the parser does not have.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/serve_config.h"
#include "config/serve_settings.h"
#include "url/url_options.h"

namespace idforge::config {
namespace {

using settings::Kind;
using settings::Spec;

constexpr std::string_view kSecretShown = "(set, not shown)";

// "# " before every line of `text` wrapped at about 88 columns.
std::string comment_block(std::string_view text) {
  std::string out;
  std::string line = "#";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (line.size() + 1 + word.size() > 88 && line.size() > 1) {
      out += line + '\n';
      line = "#";
    }
    line += ' ';
    line += word;
    start = end + 1;
  }
  return out + line + '\n';
}

// Writes "[section]" before the first key of each section; the table keeps a section's
// keys together, top-level keys first.
class SectionHeaders {
 public:
  void before(std::string& out, std::string_view key) {
    const std::string_view section = settings::section_of(key);
    if (section == current_) return;
    current_ = section;
    out += fmt::format("\n[{}]\n", section);
  }

 private:
  std::string_view current_;
};

// The range a whole number may take, for docs: " (0..600000)".
std::string range_note(const Spec& spec) {
  if (spec.check.kind != Kind::kUint) return "";
  return fmt::format(" ({}..{})", spec.check.min, spec.check.max);
}

std::string markdown_row(const Spec& spec) {
  const SettingInfo& info = spec.info;
  std::string flag = fmt::format("`{}`", info.flag);
  if (info.list) flag += " (repeat)";
  const std::string_view value = info.default_value;
  std::string shown;
  if (value.empty()) {
    shown = spec.empty_hint.empty() ? "none" : std::string(spec.empty_hint);
  } else {
    shown = fmt::format("`{}`", value);
    if (!spec.empty_hint.empty()) shown += fmt::format(" ({})", spec.empty_hint);
  }
  std::string meaning = fmt::format("{}{}", settings::help_of(spec), range_note(spec));
  if (!spec.see.empty()) meaning += fmt::format("; see [{0}]({0})", spec.see);
  return fmt::format("| `{}` | `{}` | {} | {} | {} |\n", info.key, info.env, flag, shown, meaning);
}

std::string describe_markdown() {
  std::string out =
      "| TOML key | variable | flag | default | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Spec& spec : settings::all()) out += markdown_row(spec);
  out += "| — | `IDFORGE_CONFIG` | `--config` | none | the TOML file to read |\n";
  return out;
}

// A default as a TOML value, for the commented file.
std::string toml_default(const Spec& spec, const ServeConfig& defaults) {
  if (spec.check.kind == Kind::kSecret) return "\"\"";
  return spec.show(defaults);
}

Result<std::string> describe_toml() {
  IDFORGE_ASSIGN_OR_RETURN(ServeConfig defaults, load_serve_config({}));
  std::string out =
      "# idforge serve: every setting, commented out at its default. Uncomment a line to\n"
      "# change it; IDFORGE_* variables and flags override this file (idforge serve --help,\n"
      "# docs/operations.md). `idforge serve --config FILE --print-config` shows the result.\n";
  SectionHeaders headers;
  for (const Spec& spec : settings::all()) {
    const std::string_view key = spec.info.key;
    headers.before(out, key);
    out += '\n';
    std::string help = fmt::format("{}{}.", settings::help_of(spec), range_note(spec));
    if (!spec.empty_hint.empty()) {
      help += fmt::format(" Default: {}.", settings::default_shown(spec));
    }
    out += comment_block(help);
    out += fmt::format("# {} = {}\n", settings::name_in_section(key), toml_default(spec, defaults));
  }
  return out;
}

}  // namespace

std::string setting_source(const ServeConfig& config, std::string_view key) {
  const Spec* spec = settings::find(key);
  auto origin = config.origins.find(key);
  if (spec == nullptr || origin == config.origins.end()) return "default";
  const std::string& from = origin->second;
  if (from == spec->info.flag) return fmt::format("flag {}", from);
  if (from == spec->info.env) return fmt::format("env {}", from);
  return fmt::format("file {}", from);
}

std::string format_serve_config(const ServeConfig& config) {
  std::string out =
      "# idforge serve: the effective configuration (flags > IDFORGE_* > config file > "
      "defaults)\n";
  out +=
      fmt::format("# config file: {}\n", config.config_file.empty() ? "none" : config.config_file);
  SectionHeaders headers;
  for (const Spec& spec : settings::all()) {
    const std::string_view key = spec.info.key;
    headers.before(out, key);
    const std::string source = setting_source(config, key);
    if (spec.check.kind == Kind::kSecret) {
      if (!config.admin_token_file.empty()) {
        out += "# admin_token: read from admin_token_file (value not shown)\n";
      } else if (!config.service.admin_token.empty()) {
        out += fmt::format("# admin_token: set, {} (value not shown)\n", source);
      } else {
        out += "# admin_token: not set, admin routes are off\n";
      }
      continue;
    }
    const std::string value = spec.show(config);
    std::vector<std::string> notes = {source};
    if (!spec.empty_hint.empty() && source == "default") notes.emplace_back(spec.empty_hint);
    out += fmt::format("{} = {}  # {}\n", settings::name_in_section(key), value,
                       fmt::join(notes, "; "));
  }
  return out;
}

Result<std::string> describe_settings(std::string_view format) {
  if (format == "markdown") return describe_markdown();
  if (format == "toml") return describe_toml();
  return Status::InvalidArgument(
      fmt::format("--describe-settings: unknown format '{}' (markdown or toml)", format));
}

std::vector<std::pair<std::string, std::string>> settings_for_log(const ServeConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Spec& spec : settings::all()) {
    std::string value;
    if (spec.check.kind == Kind::kSecret) {
      value = config.service.admin_token.empty() ? "" : std::string(kSecretShown);
    } else {
      value = spec.show(config);
      // TOML quoting is for files; a log field is quoted by the logger when it needs it.
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
    }
    if (spec.check.kind == Kind::kRegistry) value = redact_url(value);
    if (spec.check.kind == Kind::kStores) {
      std::vector<std::string> urls;
      for (const std::string& url : config.service.store_urls) {
        urls.push_back(redact_url(url));
      }
      value = fmt::format("{}", fmt::join(urls, ","));
    }
    out.emplace_back(std::string(spec.info.key), std::move(value));
  }
  return out;
}

}  // namespace idforge::config
