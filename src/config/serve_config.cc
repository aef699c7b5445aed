#include "config/serve_config.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "config/serve_settings.h"
#include "config/values.h"
#include "core/quote.h"
#include "idforge/layout.h"

namespace idforge::config {
namespace {

using settings::Kind;
using settings::Spec;
using settings::Value;

// --- values from the TOML file -------------------------------------------------------

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

Status type_error(const std::string& subject, std::string_view expected, const toml::node& node) {
  return Status::InvalidArgument(
      fmt::format("{} must be {}, got {}", subject, expected, toml_type_name(node)));
}

// A TOML date-time as the ISO-8601 text parse_time reads; no offset means UTC, as in
// the text form.
std::string iso_of(const toml::date& d, const toml::time& t, int offset_minutes) {
  const int abs = offset_minutes < 0 ? -offset_minutes : offset_minutes;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}", d.year, d.month,
                     d.day, t.hour, t.minute, t.second, t.nanosecond / 1'000'000,
                     offset_minutes < 0 ? '-' : '+', abs / 60, abs % 60);
}

Result<Value> value_from_toml(const Spec& spec, const std::string& subject,
                              const toml::node& node) {
  Value value;
  if (spec.info.list) {
    const toml::array* array = node.as_array();
    if (array == nullptr) return type_error(subject, "an array of strings", node);
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      const std::string item_subject = fmt::format("{}[{}]", subject, i);
      if (!item.is_string()) return type_error(item_subject, "a string", item);
      IDFORGE_RETURN_IF_ERROR(
          settings::add_store(item_subject, item.as_string()->get(), value.list));
    }
    return value;
  }
  if (spec.check.kind == Kind::kUint || (spec.check.kind == Kind::kEpoch && node.is_integer())) {
    if (!node.is_integer()) return type_error(subject, "an integer", node);
    const int64_t number = node.as_integer()->get();
    if (number < 0 || static_cast<uint64_t>(number) < spec.check.min ||
        (spec.check.kind == Kind::kUint && static_cast<uint64_t>(number) > spec.check.max)) {
      if (spec.check.kind == Kind::kEpoch) {
        return Status::InvalidArgument(fmt::format("{} must not be before 1970-01-01", subject));
      }
      return settings::range_error(spec, subject, std::to_string(number));
    }
    value.number = static_cast<uint64_t>(number);
    return value;
  }
  if (spec.check.kind == Kind::kEpoch) {
    std::string iso;
    if (const auto* dt = node.as_date_time()) {
      const toml::date_time& v = dt->get();
      iso = iso_of(v.date, v.time, v.offset ? v.offset->minutes : 0);
    } else if (const auto* d = node.as_date()) {
      iso = iso_of(d->get(), toml::time{}, 0);
    } else if (node.is_string()) {
      iso = node.as_string()->get();
    } else {
      return type_error(subject, "Unix ms, an ISO-8601 string or a date-time", node);
    }
    IDFORGE_ASSIGN_OR_RETURN(uint64_t ms, settings::epoch_from_text(subject, iso));
    value.number = ms;
    return value;
  }
  if (spec.check.kind == Kind::kBool) {
    if (!node.is_boolean()) return type_error(subject, "true or false", node);
    value.text = node.as_boolean()->get() ? "true" : "false";
    return value;
  }
  if (!node.is_string()) return type_error(subject, "a string", node);
  value.text = node.as_string()->get();
  IDFORGE_RETURN_IF_ERROR(settings::check_text(spec, subject, value.text));
  return value;
}

// --- layers ---------------------------------------------------------------------------

void apply_value(const Spec& spec, Value& value, std::string origin, ServeConfig& config) {
  spec.apply(config, value);
  // The token and its file are two ways to give one secret: the later layer's wins.
  if (spec.check.kind == Kind::kSecret && !config.service.admin_token.empty()) {
    config.origins.erase("admin_token_file");
  }
  if (spec.check.kind == Kind::kFile && !config.admin_token_file.empty()) {
    config.origins.erase("admin_token");
  }
  config.origins.insert_or_assign(std::string(spec.info.key), std::move(origin));
}

// Within one layer the token and its file are a contradiction, not an override.
class TokenConflict {
 public:
  void saw(const Spec& spec, const Value& value, const std::string& subject) {
    if (value.text.empty()) return;
    if (spec.check.kind == Kind::kSecret) token_ = subject;
    if (spec.check.kind == Kind::kFile) file_ = subject;
  }
  Status check() const {
    if (token_.empty() || file_.empty()) return Status::Ok();
    return Status::InvalidArgument(
        fmt::format("{} and {} both give the admin token; keep one", token_, file_));
  }

 private:
  std::string token_;
  std::string file_;
};

Status apply_text_layer(const std::vector<TextSetting>& layer, ServeConfig& config) {
  TokenConflict conflict;
  for (const TextSetting& given : layer) {
    const Spec* spec = settings::find(given.key);
    if (spec == nullptr) {
      return Status::Internal(fmt::format("{}: no setting '{}'", given.origin, given.key));
    }
    if (given.values.empty()) continue;
    IDFORGE_ASSIGN_OR_RETURN(Value value, settings::value_from_text(*spec, given));
    conflict.saw(*spec, value, given.origin);
    apply_value(*spec, value, given.origin, config);
  }
  return conflict.check();
}

Result<std::string> read_small_file(const std::string& path, const std::string& subject,
                                    std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(fmt::format("{}: cannot read {} {}: {}", subject, what,
                                               quote_text(path), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("{}: {} {} is not a regular file", subject, what, quote_text(path)));
  }
  constexpr off_t kMaxBytes = 1 << 20;  // a config file or a token, never a data file
  if (st.st_size > kMaxBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: {} {} is larger than 1 MiB", subject, what, quote_text(path)));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    return Status::InvalidArgument(fmt::format("{}: cannot read {} {}: {}", subject, what,
                                               quote_text(path), std::strerror(errno)));
  }
  return text.str();
}

std::string file_origin(const std::string& path, const toml::source_region& where) {
  return fmt::format("{}:{}", path, where.begin.line);
}

Status apply_toml_entry(const std::string& path, std::string_view section, std::string_view name,
                        const toml::node& node, ServeConfig& config, TokenConflict& conflict) {
  const std::string key = section.empty() ? std::string(name) : fmt::format("{}.{}", section, name);
  const std::string origin = file_origin(path, node.source());
  const Spec* spec = settings::find(key);
  if (spec == nullptr) {
    return Status::InvalidArgument(fmt::format(
        "unknown key '{}' in {}; known{}: {}", key, origin,
        section.empty() ? "" : fmt::format(" in [{}]", section), settings::known_keys(section)));
  }
  const std::string subject = fmt::format("{}: {}", origin, key);
  IDFORGE_ASSIGN_OR_RETURN(Value value, value_from_toml(*spec, subject, node));
  conflict.saw(*spec, value, subject);
  apply_value(*spec, value, origin, config);
  return Status::Ok();
}

// toml++ 3.3.0 (Debian 12) has undefined behaviour on some non-ASCII bytes outside
// strings and comments (found by fuzz_config; fixed upstream after 3.3.0). TOML allows
// them nowhere else, so refuse them here, with their position, before toml++ sees them.
Status check_non_ascii(std::string_view text, const std::string& path) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  constexpr std::string_view kTripleDouble = "\"\"\"";
  constexpr std::string_view kTripleSingle = "'''";
  In in = In::kCode;
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const std::string_view rest = text.substr(i);
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      if (in == In::kComment) in = In::kCode;
      continue;
    }
    switch (in) {
      case In::kCode:
        if (static_cast<unsigned char>(c) >= 0x80) {
          return Status::InvalidArgument(fmt::format(
              "{}:{}:{}: invalid TOML: a non-ASCII character outside a string or comment", path,
              line, i - line_start + 1));
        }
        if (c == '#') {
          in = In::kComment;
        } else if (rest.starts_with(kTripleDouble)) {
          in = In::kMultiBasic;
          i += 2;
        } else if (rest.starts_with(kTripleSingle)) {
          in = In::kMultiLiteral;
          i += 2;
        } else if (c == '"') {
          in = In::kBasic;
        } else if (c == '\'') {
          in = In::kLiteral;
        }
        break;
      case In::kComment:
        break;
      case In::kBasic:
      case In::kMultiBasic:
        if (c == '\\') {
          ++i;  // an escape: the next character closes nothing
        } else if (in == In::kBasic && c == '"') {
          in = In::kCode;
        } else if (in == In::kMultiBasic && rest.starts_with(kTripleDouble)) {
          in = In::kCode;
          i += 2;
        }
        break;
      case In::kLiteral:
        if (c == '\'') in = In::kCode;
        break;
      case In::kMultiLiteral:
        if (rest.starts_with(kTripleSingle)) {
          in = In::kCode;
          i += 2;
        }
        break;
    }
  }
  return Status::Ok();
}

Status apply_toml_file(const std::string& path, const std::string& origin, ServeConfig& config) {
  IDFORGE_ASSIGN_OR_RETURN(std::string text, read_small_file(path, origin, "config file"));
  IDFORGE_RETURN_IF_ERROR(check_non_ascii(text, path));
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: invalid TOML: {}", path,
                                               e.source().begin.line, e.source().begin.column,
                                               e.description()));
  }
  TokenConflict conflict;
  for (auto&& [key, node] : root) {
    const std::string_view name = key.str();
    if (settings::is_section(name)) {
      const toml::table* table = node.as_table();
      if (table == nullptr) {
        return type_error(fmt::format("{}: {}", file_origin(path, node.source()), name),
                          "a table ([" + std::string(name) + "])", node);
      }
      for (auto&& [inner_key, inner] : *table) {
        IDFORGE_RETURN_IF_ERROR(
            apply_toml_entry(path, name, inner_key.str(), inner, config, conflict));
      }
    } else {
      IDFORGE_RETURN_IF_ERROR(apply_toml_entry(path, "", name, node, config, conflict));
    }
  }
  config.config_file = path;
  return conflict.check();
}

Status resolve_service_layout(ServeConfig& config) {
  LayoutFlags flags;
  flags.layout = config.layout;
  if (config.epoch_ms) flags.epoch = std::to_string(*config.epoch_ms);
  if (config.tick_ms) flags.tick_ms = std::to_string(*config.tick_ms);
  Result<Layout> layout = resolve_layout(flags);
  if (!layout.ok()) {
    // Blame the epoch or tick when the layout alone is fine.
    std::string subject;
    if (Layout::parse(config.layout).ok()) {
      std::vector<std::string> parts;
      if (config.epoch_ms) parts.push_back(setting_subject(config, "snowflake.epoch"));
      if (config.tick_ms) parts.push_back(setting_subject(config, "snowflake.tick_ms"));
      subject = fmt::format("{}", fmt::join(parts, " with "));
    }
    if (subject.empty()) subject = setting_subject(config, "snowflake.layout");
    return Status::InvalidArgument(fmt::format("{}: {}", subject, layout.status().message()));
  }
  config.service.layout = std::move(layout).value();
  config.service.layout_label = config.layout;
  return Status::Ok();
}

// TLS needs both files; the CA and the extra plain listeners only make sense with TLS.
Status check_security(const ServeConfig& config) {
  auto needs = [&](std::string_view key, std::string_view needed, std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("{} needs {}: {}", setting_subject(config, key), needed, why));
  };
  if (!config.tls_cert.empty() && config.tls_key.empty()) {
    return needs("tls_cert", "tls_key", "the private key of the certificate");
  }
  if (!config.tls_key.empty() && config.tls_cert.empty()) {
    return needs("tls_key", "tls_cert", "the certificate of the key");
  }
  const bool tls = !config.tls_cert.empty();
  if (!tls && !config.tls_client_ca.empty()) {
    return needs("tls_client_ca", "tls_cert and tls_key", "client certificates are asked in TLS");
  }
  for (std::string_view key : {"plain_http", "plain_resp"}) {
    const std::string& value = key == "plain_http" ? config.plain_http : config.plain_resp;
    if (!tls && !value.empty()) {
      return needs(key, "tls_cert and tls_key",
                   "without TLS the http and resp listeners are plain already");
    }
  }
  return Status::Ok();
}

Status read_admin_token(ServeConfig& config) {
  if (config.admin_token_file.empty()) return Status::Ok();
  const std::string subject = setting_subject(config, "admin_token_file");
  IDFORGE_ASSIGN_OR_RETURN(std::string text,
                           read_small_file(config.admin_token_file, subject, "token file"));
  constexpr std::string_view kSpace = " \t\r\n";
  std::string token = std::move(text);
  token.erase(0, std::min(token.size(), token.find_first_not_of(kSpace)));
  token.erase(token.find_last_not_of(kSpace) + 1);
  if (token.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: token file {} is empty", subject, quote_text(config.admin_token_file)));
  }
  if (token.find_first_of(kSpace) != std::string::npos) {
    return Status::InvalidArgument(fmt::format("{}: token file {} holds more than one word",
                                               subject, quote_text(config.admin_token_file)));
  }
  config.service.admin_token = std::move(token);
  return Status::Ok();
}

// The table's defaults go in first, through the same checks as every other layer, and
// leave no origin: a setting without one is at its default.
Status apply_defaults(ServeConfig& config) {
  for (const Spec& spec : settings::all()) {
    if (spec.info.default_value.empty()) continue;
    const TextSetting given{std::string(spec.info.key),
                            {std::string(spec.info.default_value)},
                            fmt::format("the default of {}", spec.info.key)};
    IDFORGE_ASSIGN_OR_RETURN(Value value, settings::value_from_text(spec, given));
    spec.apply(config, value);
  }
  return Status::Ok();
}

}  // namespace

std::string setting_subject(const ServeConfig& config, std::string_view key) {
  const Spec* spec = settings::find(key);
  if (spec == nullptr) return std::string(key);
  auto it = config.origins.find(key);
  if (it == config.origins.end()) return std::string(spec->info.flag);
  if (it->second == spec->info.flag || it->second == spec->info.env) return it->second;
  return fmt::format("{}: {}", it->second, key);
}

std::vector<TextSetting> env_settings(const std::function<const char*(const char*)>& lookup) {
  std::vector<TextSetting> out;
  for (const Spec& spec : settings::all()) {
    const std::string env(spec.info.env);
    const char* raw = lookup(env.c_str());
    if (raw == nullptr || raw[0] == '\0') continue;
    TextSetting setting{std::string(spec.info.key), {}, env};
    if (spec.info.list) {
      std::string_view rest = raw;
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) setting.values.emplace_back(item);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else {
      setting.values.emplace_back(raw);
    }
    out.push_back(std::move(setting));
  }
  return out;
}

Result<ServeConfig> load_serve_config(const ServeSources& sources) {
  ServeConfig config;
  IDFORGE_RETURN_IF_ERROR(apply_defaults(config));
  if (!sources.config_file.empty()) {
    IDFORGE_RETURN_IF_ERROR(apply_toml_file(sources.config_file, sources.config_origin, config));
  }
  IDFORGE_RETURN_IF_ERROR(apply_text_layer(sources.env, config));
  IDFORGE_RETURN_IF_ERROR(apply_text_layer(sources.flags, config));
  IDFORGE_RETURN_IF_ERROR(resolve_service_layout(config));
  IDFORGE_RETURN_IF_ERROR(check_security(config));
  IDFORGE_RETURN_IF_ERROR(read_admin_token(config));
  return config;
}

}  // namespace idforge::config
