#include "config/serve_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "config/values.h"
#include "coord/registry_factory.h"
#include "core/parse_u64.h"
#include "core/quote.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/time_format.h"
#include "log/log.h"
#include "server/net/net_server.h"
#include "store/store_factory.h"
#include "store/zoneinfo.h"
#include "url/url_options.h"

namespace idforge::config::settings {
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

// The table: key, variable, flag, value name, default (as a flag gives it; "" for
// none), help; then how it is read and shown. load_serve_config starts from these
// defaults, so ServeConfig's own member defaults never reach `idforge serve`.
constexpr Spec kSpecs[] = {
    {{"http", "IDFORGE_HTTP", "--http", "HOST:PORT", "127.0.0.1:8080",
      "HTTP listen address (JSON API, /metrics, the web page): IPv4:PORT, [IPv6]:PORT or "
      "localhost:PORT; port 0 picks a free one"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.http = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.http); }},
    {{"resp", "IDFORGE_RESP", "--resp", "HOST:PORT", "127.0.0.1:6380",
      "Redis-protocol listen address, in the same forms as http"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.resp = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.resp); }},
    {{"data_dir", "IDFORGE_DATA_DIR", "--data-dir", "DIR", "./idforge-data",
      "Local state, created 0700: the default SQLite store, the local: registry's lock files "
      "and the marks of the segment ranges served"},
     {Kind::kDir},
     [](ServeConfig& c, Value& v) { c.service.data_dir = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.data_dir); }},
    {{"admin_token", "IDFORGE_ADMIN_TOKEN", "--admin-token", "TOKEN", "",
      "Bearer token of the admin routes (/v1/admin/...); without one they answer 404. A flag "
      "shows in ps: prefer the variable or admin_token_file"},
     {Kind::kSecret},
     [](ServeConfig& c, Value& v) {
       if (!v.text.empty()) c.admin_token_file.clear();
       c.service.admin_token = std::move(v.text);
     },
     nullptr,
     "none: admin routes off"},
    {{"admin_token_file", "IDFORGE_ADMIN_TOKEN_FILE", "--admin-token-file", "FILE", "",
      "Read the admin token from this file (one word; surrounding whitespace is dropped). Both "
      "the token and the file in one layer is an error; a higher layer's one wins over a "
      "lower layer's other"},
     {Kind::kFile},
     [](ServeConfig& c, Value& v) {
       if (!v.text.empty()) c.service.admin_token.clear();
       c.admin_token_file = std::move(v.text);
     },
     [](const ServeConfig& c) { return toml_string(c.admin_token_file); },
     "none"},
    {{"tokens_file", "IDFORGE_TOKENS", "--tokens", "FILE", "",
      "Client tokens, one a line: SECRET SCOPE[,SCOPE...] [name=LABEL] [rate=N] [burst=N] "
      "[max_ids=N] [in_flight=N]; with it every route but /healthz, /readyz and the web page "
      "needs a token (HTTP Authorization: Bearer, RESP AUTH). Re-read on SIGHUP"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.tokens_file = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.tokens_file); },
     "none: no tokens, every client may do everything",
     "#security"},
    {{"tls_cert", "IDFORGE_TLS_CERT", "--tls-cert", "FILE", "",
      "PEM certificate chain: with tls_key, the http and resp listeners speak TLS 1.2/1.3. "
      "Re-read on SIGHUP"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.tls_cert = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.tls_cert); },
     "none: plain TCP",
     "#security"},
    {{"tls_key", "IDFORGE_TLS_KEY", "--tls-key", "FILE", "", "PEM private key of tls_cert"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.tls_key = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.tls_key); },
     "none"},
    {{"tls_client_ca", "IDFORGE_TLS_CLIENT_CA", "--tls-client-ca", "FILE", "",
      "PEM CA certificates: TLS clients must present a certificate one of them signed (mTLS)"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.tls_client_ca = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.tls_client_ca); },
     "none: no client certificates"},
    {{"plain_http", "IDFORGE_PLAIN_HTTP", "--plain-http", "HOST:PORT", "",
      "With TLS on: a plain-TCP HTTP listener beside the TLS one (for local health checks "
      "and scrapes on loopback)"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.plain_http = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.plain_http); },
     "none"},
    {{"plain_resp", "IDFORGE_PLAIN_RESP", "--plain-resp", "HOST:PORT", "",
      "With TLS on: a plain-TCP Redis-protocol listener beside the TLS one"},
     {Kind::kEndpoint},
     [](ServeConfig& c, Value& v) { c.plain_resp = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.plain_resp); },
     "none"},
    {{"shutdown_grace_ms", "IDFORGE_SHUTDOWN_GRACE_MS", "--shutdown-grace-ms", "MS", "5000",
      "On SIGTERM or SIGINT, how long in-flight requests may take to finish"},
     {Kind::kUint, 0, 600'000},
     [](ServeConfig& c, Value& v) { c.shutdown_grace_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.shutdown_grace_ms); }},

    {{"snowflake.layout", "IDFORGE_LAYOUT", "--layout", "NAME|SPEC", "twitter",
      "Preset (twitter, discord, instagram, sonyflake, baidu) or custom spec "
      "time:41,datacenter:5,worker:5,sequence:12; it must have one or two node fields, which "
      "the worker-id lease fills"},
     {Kind::kLayout},
     [](ServeConfig& c, Value& v) { c.layout = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.layout); }},
    {{"snowflake.epoch", "IDFORGE_EPOCH", "--epoch", "MS|ISO", "",
      "Epoch as Unix ms or ISO-8601 text; in TOML also a date-time "
      "(epoch = 2020-01-01T00:00:00Z)"},
     {Kind::kEpoch},
     [](ServeConfig& c, Value& v) { c.epoch_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.layout.epoch_ms()); },
     "the layout's"},
    {{"snowflake.tick_ms", "IDFORGE_TICK_MS", "--tick-ms", "MS", "", "Tick length in ms"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.tick_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.layout.tick_ms()); },
     "the layout's"},
    {{"snowflake.policy", "IDFORGE_POLICY", "--policy", "POLICY", "logical",
      "Clock rollback policy: logical, wait, reject or ring"},
     {Kind::kPolicy},
     [](ServeConfig& c, Value& v) { c.service.policy = parse_policy(v.text).value(); },
     [](const ServeConfig& c) { return toml_string(policy_name(c.service.policy)); },
     {},
     "snowflake.md"},
    {{"snowflake.max_drift_ms", "IDFORGE_MAX_DRIFT_MS", "--max-drift-ms", "MS", "1000",
      "Policy logical: how far ahead of the clock IDs may run (0: wait for the next real tick)"},
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
      "Longest one request waits for the clock (a rollback, an exhausted sequence)"},
     {Kind::kUint, 0, 60'000},
     [](ServeConfig& c, Value& v) { c.service.max_wait_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.max_wait_ms); }},

    {{"segment.stores", "IDFORGE_STORE", "--store", "URL", "",
      "Segment store URLs: {forms}; several stripe each tag over them (always the same stores, in "
      "the same order). TOML: an array; variable: separated by commas; flag: repeated",
      /*list=*/true},
     {Kind::kStores},
     [](ServeConfig& c, Value& v) { c.service.store_urls = std::move(v.list); },
     [](const ServeConfig& c) { return toml_list(c.service.store_urls); },
     "sqlite:DATA_DIR/segments.db",
     "#segment-stores"},
    {{"segment.wait_ms", "IDFORGE_SEGMENT_WAIT_MS", "--segment-wait-ms", "MS", "1000",
      "Longest a request waits for the store when a tag's two buffers are empty"},
     {Kind::kUint, 0, 600'000},
     [](ServeConfig& c, Value& v) { c.service.segment_wait_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.segment_wait_ms); }},
    {{"segment.max_step", "IDFORGE_MAX_STEP", "--max-step", "N", "1000000",
      "Upper bound of a tag's dynamic step"},
     {Kind::kUint, 1, 1'000'000'000},
     [](ServeConfig& c, Value& v) { c.service.max_step = v.number; },
     [](const ServeConfig& c) { return num(c.service.max_step); }},
    {{"segment.failover_margin", "IDFORGE_SEGMENT_FAILOVER_MARGIN", "--failover-margin", "N", "0",
      "Numbers every tag moves forward when a store's history changes (a promoted replica, a "
      "restore)"},
     {Kind::kUint, 0, uint64_t{1} << 62},
     [](ServeConfig& c, Value& v) { c.service.failover_margin = v.number; },
     [](const ServeConfig& c) { return num(c.service.failover_margin); },
     "64 x max_step",
     "stores.md#when-a-store-goes-back"},
    {{"segment.allow_unsafe_store", "IDFORGE_ALLOW_UNSAFE_STORE", "--allow-unsafe-store",
      "true|false", "false",
      "Issue segment IDs from a store whose settings can lose committed ranges (Redis without "
      "appendfsync always, PostgreSQL with fsync or synchronous_commit off, MySQL with "
      "innodb_flush_log_at_trx_commit other than 1)"},
     {Kind::kBool},
     [](ServeConfig& c, Value& v) { c.service.allow_unsafe_store = v.text == "true"; },
     [](const ServeConfig& c) {
       return std::string(c.service.allow_unsafe_store ? "true" : "false");
     }},
    {{"segment.fleet_floor", "IDFORGE_FLEET_FLOOR", "--fleet-floor", "true|false", "true",
      "Record every segment range in the worker registry before it is used and refuse one the "
      "fleet took already (a store that was wiped, restored or lowered). false only to compare; "
      "static: worker ids have no shared place and no floor"},
     {Kind::kBool},
     [](ServeConfig& c, Value& v) { c.service.fleet_floor = v.text == "true"; },
     [](const ServeConfig& c) { return std::string(c.service.fleet_floor ? "true" : "false"); },
     {},
     "stores.md#the-fleet-floor"},
    {{"segment.tag_detail_limit", "IDFORGE_TAG_DETAIL_LIMIT", "--tag-detail-limit", "N", "1000",
      "Tags shown one by one in /metrics and /v1/status. Past it /metrics gives one series over "
      "all tags (sums, the emptiest buffer, the slowest refill) and /v1/status lists the first N "
      "by name; /v1/status?tag=NAME shows any one. 0: never per tag"},
     {Kind::kUint, 0, 10'000'000},
     [](ServeConfig& c, Value& v) { c.service.tag_detail_limit = static_cast<size_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.tag_detail_limit); }},
    {{"segment.serial_zone", "IDFORGE_SERIAL_ZONE", "--serial-zone", "ZONE", "",
      "Time zone of the dates in serial numbers: UTC, +08:00 or an IANA name (Asia/Shanghai, "
      "from /usr/share/zoneinfo)"},
     {Kind::kZone},
     [](ServeConfig& c, Value& v) { c.service.serial_zone = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.serial_zone); },
     "UTC"},
    {{"segment.tinyid_tokens", "IDFORGE_TINYID_TOKENS", "--tinyid-tokens", "URL", "",
      "MySQL database ({mysql}) whose tiny_id_token table holds the "
      "tokens of Tinyid's routes (/tinyid/id/...), read at start and every minute; none: "
      "those routes refuse every token"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.service.tinyid_tokens_url = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(redact_url(c.service.tinyid_tokens_url)); },
     "none",
     "migrating.md#from-tinyid"},

    {{"worker.registry", "IDFORGE_REGISTRY", "--registry", "URL", "",
      "Worker-id registry: {forms}"},
     {Kind::kRegistry},
     [](ServeConfig& c, Value& v) { c.service.registry_url = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.registry_url); },
     "local:DATA_DIR/workers",
     "#worker-ids"},
    {{"worker.identity", "IDFORGE_IDENTITY", "--identity", "ID", "",
      "Who holds the lease; a restarted server with the same identity gets its old slot back"},
     {Kind::kText},
     [](ServeConfig& c, Value& v) { c.service.identity = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.service.identity); },
     "HOSTNAME:HTTP_PORT (HOSTNAME:serve with port 0)"},

    {{"limits.max_count", "IDFORGE_MAX_COUNT", "--max-count", "N", "10000",
      "Most IDs one request may ask for"},
     {Kind::kUint, 1, kMaxCount},
     [](ServeConfig& c, Value& v) { c.service.max_count = v.number; },
     [](const ServeConfig& c) { return num(c.service.max_count); }},
    {{"limits.connection_rate", "IDFORGE_CONNECTION_RATE", "--connection-rate", "N", "0",
      "Requests per second one connection may make (a token bucket); beyond, HTTP 429 or a "
      "RESP error"},
     {Kind::kUint, 0, 10'000'000},
     [](ServeConfig& c, Value& v) { c.connection_rate = v.number; },
     [](const ServeConfig& c) { return num(c.connection_rate); },
     "no limit"},
    {{"limits.connection_burst", "IDFORGE_CONNECTION_BURST", "--connection-burst", "N", "0",
      "Requests a connection may make at once above connection_rate"},
     {Kind::kUint, 0, 10'000'000},
     [](ServeConfig& c, Value& v) { c.connection_burst = v.number; },
     [](const ServeConfig& c) { return num(c.connection_burst); },
     "connection_rate"},
    {{"limits.batch_slice", "IDFORGE_BATCH_SLICE", "--batch-slice", "N", "1024",
      "A batch of more IDs than this is made and written this many at a time, letting the "
      "event loop serve other connections in between (0: a batch in one go)"},
     {Kind::kUint, 0, kMaxCount},
     [](ServeConfig& c, Value& v) { c.service.batch_slice = v.number; },
     [](const ServeConfig& c) { return num(c.service.batch_slice); }},
    {{"limits.idle_timeout_ms", "IDFORGE_IDLE_TIMEOUT_MS", "--idle-timeout-ms", "MS", "60000",
      "Close a connection that sent nothing for this long"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.net.idle_timeout_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.idle_timeout_ms); }},
    {{"limits.request_timeout_ms", "IDFORGE_REQUEST_TIMEOUT_MS", "--request-timeout-ms", "MS",
      "10000",
      "Close a connection whose started request is not complete after this (HTTP answers 408)"},
     {Kind::kUint, 1, kDayMs},
     [](ServeConfig& c, Value& v) { c.net.request_timeout_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.request_timeout_ms); }},
    {{"limits.max_connections", "IDFORGE_MAX_CONNECTIONS", "--max-connections", "N", "10000",
      "Open connections; beyond, new ones are told 'max number of clients reached' (HTTP 503) "
      "and closed. Capped at the open-file limit less 128 kept for the server's own files"},
     {Kind::kUint, 1, 1'000'000},
     [](ServeConfig& c, Value& v) { c.net.max_connections = static_cast<size_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.max_connections); }},
    {{"limits.max_pending_bytes", "IDFORGE_MAX_PENDING_BYTES", "--max-pending-bytes", "BYTES",
      "1048576", "Unanswered input one connection may send ahead; beyond, it is closed"},
     {Kind::kUint, 1024, 1ULL << 30},
     [](ServeConfig& c, Value& v) { c.net.max_pending_bytes = static_cast<size_t>(v.number); },
     [](const ServeConfig& c) { return num(c.net.max_pending_bytes); }},

    {{"threads.io", "IDFORGE_IO_THREADS", "--io-threads", "N", "0", "Event-loop threads"},
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
    {{"threads.workers", "IDFORGE_WORKER_THREADS", "--worker-threads", "N", "32",
      "Threads that run requests waiting on a store or coordinator; tags that wait at "
      "once share the store's commit, so fewer threads make first requests queue"},
     {Kind::kUint, 1, kMaxThreads},
     [](ServeConfig& c, Value& v) { c.net.worker_threads = static_cast<int>(v.number); },
     [](const ServeConfig& c) { return num(c.net.worker_threads); }},

    {{"log.level", "IDFORGE_LOG_LEVEL", "--log-level", "LEVEL", "info",
      "Least severe log lines written to stderr: trace, debug, info, warn, error or off"},
     {Kind::kLogLevel},
     [](ServeConfig& c, Value& v) { c.log_level = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.log_level); },
     {},
     "#logs"},
    {{"log.format", "IDFORGE_LOG_FORMAT", "--log-format", "text|json", "text",
      "Log lines as key=value text or as one JSON object a line"},
     {Kind::kLogFormat},
     [](ServeConfig& c, Value& v) { c.log_format = std::move(v.text); },
     [](const ServeConfig& c) { return toml_string(c.log_format); }},
    {{"log.access_sample", "IDFORGE_ACCESS_LOG_SAMPLE", "--access-log-sample", "N", "0",
      "Log one request in N as an access event (method and path or command, status, time; "
      "never a header)"},
     {Kind::kUint, 0, 1'000'000'000},
     [](ServeConfig& c, Value& v) { c.net.access_log_sample = v.number; },
     [](const ServeConfig& c) { return num(c.net.access_log_sample); },
     "no access log"},
    {{"log.slow_store_ms", "IDFORGE_SLOW_STORE_MS", "--slow-store-ms", "MS", "500",
      "A store or coordinator round trip (a probe, a range fetch, a high-water mark write) "
      "slower than this is logged as slow"},
     {Kind::kUint, 1, 600'000},
     [](ServeConfig& c, Value& v) { c.service.slow_store_ms = static_cast<int64_t>(v.number); },
     [](const ServeConfig& c) { return num(c.service.slow_store_ms); }},
};

}  // namespace

std::span<const Spec> all() { return kSpecs; }

std::string help_of(const Spec& spec) {
  // The URL forms come from the tables of kinds (store_factory.h, registry_factory.h).
  std::string help(spec.info.help);
  auto put = [&help](std::string_view mark, const std::string& text) {
    if (const size_t at = help.find(mark); at != std::string::npos) {
      help.replace(at, mark.size(), text);
    }
  };
  if (spec.check.kind == Kind::kStores) put("{forms}", store::store_url_forms());
  if (spec.check.kind == Kind::kRegistry) put("{forms}", coord::registry_url_forms());
  put("{mysql}", store::store_url_form("mysql"));
  return help;
}

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
      if (text.empty() && spec.info.default_value.empty()) return Status::Ok();  // optional
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
      if (Status known = coord::check_registry_url(text); !known.ok()) {
        return Status::InvalidArgument(fmt::format("{}: {}", subject, known.message()));
      }
      return Status::Ok();
    case Kind::kBool:
      if (text != "true" && text != "false") {
        return Status::InvalidArgument(
            fmt::format("{} must be true or false, got {}", subject, quote_text(text)));
      }
      return Status::Ok();
    case Kind::kLogLevel:
      if (!log::parse_level(text).ok()) {
        return Status::InvalidArgument(
            fmt::format("{} must be trace, debug, info, warn, error or off, got {}", subject,
                        quote_text(text)));
      }
      return Status::Ok();
    case Kind::kLogFormat:
      if (!log::parse_format(text).ok()) {
        return Status::InvalidArgument(
            fmt::format("{} must be text or json, got {}", subject, quote_text(text)));
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
  if (Status known = store::check_store_url(url); !known.ok()) {
    return Status::InvalidArgument(fmt::format("{}: {}", subject, known.message()));
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

std::string default_shown(const Spec& spec) {
  const std::string_view value = spec.info.default_value;
  if (value.empty()) return std::string(spec.empty_hint.empty() ? "none" : spec.empty_hint);
  if (spec.empty_hint.empty()) return std::string(value);
  return fmt::format("{} ({})", value, spec.empty_hint);
}

}  // namespace idforge::config::settings

namespace idforge::config {

using settings::Spec;

std::span<const SettingInfo> serve_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> out;
    for (const Spec& spec : settings::all()) out.push_back(spec.info);
    return out;
  }();
  return infos;
}

}  // namespace idforge::config
