// Client::open (the options checked), Client::parse and ParsedId: decoding without a server,
// with the layout names and field keys of `idforge parse --json` (core/layout_text.h).
#include "idforge/client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "client/client_impl.h"
#include "core/json_string.h"
#include "core/layout_text.h"
#include "core/text.h"
#include "idforge/layout.h"
#include "idforge/time_format.h"

namespace idforge {
namespace {

constexpr int64_t kMaxTickMs = 86'400'000;  // a day, as `idforge parse --tick-ms`

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
  Result<Layout> resolved = resolve_layout_spec(layout, epoch, tick);
  if (!resolved.ok()) return Status::InvalidArgument(resolved.status().message());
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
  out.fields = decoded_field_values(*decoded);
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
  text::append_json_string(out, layout);
  out += ",\"unix_ms\":" + std::to_string(unix_ms) + ",\"time\":";
  text::append_json_string(out, time);
  for (const auto& [key, value] : fields) {
    out.push_back(',');
    text::append_json_string(out, key);
    out += ":" + std::to_string(value);
  }
  out.push_back('}');
  return out;
}

}  // namespace idforge
