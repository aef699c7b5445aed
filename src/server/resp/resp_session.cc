#include "server/resp/resp_session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/quote.h"
#include "core/text.h"
#include "idforge/time_format.h"
#include "server/net/access_log.h"
#include "server/resp/resp_parser.h"
#include "server/resp/resp_reply.h"
#include "server/resp/resp_session_impl.h"
#include "server/service/metrics.h"

#ifndef IDFORGE_VERSION
#define IDFORGE_VERSION "0.0.0"
#endif

namespace idforge::server {
namespace resp {
namespace {

using text::ascii_lower;

// Client names as Redis allows them: printable, no spaces.
bool valid_client_name(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// Text for an INFO value: one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return text;
}

// One table, one handler per command (a table as Redis does). The hot ones come first.
// Columns: name, arity (min, max, counting the name), route, handler, where the count
// of IDs is (0: none), not queued by MULTI.
constexpr CommandSpec kCommands[] = {
    {"incr", 2, 2, Route::kSegment, &RespSession::incr, 2},
    {"incrby", 3, 3, Route::kSegment, &RespSession::incrby, 2},
    {"id.next", 2, 3, Route::kSegment, &RespSession::id_next, 2},
    {"id.snowflake", 1, 2, Route::kSnowflake, &RespSession::id_snowflake, 1},
    {"id.uuid7", 1, 2, Route::kUuid7, &RespSession::id_uuid7, 1},
    {"id.ulid", 1, 2, Route::kUlid, &RespSession::id_ulid, 1},
    {"id.decode", 2, 3, Route::kDecode, &RespSession::id_decode},
    {"multi", 1, 1, Route::kRespOther, &RespSession::multi, 0, true},
    {"exec", 1, 1, Route::kRespOther, &RespSession::exec, 0, true},
    {"discard", 1, 1, Route::kRespOther, &RespSession::discard, 0, true},
    {"ping", 1, 2, Route::kRespOther, &RespSession::ping},
    {"echo", 2, 2, Route::kRespOther, &RespSession::echo},
    {"hello", 1, kAny, Route::kRespOther, &RespSession::hello},
    {"auth", 2, kAny, Route::kRespOther, &RespSession::auth},
    {"info", 1, kAny, Route::kRespOther, &RespSession::info},
    {"command", 1, kAny, Route::kRespOther, &RespSession::command},
    {"client", 2, kAny, Route::kRespOther, &RespSession::client},
    {"select", 2, 2, Route::kRespOther, &RespSession::select},
    {"quit", 1, kAny, Route::kRespOther, &RespSession::quit, 0, true},
    // Refused with the reason (resp_increment.cc): IDs never go down and are not values.
    {"decr", 2, 2, Route::kSegment, &RespSession::refused},
    {"decrby", 3, 3, Route::kSegment, &RespSession::refused},
    {"incrbyfloat", 3, 3, Route::kSegment, &RespSession::refused},
    {"get", 2, 2, Route::kRespOther, &RespSession::refused},
    {"set", 3, kAny, Route::kRespOther, &RespSession::refused},
};

const CommandSpec* find_command(std::string_view name) {
  for (const CommandSpec& spec : kCommands) {
    if (text::equals_ignore_case(name, spec.name)) return &spec;
  }
  return nullptr;
}

// Redis's words: "unknown command 'FOO', with args beginning with: 'a' 'b' ".
void put_unknown_command(std::string& out, Args args) {
  constexpr size_t kShown = 128;
  std::string shown;
  for (size_t i = 1; i < args.size() && shown.size() < kShown; ++i) {
    shown += quote_text(args[i], '\'', kShown - shown.size());
    shown += ' ';
  }
  put_error(out, fmt::format("ERR unknown command {}, with args beginning with: {}",
                             quote_text(args[0], '\'', kShown), shown));
}

}  // namespace

void RespSession::put_map(std::string& out, size_t pairs) const {
  if (proto_ == 3) {
    put_number(out, '%', pairs);
  } else {
    put_number(out, '*', pairs * 2);
  }
}

void RespSession::put_null(std::string& out) const { out += proto_ == 3 ? "_\r\n" : "$-1\r\n"; }

Result<uint64_t> RespSession::count_arg(Args args, size_t index) const {
  if (args.size() <= index) return uint64_t{1};
  return parse_request_count(args[index], service_.config().max_count);
}

Session::Step RespSession::feed(std::string_view in, std::string& out) {
  if (closed_) return {in.size(), Next::kClose, {}};
  // A batch in progress goes first: its answer comes before those of later commands.
  if (batch_.active() && batch_.next(service_.metrics(), out) == 0) return {0, Next::kFlush, {}};
  size_t pos = 0;
  RequestTally tally(service_.metrics(), kProtocolIndex);
  start_ = tally.start();
  while (true) {
    const RespParser::Outcome parsed = parser_.parse(in.substr(pos));
    switch (parsed.kind) {
      case RespParser::Kind::kNeedMore:
        return {pos, Next::kNeedMore, {}};
      case RespParser::Kind::kEmpty:
        pos += parsed.consumed;
        continue;
      case RespParser::Kind::kError:
        put_error(out, fmt::format("ERR Protocol error: {}", parsed.error));
        tally.add(Route::kRespOther, 400);
        if (access_log_ != nullptr && access_log_->sample()) {
          access_log_->write_resp("-", 400, seconds_since(start_));
        }
        closed_ = true;
        return {in.size(), Next::kClose, {}};
      case RespParser::Kind::kCommand:
        break;
    }
    pos += parsed.consumed;
    const Args args = parser_.args();
    const CommandSpec* spec = find_command(args[0]);
    const Route route = spec != nullptr ? spec->route : Route::kNotFound;
    sampled_ = access_log_ != nullptr && access_log_->sample();
    command_ = spec != nullptr ? spec->name : std::string_view();
    Answer answer;
    InFlight ticket;  // the command's place under its token's in_flight limit
    if (!connection_admits(spec, out, &answer)) {
      // refused: the connection's rate
    } else if (spec == nullptr) {
      put_unknown_command(out, args);
      answer.status = 404;
      multi_refused_ = multi_refused_ || in_multi_;  // as Redis: EXEC then aborts
    } else if (args.size() < spec->min_args || args.size() > spec->max_args) {
      put_error(out, fmt::format("ERR wrong number of arguments for '{}' command", spec->name));
      answer.status = 400;
      multi_refused_ = multi_refused_ || in_multi_;
    } else if (!token_admits(*spec, args, out, &ticket, &answer)) {
      // refused: NOAUTH, NOPERM or a limit of the token
    } else if (in_multi_ && !spec->not_queued) {
      answer = queue(*spec, args, out);
    } else {
      sliceable_ = !spec->not_queued;  // not EXEC: its answer is one array, made at once
      answer = (this->*spec->handler)(args, out);
      sliceable_ = false;
    }
    // A batch (start_batch) or a job is counted and logged once it has answered, and
    // holds the command's in-flight place until then (request_lifecycle.h).
    if (std::exchange(batch_starting_, false) && answer.next == Next::kFlush) {
      batch_.start(record(route, std::move(ticket)),
                   [this](std::string& slice_out) { return write_batch_slice(slice_out); });
      return {pos, Next::kFlush, {}};
    }
    if (answer.next == Next::kBlocking) {
      return {pos, Next::kBlocking,
              answer_on_worker(service_.metrics(), record(route, std::move(ticket)),
                               std::exchange(job_, nullptr))};
    }
    if (answer.status != kQueued) {
      tally.add(route, answer.status);
      if (sampled_) {
        access_log_->write_resp(spec != nullptr ? spec->name : args[0], answer.status,
                                seconds_since(start_), token_label());
      }
    }
    if (answer.next == Next::kClose) {
      closed_ = true;
      return {pos, Next::kClose, {}};
    }
    if (out.size() >= kFlushBytes) return {pos, Next::kFlush, {}};
  }
}

RequestRecord RespSession::record(Route route, InFlight ticket) {
  RequestRecord r;
  r.protocol = kProtocolIndex;
  r.route = route;
  r.arrived = start_;
  r.ticket = std::move(ticket);
  if (sampled_) {
    r.access = access_log_;
    r.what = command_;
    r.token = token_label();
  }
  return r;
}

Answer RespSession::ping(Args args, std::string& out) {
  if (args.size() == 1) {
    put_simple(out, "PONG");
  } else {
    put_bulk(out, args[1]);
  }
  return {};
}

Answer RespSession::echo(Args args, std::string& out) {
  put_bulk(out, args[1]);
  return {};
}

Answer RespSession::hello(Args args, std::string& out) {
  int proto = proto_;
  std::string_view new_name;
  bool set_name = false;
  std::string_view password;
  bool auth_given = false;
  if (args.size() > 1) {
    long long version = 0;
    const char* end = args[1].data() + args[1].size();
    auto [ptr, ec] = std::from_chars(args[1].data(), end, version);
    if (ec != std::errc() || ptr != end) {
      put_error(out, "ERR Protocol version is not an integer or out of range");
      return {400};
    }
    if (version != 2 && version != 3) {
      put_error(out, "NOPROTO unsupported protocol version");
      return {400};
    }
    proto = static_cast<int>(version);
    for (size_t i = 2; i < args.size();) {
      // AUTH user secret: the token is the secret; the user name is ignored.
      if (text::equals_ignore_case(args[i], "auth") && i + 2 < args.size()) {
        password = args[i + 2];
        auth_given = true;
        i += 3;
      } else if (text::equals_ignore_case(args[i], "setname") && i + 1 < args.size()) {
        if (!valid_client_name(args[i + 1])) {
          put_error(out, "ERR Client names cannot contain spaces, newlines or special characters.");
          return {400};
        }
        new_name = args[i + 1];
        set_name = true;
        i += 2;
      } else {
        put_error(out, fmt::format("ERR Syntax error in HELLO option {}", quote_text(args[i])));
        return {400};
      }
    }
  }
  // As Redis: a wrong secret leaves the protocol as it was; without tokens there is
  // no user to be (never a silent OK); unauthenticated, HELLO says how to be.
  if (auth_given && (!auth_.on() || auth_.authenticate(password) == nullptr)) {
    if (auth_.on()) service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kWrong);
    put_error(out, "WRONGPASS invalid username-password pair or user is disabled.");
    return {401};
  }
  if (auth_.on() && auth_.token() == nullptr) {
    service_.metrics().record_auth_failure(kProtocolIndex, AuthFailure::kMissing);
    put_error(out,
              "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
              "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
              "the RESP protocol version at the same time");
    return {401};
  }
  proto_ = proto;
  if (set_name) name_ = new_name;
  // The fields Redis answers, in its order.
  put_map(out, 7);
  for (std::string_view text : {"server", "idforge", "version", IDFORGE_VERSION, "proto"}) {
    put_bulk(out, text);
  }
  put_number(out, ':', proto_);
  put_bulk(out, "id");
  put_number(out, ':', id_);
  for (std::string_view text : {"mode", "standalone", "role", "master", "modules"}) {
    put_bulk(out, text);
  }
  out += "*0\r\n";
  return {};
}

Answer RespSession::id_snowflake(Args args, std::string& out) {
  Result<uint64_t> count = count_arg(args, 1);
  if (!count.ok()) return {put_status(out, count.status())};
  if (may_slice(*count)) return start_batch(BatchKind::kSnowflake, *count, args.size() > 1);
  ids_.resize(*count);
  const std::span<uint64_t> ids(ids_.data(), *count);
  const Status made = service_.snowflake(ids);
  if (!made.ok()) return {put_status(out, made)};
  put_ids(out, ids, args.size() > 1);
  return {};
}

Answer RespSession::id_uuid7(Args args, std::string& out) {
  Result<uint64_t> count = count_arg(args, 1);
  if (!count.ok()) return {put_status(out, count.status())};
  if (may_slice(*count)) return start_batch(BatchKind::kUuid7, *count, args.size() > 1);
  uuids_.resize(*count);
  service_.uuid7(uuids_);
  if (args.size() > 1) put_number(out, '*', *count);
  for (const Uuid& uuid : uuids_) put_bulk(out, uuid.to_string());
  return {};
}

Answer RespSession::id_ulid(Args args, std::string& out) {
  Result<uint64_t> count = count_arg(args, 1);
  if (!count.ok()) return {put_status(out, count.status())};
  if (may_slice(*count)) return start_batch(BatchKind::kUlid, *count, args.size() > 1);
  ulids_.resize(*count);
  service_.ulid(ulids_);
  if (args.size() > 1) put_number(out, '*', *count);
  for (const Ulid& ulid : ulids_) put_bulk(out, ulid.to_string());
  return {};
}

Answer RespSession::id_decode(Args args, std::string& out) {
  Result<uint64_t> id = parse_id(args[1]);
  if (!id.ok()) return {put_status(out, id.status())};
  Result<Layout> layout = service_.layout_named(args.size() > 2 ? args[2] : std::string_view());
  if (!layout.ok()) return {put_status(out, layout.status())};
  Result<DecodedId> decoded = layout->decode(*id);
  if (!decoded.ok()) return {put_status(out, decoded.status())};

  // The keys of `idforge parse --json` and GET /v1/decode: id, layout, unix_ms, time,
  // then each non-time field by name (prefixed when it would clash with those four).
  size_t pairs = 4;
  for (const FieldValue& field : decoded->fields) pairs += field.role != FieldRole::kTime;
  put_map(out, pairs);
  put_bulk(out, "id");
  const fmt::format_int id_text(*id);  // text: above 2^63 it would not fit a RESP integer
  put_bulk(out, std::string_view(id_text.data(), id_text.size()));
  put_bulk(out, "layout");
  put_bulk(out, layout->name());
  put_bulk(out, "unix_ms");
  put_number(out, ':', decoded->unix_ms);
  put_bulk(out, "time");
  put_bulk(out, format_iso8601_utc(decoded->unix_ms));
  for (const FieldValue& field : decoded->fields) {
    if (field.role == FieldRole::kTime) continue;
    const bool clashes = field.name == "id" || field.name == "layout" || field.name == "unix_ms" ||
                         field.name == "time";
    put_bulk(out, clashes ? "field_" + field.name : field.name);
    put_number(out, ':', field.value);
  }
  return {};
}

void RespSession::put_info(std::string_view section, std::string& body) const {
  auto to = std::back_inserter(body);
  if (!body.empty()) body += "\r\n";
  if (section == "server") {
    const ServiceStatus s = service_.status();
    fmt::format_to(to,
                   "# Server\r\nidforge_version:{}\r\nredis_mode:standalone\r\nprocess_id:{}\r\n"
                   "uptime_in_seconds:{}\r\nuptime_in_days:{}\r\nresp_protocol:{}\r\n",
                   IDFORGE_VERSION, getpid(), s.uptime_ms / 1000, s.uptime_ms / 86'400'000, proto_);
  } else if (section == "stats") {
    const Metrics& m = service_.metrics();
    uint64_t total_ids = 0;
    for (int k = 0; k < kIdKinds; ++k) total_ids += m.ids(static_cast<IdKind>(k));
    fmt::format_to(to, "# Stats\r\ntotal_requests:{}\r\nids_issued:{}\r\n", m.total_requests(),
                   total_ids);
    for (int k = 0; k < kIdKinds; ++k) {
      const auto kind = static_cast<IdKind>(k);
      fmt::format_to(to, "ids_issued_{}:{}\r\n", id_kind_name(kind), m.ids(kind));
    }
  } else if (section == "idforge") {
    const ServiceStatus s = service_.status();
    fmt::format_to(to,
                   "# Idforge\r\nlayout:{}\r\nlayout_spec:{}\r\npolicy:{}\r\nfenced:{}\r\n"
                   "lease_held:{}\r\nleases_taken:{}\r\n",
                   one_line(s.layout_label), one_line(s.layout_spec), s.policy, int{s.fenced},
                   int{s.has_lease}, s.leases_taken);
    if (s.has_lease) {
      fmt::format_to(to,
                     "lease_state:{}\r\nlease_slot:{}\r\nlease_datacenter:{}\r\nlease_worker:{}\r\n"
                     "lease_ttl_ms:{}\r\nlease_seconds_left:{:.1f}\r\nlease_renewals:{}\r\n"
                     "lease_failures:{}\r\nlease_last_error:{}\r\n",
                     lease_state_name(s.keeper.state), s.lease.slot, s.lease.datacenter,
                     s.lease.worker, s.lease.ttl_ms, s.lease_seconds_left, s.keeper.renewals,
                     s.keeper.failures, one_line(s.keeper.last_error));
    }
    fmt::format_to(to,
                   "clock_offset_ms:{}\r\nclock_borrowed_ms:{}\r\nclock_rollbacks:{}\r\n"
                   "clock_waited_ms:{}\r\ntime_left_ms:{}\r\nsegments_ok:{}\r\n"
                   "segments_error:{}\r\nsegment_tags:{}\r\n",
                   s.clock_offset_ms, s.counters.borrowed_ms, s.counters.rollbacks,
                   s.counters.waited_ms, s.time_left_ms, int{s.segments_ok},
                   one_line(s.segments_error), s.tags.size());
    // Tag names may hold ':', so the name goes in the value, as Redis's "db0:keys=..".
    for (size_t i = 0; i < s.tags.size(); ++i) {
      const SegmentBufferStats& t = s.tags[i].stats;
      fmt::format_to(to,
                     "segment_tag_{}:name={},step={},first={},count={},used={},next_ready={},"
                     "fetching={},fetches={},fetch_failures={},last_fetch_ms={}\r\n",
                     i, s.tags[i].tag, t.step, t.current_first, t.current_count, t.current_used,
                     int{t.next_ready}, int{t.fetching}, t.fetches, t.fetch_failures,
                     t.last_fetch_ms);
    }
  }
}

Answer RespSession::info(Args args, std::string& out) {
  static constexpr std::string_view kSections[] = {"server", "stats", "idforge"};
  std::string body;
  if (args.size() == 1) {
    for (std::string_view section : kSections) put_info(section, body);
  } else {
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string name = ascii_lower(args[i]);
      if (name == "all" || name == "everything" || name == "default") {
        body.clear();
        for (std::string_view section : kSections) put_info(section, body);
        break;
      }
      put_info(name, body);  // an unknown section adds nothing, as in Redis
    }
  }
  put_bulk(out, body);
  return {};
}

Answer RespSession::command(Args args, std::string& out) {
  // Just enough for redis-cli and client libraries that ask at start-up.
  if (args.size() == 1) {
    out += "*0\r\n";
  } else if (text::equals_ignore_case(args[1], "docs")) {
    put_map(out, 0);
  } else if (text::equals_ignore_case(args[1], "count") && args.size() == 2) {
    put_number(out, ':', std::size(kCommands));
  } else if (text::equals_ignore_case(args[1], "list") && args.size() == 2) {
    put_number(out, '*', std::size(kCommands));
    for (const CommandSpec& spec : kCommands) put_bulk(out, spec.name);
  } else if (text::equals_ignore_case(args[1], "info")) {
    put_number(out, '*', args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) put_null(out);
  } else if (text::equals_ignore_case(args[1], "count") ||
             text::equals_ignore_case(args[1], "list")) {
    put_error(out, fmt::format("ERR wrong number of arguments for 'command|{}' command",
                               ascii_lower(args[1])));
    return {400};
  } else {
    put_error(out,
              fmt::format("ERR unknown subcommand {}. Try COMMAND HELP.", quote_text(args[1])));
    return {400};
  }
  return {};
}

Answer RespSession::client(Args args, std::string& out) {
  const std::string_view sub = args[1];
  size_t arity = 0;  // 0: unknown subcommand
  if (text::equals_ignore_case(sub, "setname")) arity = 3;
  if (text::equals_ignore_case(sub, "getname") || text::equals_ignore_case(sub, "id") ||
      text::equals_ignore_case(sub, "info"))
    arity = 2;
  if (text::equals_ignore_case(sub, "setinfo")) arity = 4;
  if (arity == 0) {
    put_error(out, fmt::format("ERR unknown subcommand {}. Try CLIENT HELP.", quote_text(sub)));
    return {400};
  }
  if (args.size() != arity) {
    put_error(out, fmt::format("ERR wrong number of arguments for 'client|{}' command",
                               ascii_lower(sub)));
    return {400};
  }
  if (text::equals_ignore_case(sub, "setname")) {
    if (!valid_client_name(args[2])) {
      put_error(out, "ERR Client names cannot contain spaces, newlines or special characters.");
      return {400};
    }
    name_ = args[2];
    put_simple(out, "OK");
  } else if (text::equals_ignore_case(sub, "getname")) {
    if (name_.empty()) {
      put_null(out);
    } else {
      put_bulk(out, name_);
    }
  } else if (text::equals_ignore_case(sub, "id")) {
    put_number(out, ':', id_);
  } else if (text::equals_ignore_case(sub, "info")) {
    put_bulk(out, fmt::format("id={} name={} resp={}\n", id_, name_, proto_));
  } else {  // setinfo: library name and version, accepted and not kept
    put_simple(out, "OK");
  }
  return {};
}

Answer RespSession::select(Args args, std::string& out) {
  long long index = 0;
  const char* end = args[1].data() + args[1].size();
  auto [ptr, ec] = std::from_chars(args[1].data(), end, index);
  if (ec != std::errc() || ptr != end) {
    put_error(out, "ERR value is not an integer or out of range");
    return {400};
  }
  if (index != 0) {  // one keyspace; database 0 keeps clients that select it happy
    put_error(out, "ERR DB index is out of range");
    return {400};
  }
  put_simple(out, "OK");
  return {};
}

Answer RespSession::quit(Args, std::string& out) {
  put_simple(out, "OK");
  return {200, Next::kClose};
}

}  // namespace resp

SessionFactory make_resp_session_factory(IdService& service, RespOptions options) {
  if (options.auth) service.metrics().show_tokens(options.auth);
  auto next_id = std::make_shared<std::atomic<uint64_t>>(0);
  return [&service, next_id, options]() -> std::unique_ptr<Session> {
    // Relaxed: the ids only need to differ, not to order anything.
    return std::make_unique<resp::RespSession>(
        service, next_id->fetch_add(1, std::memory_order_relaxed) + 1, options);
  };
}

}  // namespace idforge::server
