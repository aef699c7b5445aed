// Client::open (the options checked), Client::parse and ParsedId: decoding without a server,
// the same rules and output as `idforge parse --json` (src/cli/cmd_parse.cc,
// src/cli/common.cc resolve_layout, src/cli/decoded_output.cc).
#include "idforge/client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "client/client_impl.h"
#include "core/text.h"
#include "idforge/layout.h"
#include "idforge/time_format.h"

namespace idforge {
namespace {

constexpr int64_t kMaxTickMs = 86'400'000;  // a day, as `idforge parse --tick-ms`

// A custom layout may name a field like one of the fixed keys; the field then gets a
// prefix rather than replacing the id or the time.
std::string field_key(const std::string& name) {
  for (std::string_view reserved : {"id", "layout", "unix_ms", "time"}) {
    if (name == reserved) return "field_" + name;
  }
  return name;
}

void append_json_string(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      *out += "\\u00";
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 0xF]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

Status check_option(bool ok, const std::string& what) {
  return ok ? Status::Ok() : Status::InvalidArgument(what);
}

}  // namespace

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::open(ClientOptions options) {
  if (options.servers.empty()) {
    return Status::InvalidArgument(
        "a client needs at least one server URL (ClientOptions::servers), like "
        "http://127.0.0.1:8080 or redis://127.0.0.1:6380");
  }
  std::vector<client::ServerAddress> servers;
  for (const std::string& url : options.servers) {
    IDFORGE_ASSIGN_OR_RETURN(client::ServerAddress address, client::parse_server_url(url));
    servers.push_back(std::move(address));
  }
  IDFORGE_RETURN_IF_ERROR(
      check_option(options.timeout_ms >= 1,
                   "timeout_ms must be >= 1, got " + std::to_string(options.timeout_ms)));
  IDFORGE_RETURN_IF_ERROR(
      check_option(options.batch >= 1, "batch must be >= 1, got " + std::to_string(options.batch)));
  const uint64_t refill_below = options.refill_below.value_or(options.batch / 2);
  IDFORGE_RETURN_IF_ERROR(
      check_option(refill_below <= options.batch, "refill_below must be from 0 to batch (" +
                                                      std::to_string(options.batch) + "), got " +
                                                      std::to_string(refill_below)));
  IDFORGE_RETURN_IF_ERROR(
      check_option(options.max_age_ms >= 0,
                   "max_age_ms must be >= 0, got " + std::to_string(options.max_age_ms)));
  IDFORGE_RETURN_IF_ERROR(check_option(
      options.segment_max_age_ms >= 0,
      "segment_max_age_ms must be >= 0, got " + std::to_string(options.segment_max_age_ms)));
  IDFORGE_RETURN_IF_ERROR(
      check_option(options.backoff_ms >= 0,
                   "backoff_ms must be >= 0, got " + std::to_string(options.backoff_ms)));
  IDFORGE_RETURN_IF_ERROR(check_option(options.max_backoff_ms >= options.backoff_ms,
                                       "max_backoff_ms must be >= backoff_ms (" +
                                           std::to_string(options.backoff_ms) + "), got " +
                                           std::to_string(options.max_backoff_ms)));
  int wake_pipe[2];
  if (::pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::IoError("cannot create the client's wake pipe: " + text::errno_text());
  }
  return std::unique_ptr<Client>(
      new client::ClientImpl(options, std::move(servers), refill_below, wake_pipe));
}

Result<ParsedId> Client::parse(uint64_t id, std::string_view layout,
                               std::optional<int64_t> epoch_ms, std::optional<int64_t> tick_ms) {
  int64_t epoch = -1;  // Layout::parse reads negative as "the layout's own"
  if (epoch_ms) {
    if (*epoch_ms < 0) return Status::InvalidArgument("epoch_ms must not be before 1970-01-01");
    epoch = *epoch_ms;
  }
  int64_t tick = -1;
  if (tick_ms) {
    if (*tick_ms < 1 || *tick_ms > kMaxTickMs) {
      return Status::InvalidArgument("tick_ms must be from 1 to " + std::to_string(kMaxTickMs) +
                                     ", got " + std::to_string(*tick_ms));
    }
    tick = *tick_ms;
  }
  const std::string_view spec = layout.empty() ? std::string_view("twitter") : layout;
  // A word without ':' can only be a preset: say which exist.
  if (spec.find(':') == std::string_view::npos && !Layout::preset(spec).ok()) {
    std::string presets;
    for (const std::string& name : Layout::preset_names()) {
      presets += (presets.empty() ? "" : ", ") + name;
    }
    return Status::InvalidArgument("unknown layout '" + std::string(spec) +
                                   "' (presets: " + presets + ")");
  }
  Result<Layout> resolved = Layout::parse(spec, epoch, tick);
  if (!resolved.ok()) {
    return Status::InvalidArgument("invalid layout '" + std::string(spec) +
                                   "': " + resolved.status().message());
  }
  const int bits = resolved->total_bits();
  if (bits < 64 && (id >> bits) != 0) {
    return Status::InvalidArgument("ID " + std::to_string(id) + " does not fit layout '" +
                                   resolved->name() + "', whose IDs have " + std::to_string(bits) +
                                   " bits (largest " + std::to_string((uint64_t{1} << bits) - 1) +
                                   ")");
  }
  Result<DecodedId> decoded = resolved->decode(id);
  if (!decoded.ok()) return Status::InvalidArgument(decoded.status().message());

  ParsedId out;
  out.id = id;
  out.layout = resolved->name();
  out.unix_ms = decoded->unix_ms;
  out.time = format_iso8601_utc(decoded->unix_ms);
  for (const FieldValue& field : decoded->fields) {
    if (field.role == FieldRole::kTime) continue;
    std::string key = field_key(field.name);
    // As a JSON object: a key seen before keeps its place and takes the later value.
    auto same = std::find_if(out.fields.begin(), out.fields.end(),
                             [&](const auto& kv) { return kv.first == key; });
    if (same != out.fields.end()) {
      same->second = field.value;
    } else {
      out.fields.emplace_back(std::move(key), field.value);
    }
  }
  return out;
}

uint64_t ParsedId::get(std::string_view key) const {
  for (const auto& [name, value] : fields) {
    if (name == key) return value;
  }
  return 0;
}

std::string ParsedId::to_json() const {
  std::string out = "{\"id\":\"" + std::to_string(id) + "\",\"layout\":";
  append_json_string(layout, &out);
  out += ",\"unix_ms\":" + std::to_string(unix_ms) + ",\"time\":";
  append_json_string(time, &out);
  for (const auto& [key, value] : fields) {
    out.push_back(',');
    append_json_string(key, &out);
    out += ":" + std::to_string(value);
  }
  out.push_back('}');
  return out;
}

}  // namespace idforge
