// ServeConfig: everything `idforge serve` is told, and where each part came from. Four
// layers, each overriding the one before: defaults, a TOML file (--config FILE or
// IDFORGE_CONFIG), environment variables IDFORGE_*, flags. One table of settings
// (serve_settings()) gives each setting its TOML key, variable and flag, so the three
// names never drift apart and --help, --print-config and docs/operations.md list the
// same things.
//
// Every mistake (unknown key, wrong type, value out of range, unreadable file, bad
// TOML) is an InvalidArgument whose message names the key as the user wrote it: the
// file and line with the TOML key, the variable, or the flag.
//
// Thread-safety: plain data and pure functions; load_serve_config reads the files the
// configuration names.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/status.h"
#include "server/net/net_server.h"
#include "server/service/service_config.h"

namespace idforge::config {

// The defaults of `idforge serve` are the settings table's (serve_settings.cc), which
// load_serve_config applies first; the member initializers here only keep a
// default-constructed value sane.
struct ServeConfig {
  // IDs, backends and request limits; `layout` is resolved from the three settings
  // below when loading ends.
  server::ServiceConfig service;
  std::string http;  // HOST:PORT; port 0 picks a free one
  std::string resp;
  server::NetOptions net;
  int64_t shutdown_grace_ms = 0;  // in-flight requests may finish
  std::string log_level;          // log::parse_level's words
  std::string log_format;         // "text" or "json"

  // The Snowflake layout as written: preset name or custom spec, optional epoch/tick.
  std::string layout = "twitter";
  std::optional<int64_t> epoch_ms;
  std::optional<int64_t> tick_ms;

  // Security (docs/operations.md, "Security"): empty means off.
  std::string tokens_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string plain_http;  // with TLS: plain listeners beside the TLS ones
  std::string plain_resp;
  uint64_t connection_rate = 0;   // requests per second per connection; 0: no limit
  uint64_t connection_burst = 0;  // 0: connection_rate

  // When set, service.admin_token was read from this file.
  std::string admin_token_file;
  // The TOML file loaded; empty when none.
  std::string config_file;
  // Where each setting that is not at its default came from, by TOML key:
  // "--http", "IDFORGE_HTTP" or "FILE:LINE".
  std::map<std::string, std::string, std::less<>> origins;
};

// One setting, as documented.
struct SettingInfo {
  std::string_view key;            // TOML key: "http", "snowflake.policy"
  std::string_view env;            // "IDFORGE_POLICY"
  std::string_view flag;           // "--policy"
  std::string_view value_name;     // for --help: "HOST:PORT", "MS", "URL"
  std::string_view default_value;  // as a flag gives it; "" when there is none
  std::string_view help;
  bool list = false;  // several values: a TOML array, a repeated flag, commas in the variable
};

// Every setting, in the order --help, --print-config and the docs show them.
std::span<const SettingInfo> serve_settings();

// A setting given as text: by an environment variable or a flag.
struct TextSetting {
  std::string key;                  // the TOML key
  std::vector<std::string> values;  // one, or several for a list setting
  std::string origin;               // "--http", "IDFORGE_HTTP": how messages name it
};

// The IDFORGE_* variables that `lookup` (getenv) knows, as settings. An empty variable
// counts as unset; IDFORGE_STORE holds several URLs separated by commas.
std::vector<TextSetting> env_settings(const std::function<const char*(const char*)>& lookup);

struct ServeSources {
  std::string config_file;    // empty: no file
  std::string config_origin;  // "--config" or "IDFORGE_CONFIG", for messages
  std::vector<TextSetting> env;
  std::vector<TextSetting> flags;
};

// Defaults, then the file, then env, then flags; then resolves the layout and reads the
// admin token file. InvalidArgument naming the key on any mistake.
Result<ServeConfig> load_serve_config(const ServeSources& sources);

// How messages name a setting: the flag or variable that set it, "FILE:LINE: key" when
// the config file did, or its flag when it has its default.
std::string setting_subject(const ServeConfig& config, std::string_view key);

// The configuration as a TOML file that --config reads back: every setting with its
// effective value, where it came from as a comment ("default", "flag --http", "env
// IDFORGE_HTTP", "file PATH:LINE"), and the admin token's value left out (only whether
// one is set, and from where).
std::string format_serve_config(const ServeConfig& config);

// Where a setting's value came from, as format_serve_config names it.
std::string setting_source(const ServeConfig& config, std::string_view key);

// What `idforge serve --describe-settings FORMAT` prints, from the settings table:
// "markdown", the table of docs/operations.md; "toml", a config file with every setting
// commented out at its default and its description above it (the Debian package's
// /etc/idforge/idforge.toml). InvalidArgument for another format.
Result<std::string> describe_settings(std::string_view format);

// The effective settings as (key, value) pairs for the start-up log line, secrets
// masked, the store and registry URLs without passwords.
std::vector<std::pair<std::string, std::string>> settings_for_log(const ServeConfig& config);

}  // namespace idforge::config
