#include "cli/serve_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "cli/common.h"
#include "core/parse_u64.h"
#include "core/quote.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/time_format.h"
#include "server/net_server.h"
#include "store/store_options.h"
#include "store/zoneinfo.h"

namespace idforge::cli::settings {
namespace {

// Bounds: wide enough for any sane deployment, narrow enough that a typo (an extra
// zero, ms taken for s) is caught at start-up instead of in production.
constexpr uint64_t kDayMs = 86'400'000;
constexpr uint64_t kMaxThreads = 1024;

std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04X}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string toml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += toml_string(items[i]);
  }
  return out + "]";
}

template <typename T>
std::string num(T value) {
  return std::to_string(value);
}

// The table: key, variable, flag, value name, default, help; then how it is read.
constexpr Spec kSpecs[] = {
    {{"http", "IDFORGE_HTTP", "--http", "HOST:PORT", "127.0.0.1:8080",
      "HTTP listen address (JSON API, /metrics, web page); port 0 picks a free one"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.http = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.http); }},
    {{"resp", "IDFORGE_RESP", "--resp", "HOST:PORT", "127.0.0.1:6380",
      "Redis-protocol listen address; port 0 picks a free one"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.resp = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.resp); }},
    {{"data_dir", "IDFORGE_DATA_DIR", "--data-dir", "DIR", "./idforge-data",
      "Local state (created 0700): the default SQLite store and worker-id lock files"},
     {Kind::kDir},
     [](ServeConfig& c, Value& v) { c.service.data_dir = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.data_dir); }},
    {{"admin_token", "IDFORGE_ADMIN_TOKEN", "--admin-token", "TOKEN", "(none: admin routes off)",
      "Bearer token of the admin routes; prefer the variable or admin_token_file, since "
      "flags show in ps"},
     {Kind::kSecret},
     [](ServeConfig& c, Value& v) {
       if (!v.text.empty()) c.admin_token_file.clear();
       c.service.admin_token = std::move(v.text);
     },
     nullptr},
    {{"admin_token_file", "IDFORGE_ADMIN_TOKEN_FILE", "--admin-token-file", "FILE", "(none)",
      "Read the admin token from this file (surrounding whitespace is dropped)"},
     {Kind::kFile},
     [](ServeConfig& c, Value& v) {
       if (!v.text.empty()) c.service.admin_token.clear();
       c.admin_token_file = std::move(v.text);
     },
     [](const ServeConfig& c) { return toml_string(c.admin_token_file); },
     "no file"},
    {{"shutdown_grace_ms", "IDFORGE_SHUTDOWN_GRACE_MS", "--shutdown-grace-ms", "MS", "5000",
      "On SIGTERM/SIGINT, how long in-flight requests may take to finish"},
     {Kind::kUint, 0, 600'000},
     [](ServeConfig& c, Value& v) { c.shutdown_grace_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.shutdown_grace_ms); }},

    {{"snowflake.layout", "IDFORGE_LAYOUT", "--layout", "NAME|SPEC", "twitter",
      "Preset (twitter, discord, instagram, sonyflake, baidu) or custom spec "
      "'time:41,datacenter:5,worker:5,sequence:12'"},
     {Kind::kLayout},
     [](ServeConfig& c, Value& v) { c.layout = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.layout); }},
    {{"snowflake.epoch", "IDFORGE_EPOCH", "--epoch", "MS|ISO", "the layout's",
      "Epoch as Unix ms or ISO-8601 (in TOML also a date-time)"},
     {Kind::kEpoch},
     [](ServeConfig& c, Value& v) { c.epoch_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.layout.epoch_ms()); }},
    {{"snowflake.tick_ms", "IDFORGE_TICK_MS", "--tick-ms", "MS", "the layout's",
      "Tick length in ms"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.tick_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.layout.tick_ms()); }},
    {{"snowflake.policy", "IDFORGE_POLICY", "--policy", "POLICY", "logical",
      "Clock rollback policy: logical, wait, reject or ring"},
     {Kind::kPolicy},
     [](ServeConfig& c, Value& v) { c.service.policy = parse_policy(v.text).value(); },
     [](const ServeConfig& c) { return toml_string(policy_name(c.service.policy)); }},
    {{"snowflake.max_drift_ms", "IDFORGE_MAX_DRIFT_MS", "--max-drift-ms", "MS", "1000",
      "logical: how far ahead of the clock IDs may run (0: wait for the next real tick)"},
     {Kind::kUint, 0, kDayMs},
     [](ServeConfig& c, Value& v) { c.service.max_drift_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.max_drift_ms); }},
    {{"snowflake.max_clock_step_ms", "IDFORGE_MAX_CLOCK_STEP_MS", "--max-clock-step-ms", "MS",
      "10000",
      "A forward clock step larger than this is a jump: IDs stay at the trusted time and the "
      "high-water mark is not written past it (0: follow every step)"},
     {Kind::kUint, 0, kDayMs},
     [](ServeConfig& c, Value& v) { c.service.max_clock_step_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.max_clock_step_ms); }},
    {{"snowflake.max_wait_ms", "IDFORGE_MAX_WAIT_MS", "--max-wait-ms", "MS", "5",
      "Longest one request waits for the clock (rollback, exhausted sequence)"},
     {Kind::kUint, 0, 60'000},
     [](ServeConfig& c, Value& v) { c.service.max_wait_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.max_wait_ms); }},

    {{"segment.stores", "IDFORGE_STORE", "--store", "URL", "sqlite:DATA_DIR/segments.db",
      "Segment store: sqlite:PATH, postgres://USER@HOST:PORT/DB, mysql://USER:PW@HOST:PORT/DB, "
      "redis://HOST:PORT or redis-sentinel://HOST:PORT,.../MASTER; several stripe each tag over "
      "them (always the same "
      "stores, same order)",
      /*list=*/true},
     {Kind::kStores},
     [](ServeConfig& c, Value& v) { c.service.store_urls = std::move(v.list); },
     [](const ServeConfig& c) { return toml_list(c.service.store_urls); },
     "sqlite:DATA_DIR/segments.db"},
    {{"segment.wait_ms", "IDFORGE_SEGMENT_WAIT_MS", "--segment-wait-ms", "MS", "1000",
      "Longest a request waits for the store when a tag's buffers are empty"},
     {Kind::kUint, 0, 600'000},
     [](ServeConfig& c, Value& v) { c.service.segment_wait_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.segment_wait_ms); }},
    {{"segment.max_step", "IDFORGE_MAX_STEP", "--max-step", "N", "1000000",
      "Upper bound of a tag's dynamic step"},
     {Kind::kUint, 1, 1'000'000'000},
     [](ServeConfig& c, Value& v) { c.service.max_step = v.number; },
     [](const ServeConfig& c) { return num(c.service.max_step); }},
    {{"segment.failover_margin", "IDFORGE_SEGMENT_FAILOVER_MARGIN", "--failover-margin", "N",
      "0 (16 x 4 x max_step)",
      "Numbers every tag moves forward when a store's history changes (a promoted replica, a "
      "restore); 0: 64 ranges of max_step (docs/stores.md)"},
     {Kind::kUint, 0, uint64_t{1} << 62},
     [](ServeConfig& c, Value& v) { c.service.failover_margin = v.number; },
     [](const ServeConfig& c) { return num(c.service.failover_margin); }},
    {{"segment.allow_unsafe_store", "IDFORGE_ALLOW_UNSAFE_STORE", "--allow-unsafe-store",
      "true|false", "false",
      "Issue segment IDs from a store whose settings can lose committed ranges (Redis without "
      "appendfsync always, PostgreSQL with fsync or synchronous_commit off)"},
     {Kind::kBool},
     [](ServeConfig& c, Value& v) { c.service.allow_unsafe_store = v.text == "true"; },
     [](const ServeConfig& c) {
       return std::string(c.service.allow_unsafe_store ? "true" : "false");
     }},
    {{"segment.serial_zone", "IDFORGE_SERIAL_ZONE", "--serial-zone", "ZONE", "UTC",
      "Time zone of the dates in serial numbers: UTC, +08:00 or an IANA name"},
     {Kind::kZone},
     [](ServeConfig& c, Value& v) { c.service.serial_zone = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.serial_zone); },
     "UTC"},

    {{"segment.tinyid_tokens", "IDFORGE_TINYID_TOKENS", "--tinyid-tokens", "URL", "(none)",
      "MySQL database whose tiny_id_token table holds the tokens of Tinyid's routes "
      "(/tinyid/id/...), mysql://USER:PW@HOST:PORT/DB; none: those routes refuse every token"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.service.tinyid_tokens_url = std::move(v.text); },
     [](const ServeConfig& c) {
       return toml_string(store::redact_url(c.service.tinyid_tokens_url));
     },
     "(none)"},

    {{"worker.registry", "IDFORGE_REGISTRY", "--registry", "URL", "local: in DATA_DIR/workers",
      "Worker-id registry: local:DIR, static:DC/WORKER, static:ordinal, redis://HOST:PORT, "
      "redis-sentinel://HOST:PORT,.../MASTER, etcd://HOST:PORT,... or "
      "zookeeper://HOST:PORT,.../PATH, each optionally with ?ttl_ms=N&cluster=NAME"},
     {Kind::kRegistry},
     [](ServeConfig& c, Value& v) { c.service.registry_url = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.registry_url); },
     "local:DATA_DIR/workers"},
    {{"worker.identity", "IDFORGE_IDENTITY", "--identity", "ID", "HOSTNAME:HTTP_PORT",
      "Who holds the lease; a restarted server with the same identity gets its old slot back"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.service.identity = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.identity); },
     "HOSTNAME:HTTP_PORT"},

    {{"limits.max_count", "IDFORGE_MAX_COUNT", "--max-count", "N", "10000",
      "Most IDs one request may ask for"},
     {Kind::kUint, 1, kMaxCount},
     [](ServeConfig& c, Value& v) { c.service.max_count = v.number; },
     [](const ServeConfig& c) { return num(c.service.max_count); }},
    {{"limits.idle_timeout_ms", "IDFORGE_IDLE_TIMEOUT_MS", "--idle-timeout-ms", "MS", "60000",
      "Close a connection that sent nothing for this long"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.net.idle_timeout_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.idle_timeout_ms); }},
    {{"limits.request_timeout_ms", "IDFORGE_REQUEST_TIMEOUT_MS", "--request-timeout-ms", "MS",
      "10000", "Close a connection whose started request is not complete after this"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.net.request_timeout_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.request_timeout_ms); }},
    {{"limits.max_connections", "IDFORGE_MAX_CONNECTIONS", "--max-connections", "N", "10000",
      "Open connections; more are accepted and closed at once"},
     {Kind::kUint, 1, 1'000'000},
     [](ServeConfig& c, Value& v) { c.net.max_connections = static_cast<size_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.max_connections); }},
    {{"limits.max_pending_bytes", "IDFORGE_MAX_PENDING_BYTES", "--max-pending-bytes", "BYTES",
      "1048576", "Unanswered input one connection may send ahead; beyond it is closed"},
     {Kind::kUint, 1024, 1ULL << 30},
     [](ServeConfig& c, Value& v) { c.net.max_pending_bytes = static_cast<size_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.max_pending_bytes); }},

    {{"threads.io", "IDFORGE_IO_THREADS", "--io-threads", "N", "0 (one per core)",
      "Event-loop threads"},
     {Kind::kUint, 0, kMaxThreads},
     [](ServeConfig& c, Value& v) { c.net.io_threads = static_cast<int>(v.number); },
     [](const ServeConfig& c) { return num(c.net.io_threads); },
     "one per core"},
    {{"threads.io_spin_us", "IDFORGE_IO_SPIN_US", "--io-spin-us", "MICROSECONDS", "50",
      "How long an idle event loop polls before it sleeps, while requests keep coming "
      "within that time (0: sleep at once)"},
     {Kind::kUint, 0, 1'000'000},
     [](ServeConfig& c, Value& v) { c.net.io_spin_us = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.io_spin_us); }},
    {{"threads.workers", "IDFORGE_WORKER_THREADS", "--worker-threads", "N", "4",
      "Threads that run requests waiting on a store or coordinator"},
     {Kind::kUint, 1, kMaxThreads},
     [](ServeConfig& c, Value& v) { c.net.worker_threads = static_cast<int>(v.number); },
     [](const ServeConfig& c) { return num(c.net.worker_threads); }},
};

constexpr std::string_view kStoreSchemes[] = {"sqlite:",          "postgres://", "postgresql://",
                                              "mysql://",         "mariadb://",  "redis://",
                                              "redis-sentinel://"};
constexpr std::string_view kRegistrySchemes[] = {"local:",  "static:",           "redis://",
                                                 "etcd://", "redis-sentinel://", "zookeeper://"};

template <size_t N>
bool has_scheme(std::string_view url, const std::string_view (&schemes)[N]) {
  return std::any_of(std::begin(schemes), std::end(schemes),
                     [url](std::string_view s) { return url.starts_with(s); });
}

}  // namespace

std::span<const Spec> all() { return kSpecs; }

const Spec* find(std::string_view key) {
  for (const Spec& spec : kSpecs) {
    if (spec.info.key == key) return &spec;
  }
  return nullptr;
}

std::string_view section_of(std::string_view key) {
  const size_t dot = key.find('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

std::string_view name_in_section(std::string_view key) {
  const size_t dot = key.find('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

bool is_section(std::string_view name) {
  for (const Spec& spec : kSpecs) {
    if (section_of(spec.info.key) == name) return true;
  }
  return false;
}

std::string known_keys(std::string_view section) {
  std::vector<std::string> names;
  for (const Spec& spec : kSpecs) {
    if (section_of(spec.info.key) == section) names.emplace_back(name_in_section(spec.info.key));
  }
  if (section.empty()) {
    for (const Spec& spec : kSpecs) {
      std::string table = fmt::format("[{}]", section_of(spec.info.key));
      if (table != "[]" && std::find(names.begin(), names.end(), table) == names.end()) {
        names.push_back(std::move(table));
      }
    }
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// --- reading and checking values -------------------------------------------------------

Status range_error(const Spec& spec, const std::string& subject, const std::string& shown) {
  return Status::InvalidArgument(fmt::format("{} must be a whole number from {} to {}, got {}",
                                             subject, spec.check.min, spec.check.max, shown));
}

Status check_text(const Spec& spec, const std::string& subject, const std::string& text) {
  switch (spec.check.kind) {
    case Kind::kEndpoint: {
      Result<server::Endpoint> endpoint = server::parse_endpoint(text);
      if (!endpoint.ok()) {
        return Status::InvalidArgument(fmt::format("{}: {}", subject, endpoint.status().message()));
      }
      return Status::Ok();
    }
    case Kind::kDir:
      if (text.empty()) return Status::InvalidArgument(fmt::format("{} is empty", subject));
      return Status::Ok();
    case Kind::kPolicy:
      if (!parse_policy(text).ok()) {
        return Status::InvalidArgument(fmt::format(
            "{} must be logical, wait, reject or ring, got {}", subject, quote_text(text)));
      }
      return Status::Ok();
    case Kind::kLayout:
      if (text.empty()) return Status::InvalidArgument(fmt::format("{} is empty", subject));
      // A word without ':' can only be a preset; a custom spec is checked with the epoch
      // and tick once all layers are in.
      if (text.find(':') == std::string::npos && !Layout::preset(text).ok()) {
        return Status::InvalidArgument(fmt::format("{}: unknown layout {} (presets: {})", subject,
                                                   quote_text(text),
                                                   fmt::join(Layout::preset_names(), ", ")));
      }
      return Status::Ok();
    case Kind::kRegistry:
      if (!text.empty() && !has_scheme(text, kRegistrySchemes)) {
        return Status::InvalidArgument(
            fmt::format("{}: unknown registry URL {} (expected local:DIR, static:DC/WORKER, "
                        "static:ordinal, redis://HOST:PORT, redis-sentinel://HOST:PORT/MASTER, "
                        "etcd://HOST:PORT or zookeeper://HOST:PORT/PATH)",
                        subject, quote_text(text)));
      }
      return Status::Ok();
    case Kind::kBool:
      if (text != "true" && text != "false") {
        return Status::InvalidArgument(
            fmt::format("{} must be true or false, got {}", subject, quote_text(text)));
      }
      return Status::Ok();
    case Kind::kZone:
      if (!text.empty()) {
        Result<TimeZone> zone = store::load_time_zone(text);
        if (!zone.ok()) {
          return Status::InvalidArgument(fmt::format("{}: {}", subject, zone.status().message()));
        }
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

Status add_store(const std::string& subject, const std::string& url,
                 std::vector<std::string>& list) {
  if (!has_scheme(url, kStoreSchemes)) {
    return Status::InvalidArgument(
        fmt::format("{}: unknown store URL {} (expected sqlite:PATH, postgres://USER@HOST:PORT/DB, "
                    "mysql://USER:PASSWORD@HOST:PORT/DB, redis://HOST:PORT or "
                    "redis-sentinel://HOST:PORT/MASTER)",
                    subject, quote_text(url)));
  }
  // The position of a store is part of every ID it issues; a repeated one would
  // silently change K.
  if (std::find(list.begin(), list.end(), url) != list.end()) {
    return Status::InvalidArgument(
        fmt::format("{}: store {} is given twice", subject, quote_text(url)));
  }
  list.push_back(url);
  return Status::Ok();
}

Result<uint64_t> epoch_from_text(const std::string& subject, const std::string& text) {
  Result<int64_t> ms = parse_time(text);
  if (!ms.ok())
    return Status::InvalidArgument(fmt::format("{}: {}", subject, ms.status().message()));
  if (*ms < 0) {
    return Status::InvalidArgument(fmt::format("{} must not be before 1970-01-01", subject));
  }
  return static_cast<uint64_t>(*ms);
}

Result<Value> value_from_text(const Spec& spec, const TextSetting& given) {
  const std::string& subject = given.origin;
  Value value;
  if (spec.info.list) {
    for (const std::string& item : given.values) {
      IDFORGE_RETURN_IF_ERROR(add_store(subject, item, value.list));
    }
    return value;
  }
  // A flag given twice: the last one wins, as with most tools.
  const std::string& text = given.values.back();
  if (spec.check.kind == Kind::kUint) {
    Result<uint64_t> number = parse_u64(text, subject);
    if (!number.ok() || *number < spec.check.min || *number > spec.check.max) {
      return range_error(spec, subject, quote_text(text));
    }
    value.number = *number;
    return value;
  }
  if (spec.check.kind == Kind::kEpoch) {
    IDFORGE_ASSIGN_OR_RETURN(uint64_t ms, epoch_from_text(subject, text));
    value.number = ms;
    return value;
  }
  IDFORGE_RETURN_IF_ERROR(check_text(spec, subject, text));
  value.text = text;
  return value;
}

}  // namespace idforge::cli::settings

namespace idforge::cli {

using settings::Kind;
using settings::Spec;

std::span<const SettingInfo> serve_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> out;
    for (const Spec& spec : settings::all()) out.push_back(spec.info);
    return out;
  }();
  return infos;
}

std::string format_serve_config(const ServeConfig& config) {
  std::string out =
      "# idforge serve: the effective configuration (flags > IDFORGE_* > config file > "
      "defaults)\n";
  out +=
      fmt::format("# config file: {}\n", config.config_file.empty() ? "none" : config.config_file);
  std::string_view section = "";
  for (const Spec& spec : settings::all()) {
    const std::string_view key = spec.info.key;
    if (settings::section_of(key) != section) {
      section = settings::section_of(key);
      out += fmt::format("\n[{}]\n", section);
    }
    auto origin = config.origins.find(key);
    const std::string from =
        origin == config.origins.end() ? "" : fmt::format("from {}", origin->second);
    if (spec.check.kind == Kind::kSecret) {
      if (!config.admin_token_file.empty()) {
        out += "# admin_token: read from admin_token_file (value not shown)\n";
      } else if (!config.service.admin_token.empty()) {
        out += fmt::format("# admin_token: set {} (value not shown)\n", from);
      } else {
        out += "# admin_token: not set, admin routes are off\n";
      }
      continue;
    }
    const std::string value = spec.show(config);
    std::vector<std::string> notes;
    if (!from.empty()) notes.push_back(from);
    if (!spec.empty_hint.empty() && (value == "\"\"" || value == "[]" || value == "0")) {
      notes.push_back(fmt::format("{}: {}", value == "0" ? "0" : "empty", spec.empty_hint));
    }
    if ((key == "snowflake.epoch" || key == "snowflake.tick_ms") && from.empty()) {
      notes.emplace_back("the layout's");
    }
    out += fmt::format("{} = {}", settings::name_in_section(key), value);
    if (!notes.empty()) out += fmt::format("  # {}", fmt::join(notes, "; "));
    out += '\n';
  }
  return out;
}

}  // namespace idforge::cli
