// The RESP session's insides, shared by the files that implement its commands:
//   resp_session.cc      the command table, the read loop, the connection commands
//                        (PING, HELLO, INFO, CLIENT, ...) and ID.SNOWFLAKE/UUID7/ULID/DECODE
//   resp_increment.cc    INCR, INCRBY, ID.NEXT (segment IDs) and the forms refused with a
//                        reason (DECR, DECRBY, INCRBYFLOAT, GET, SET)
//   resp_transaction.cc  MULTI, EXEC, DISCARD
//   resp_auth.cc         AUTH, and the checks of tokens and limits before each command
//   resp_batch.cc        large ID.SNOWFLAKE/UUID7/ULID batches, made in slices
// Private to those files: the rest of the server knows only make_resp_session_factory
// (resp_session.h), whose comment describes the protocol.
//
//   class RespSession : Session        // one per connection
//     feed(): parse -> kCommands entry -> handler, or queue it while in MULTI
//     a handler appends one answer and returns an Answer (status for the metrics, and
//     kBlocking with job_ set when it must wait on the store); feed() gives a job or a
//     batch made in slices the command's record (front/request_lifecycle.h)
//
// Thread-safety: a session is driven by one thread at a time. Its kBlocking job runs on
// a worker thread while the runtime neither feeds nor destroys the session (the
// connection owns the session and the job holds the connection), so a job may use the
// session; only an EXEC job does (it runs the queued commands after the one that waits).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/auth/auth.h"
#include "server/auth/rate_limit.h"
#include "server/front/id_batch.h"
#include "server/front/request_lifecycle.h"
#include "server/net/session.h"
#include "server/resp/resp_parser.h"
#include "server/resp/resp_session.h"
#include "server/service/id_service.h"
#include "server/service/metrics.h"

namespace idforge::server::resp {

using Clock = std::chrono::steady_clock;
using Args = std::span<const std::string_view>;
inline constexpr int kProtocolIndex = Metrics::kResp;

// Limits of one MULTI, so that a transaction cannot make the server hold more than a
// pipeline could (Session::kFlushBytes bounds a pipeline's answers; an EXEC answer is
// one value). A command past a limit is refused while queueing, and EXEC then answers
// EXECABORT, as for any command refused while queueing.
inline constexpr size_t kMaxQueued = 1024;              // commands
inline constexpr size_t kMaxQueuedBytes = 1024 * 1024;  // their arguments, in all
// ... and at most the service's max_count IDs in all (ServiceConfig::max_count).

// What a handler tells feed() besides the answer it appended.
struct Answer {
  // For the metrics and the access log: 200, or the HTTP-like status of the error.
  // kQueued: not counted now (EXEC counts the command when it runs it). Unused with
  // kBlocking: the job counts its own.
  int status = 200;
  Session::Next next = Session::Next::kNeedMore;
};
inline constexpr int kQueued = 0;

class RespSession;
using Handler = Answer (RespSession::*)(Args args, std::string& out);

struct CommandSpec {
  std::string_view name;  // lower case, as error messages show it
  size_t min_args;        // counting the command's name
  size_t max_args;        // kAny: no limit
  Route route;
  Handler handler;
  // Where the command's count of IDs is (1 when that argument is absent); 0: the
  // command asks for no IDs. For MULTI's limit on the IDs of one transaction.
  size_t count_at = 0;
  // Runs at once inside MULTI instead of being queued: MULTI, EXEC, DISCARD, QUIT.
  bool not_queued = false;
};
inline constexpr size_t kAny = static_cast<size_t>(-1);

// The IDs a command asks for (1 when its count is absent); a count that will be
// refused when the command runs asks for none.
uint64_t ids_asked(const CommandSpec& spec, Args args, uint64_t max_count);

// How segment IDs are answered.
enum class IdsForm {
  kOne,    // ":N" (INCR, INCRBY tag 1, ID.NEXT without a count)
  kArray,  // "*n" then each ID (ID.NEXT with a count)
  kLast,   // ":last" when the IDs are contiguous, else an error naming ID.NEXT (INCRBY)
};

class RespSession final : public Session {
 public:
  RespSession(IdService& service, uint64_t client_id, const RespOptions& options)
      : service_(service), id_(client_id), auth_(options.auth), limits_(options.limits) {}

  Step feed(std::string_view in, std::string& out) override;

  // The commands, one handler each (kCommands in resp_session.cc).
  Answer ping(Args args, std::string& out);
  Answer echo(Args args, std::string& out);
  Answer hello(Args args, std::string& out);
  // resp_auth.cc
  Answer auth(Args args, std::string& out);
  Answer info(Args args, std::string& out);
  Answer command(Args args, std::string& out);
  Answer client(Args args, std::string& out);
  Answer select(Args args, std::string& out);
  Answer quit(Args args, std::string& out);
  Answer id_snowflake(Args args, std::string& out);
  Answer id_uuid7(Args args, std::string& out);
  Answer id_ulid(Args args, std::string& out);
  Answer id_decode(Args args, std::string& out);
  // resp_increment.cc
  Answer incr(Args args, std::string& out);
  Answer incrby(Args args, std::string& out);
  Answer id_next(Args args, std::string& out);
  // DECR, DECRBY, INCRBYFLOAT, GET, SET: refused with the reason and what to use.
  Answer refused(Args args, std::string& out);
  // resp_transaction.cc
  Answer multi(Args args, std::string& out);
  Answer exec(Args args, std::string& out);
  Answer discard(Args args, std::string& out);

 private:
  // One command queued by MULTI: its arguments, copied (the parser's views die with
  // the next parse).
  struct Queued {
    const CommandSpec* spec = nullptr;
    std::vector<std::string> args;
  };

  // A map header: `%n` under RESP3, an array of 2n (keys and values) under RESP2.
  void put_map(std::string& out, size_t pairs) const;
  void put_null(std::string& out) const;
  // The optional count at args[index]: 1 when absent.
  Result<uint64_t> count_arg(Args args, size_t index) const;
  void put_info(std::string_view section, std::string& body) const;

  // `count` IDs of `tag`, answered in `form`. Answers at once when the tag's buffer
  // holds them; otherwise sets job_ and returns kBlocking, or inside an EXEC job waits
  // on the store itself.
  Answer segment_ids(std::string_view tag, uint64_t count, IdsForm form, std::string& out);

  // resp_auth.cc: the checks before a command runs or is queued. Each returns true to
  // go on, or writes the refusal (as Redis words it; a refused EXEC discards the
  // transaction, a command refused inside MULTI makes EXEC abort) and sets *answer.
  // The connection's rate (every command but QUIT; `spec` null for an unknown one).
  bool connection_admits(const CommandSpec* spec, std::string& out, Answer* answer);
  // The token (tokens on): authenticated (NOAUTH), the command's scope (NOPERM), its
  // limits; `ticket` then holds the command's in-flight place.
  bool token_admits(const CommandSpec& spec, Args args, std::string& out, InFlight* ticket,
                    Answer* answer);
  // EXEC: a queued command whose scope the token lost since (a reload) answers NOPERM
  // in its place, as Redis re-checks ACLs at EXEC.
  bool still_permitted(const CommandSpec& spec, Args args, std::string& out);
  // The connection's token as of the tokens now loaded; null without tokens, before
  // AUTH, or once it was removed from the file.
  const Token* current_token();
  // Its name for the access log; "" for none.
  std::string_view token_label() {
    const Token* token = current_token();
    return token != nullptr ? std::string_view(token->spec.name) : std::string_view();
  }
  void reject(const CommandSpec* spec, std::string_view error, std::string& out);
  int64_t now_ns() const { return auth_.on() ? auth_.auth().now_ns() : steady_now_ns(); }

  // resp_batch.cc: a batch of more than ServiceConfig::batch_slice IDs, asked by a
  // command sent on its own (not queued by MULTI), is made and written one slice per
  // feed(), the loop serving other connections in between (Session::Next::kFlush).
  bool may_slice(uint64_t count) const { return sliceable_ && is_sliced(service_.config(), count); }
  // Starts writing ids_batch_, already started (IdBatch::start or start_taken): answers
  // kFlush; feed() then starts batch_ with the command's record. IDs are all made first
  // (an error then answers alone, as for a batch made in one go), then written.
  Answer start_batch(bool as_array);
  // The same for a batch of IDs still to make.
  Answer start_batch(BatchKind kind, uint64_t count, bool as_array) {
    ids_batch_.start(kind, count);
    return start_batch(as_array);
  }
  // One slice of ids_batch_: 0 while more are to come, the answer's status with the last.
  int write_batch_slice(std::string& out);

  // MULTI: keeps a command for EXEC, within the limits above.
  Answer queue(const CommandSpec& spec, Args args, std::string& out);
  void end_multi();
  // EXEC: runs the queued commands from exec_next_ on, their answers into
  // exec_replies_, then answers the array. kBlocking when one must wait on the store:
  // job_ then finishes that one and the rest.
  Answer run_exec(std::string& out);
  // One queued command, counted in the metrics and the access log as if sent alone.
  Answer run_queued(const Queued& queued, std::string& out);
  // What the command being run is counted and logged with once answered by a job or a
  // batch (request_lifecycle.h); copies its name and token only when it is sampled.
  RequestRecord record(Route route, InFlight ticket);

  IdService& service_;
  const uint64_t id_;
  AuthView auth_;  // the connection's token (auth.h); off without tokens
  const ConnectionLimits limits_;
  RateLimiter connection_rate_;
  RespParser parser_;
  int proto_ = 2;
  bool closed_ = false;
  std::string name_;
  Clock::time_point start_;   // when feed() began on the current batch
  bool sampled_ = false;      // the access log writes the current command
  std::string_view command_;  // its name (a kCommands literal) when known
  // Set by a handler that answers kBlocking: appends the answer, returns its status.
  std::function<int(std::string&)> job_;
  // Set by EXEC's queued command that waits: its job_ with its own record, run by EXEC's.
  std::function<void(std::string&)> queued_job_;
  // Inside an EXEC job, on a worker thread: segment requests wait on the store here
  // instead of answering kBlocking.
  bool may_wait_ = false;
  // Reused across commands so a batch allocates only the first time.
  std::vector<uint64_t> ids_;
  std::vector<Uuid> uuids_;
  std::vector<Ulid> ulids_;

  // The batch being made in slices, if any (resp_batch.cc).
  SlicedAnswer batch_;
  bool batch_starting_ = false;  // a handler called start_batch; feed() starts batch_
  uint64_t batch_written_ = 0;   // of ids_batch_
  bool batch_as_array_ = false;
  IdBatch ids_batch_;       // its IDs; the vectors are reused by the next batch
  bool sliceable_ = false;  // the handler running was called by feed() itself

  // MULTI ... EXEC.
  bool in_multi_ = false;
  bool multi_refused_ = false;  // a command was refused while queueing: EXEC aborts
  std::vector<Queued> queued_;
  size_t queued_bytes_ = 0;
  uint64_t queued_ids_ = 0;
  // The EXEC being run: its commands, the next to run, the answers so far.
  std::vector<Queued> exec_queue_;
  size_t exec_next_ = 0;
  std::string exec_replies_;
  std::vector<std::string_view> exec_args_;
};

}  // namespace idforge::server::resp
