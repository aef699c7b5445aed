#include "server/net/net_connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "server/net/ready_read.h"
#include "server/net/tls_socket.h"

namespace idforge::server::net {
namespace {

// First read buffer of a connection: a few pipelined commands or one HTTP request with
// its headers fit. It grows (up to max_pending_bytes) only for larger requests.
constexpr size_t kInitialBuffer = 8 * 1024;
// Buffers grown past these sizes are released once empty, so a burst on one connection
// does not pin memory for the rest of its life.
constexpr size_t kKeepInput = 64 * 1024;
constexpr size_t kKeepOutput = 256 * 1024;

bool would_block(const boost::system::error_code& ec) {
  return ec == boost::asio::error::would_block || ec == boost::asio::error::try_again;
}

}  // namespace

void NetShared::connection_closed() {
  // The last close during shutdown wakes the waiter. Taking the mutex before notifying
  // closes the gap between the waiter's check of `open` and its sleep.
  if (open.fetch_sub(1, std::memory_order_relaxed) == 1 &&
      stopping.load(std::memory_order_relaxed)) {
    { MutexLock lock(mu); }
    drained.notify_all();
  }
}

void Loop::arm_sweep() {
  if (!sweeping || sweep_every == Clock::duration::zero()) return;
  sweep_timer.expires_after(sweep_every);
  sweep_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !sweeping) return;
    const Clock::time_point now = Clock::now();
    for_each_connection([now](Connection& c) { c.check_timeouts(now); });
    arm_sweep();
  });
}

void Loop::run() {
  SpinPolicy policy(spin);
  if (policy.spin() == Clock::duration::zero()) {
    ctx.run();
    return;
  }
  while (!ctx.stopped()) {
    if (ctx.poll() > 0) continue;
    const Clock::time_point idle_since = Clock::now();
    if (policy.may_spin(idle_since)) {
      // Yielding on each round: the loop only uses a core nobody else wants.
      const Clock::time_point until = idle_since + policy.spin();
      Clock::time_point now = idle_since;
      bool woke = false;
      while (!woke && now < until && !ctx.stopped()) {
        std::this_thread::yield();
        const Clock::time_point after = Clock::now();
        if (policy.preempted(now, after)) break;
        woke = ctx.poll() > 0;
        now = Clock::now();
      }
      if (woke) continue;
    }
    if (ctx.run_one() == 0) return;  // stopped
    policy.woke(idle_since, Clock::now());
  }
}

// Where Asio's epoll reactor is reachable (ready_read.h), reads wait on epoll after one
// that drained the socket, plain (async_read_when_ready) and TLS (TlsSocket, OpenSSL on
// the socket); elsewhere Asio's reads, which try the socket first, and its TLS stream.
constexpr bool kOnEpollReactor = IDFORGE_READ_WHEN_READY != 0;
#if IDFORGE_READ_WHEN_READY
using TlsStream = TlsSocket;
static_assert(std::is_same_v<TlsSocket::Socket, Socket>);
#else
using TlsStream = boost::asio::ssl::stream<Socket>;
#endif

// What a plain connection keeps in place of a TLS context: nothing.
struct NoContext {};

// A Connection over `Stream`: Socket (plain TCP) or TlsStream. The two differ only where
// kTls is tested: the handshake, how answers are written, the last answer at a timeout;
// kOnEpollReactor says which reads and which TLS stream (TlsSocket or Asio's) are built.
template <typename Stream>
class StreamConnection final : public Connection,
                               public std::enable_shared_from_this<StreamConnection<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  // The TLS context the connection's SSL object was made from, held for the connection's
  // life: a reload (TlsContext::reload) replaces the listener's, not this one.
  using Context = std::conditional_t<kTls, std::shared_ptr<boost::asio::ssl::context>, NoContext>;

  StreamConnection(Loop& loop, Socket socket, std::unique_ptr<Session> session, Context context)
      : loop_(loop),
        context_(std::move(context)),
        stream_(make_stream(std::move(socket), context_)),
        session_(std::move(session)) {}
  ~StreamConnection() override;
  StreamConnection(const StreamConnection&) = delete;
  StreamConnection& operator=(const StreamConnection&) = delete;

  void start() override;
  void drain() override;
  void abort() override { close(); }
  void check_timeouts(Clock::time_point now) override;

 private:
  enum class State {
    kNew,        // built, start() not run yet
    kHandshake,  // TLS only: the server handshake is pending
    kRunning,    // in a handler on the loop thread (feeding, flushing)
    kReading,    // an async read is pending
    kJob,        // a kBlocking job runs on the worker pool
    kWriting,    // an async write is pending
    kClosed,
  };

  // Returns a prvalue, so the stream is built in place (an ssl::stream does not move).
  static Stream make_stream(Socket socket, Context& context) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *context);
    } else {
      return Stream(std::move(socket));
    }
  }
  Socket& socket() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }

  void on_handshake(const boost::system::error_code& ec);
  void start_read();
  void on_read(const boost::system::error_code& ec, size_t n);
  void process();
  void run_job(std::function<void(std::string&)> job);
  void on_job_done(bool ok);
  void flush();
  void write_async(size_t from);
  void on_write(const boost::system::error_code& ec);
  void time_out(bool answer);
  // Lets the session add a last answer (Session::on_timeout), tries to write it, closes.
  void close_with_last_answer();
  void close();

  size_t pending() const { return end_ - begin_; }
  std::string_view input() const { return {buf_.get() + begin_, end_ - begin_}; }
  void consume(size_t n);
  void make_room();

  Loop& loop_;
  [[no_unique_address]] Context context_;  // before stream_, which is made from it
  Stream stream_;
  std::unique_ptr<Session> session_;
  State state_ = State::kNew;
  bool draining_ = false;
  bool close_after_write_ = false;
  bool feed_after_write_ = false;  // the session said kFlush: more answers are due
  // A job just finished, or the session said kFlush: ask it even without input.
  bool feed_without_input_ = false;

  // Input: bytes [begin_, end_) of buf_ are received and not yet consumed. Reused for
  // the connection's life; grows only when one request does not fit.
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
  // Answers not yet written; pipelined answers accumulate and leave in one write.
  std::string out_;
  size_t job_mark_ = 0;  // out_.size() when the running job started

  Clock::time_point last_active_;    // last read, or end of a job or a slow write
  Clock::time_point request_start_;  // when the unconsumed input (or the handshake) started
  Clock::time_point write_start_;    // when the pending async write began
};

template <typename Stream>
StreamConnection<Stream>::~StreamConnection() {
  // Only when the loop was torn down before start() ran (its handler was dropped):
  // the connection was counted open at accept.
  if (state_ == State::kNew) loop_.shared.connection_closed();
}

template <typename Stream>
void StreamConnection<Stream>::start() {
  loop_.connections.insert(this);
  state_ = State::kRunning;
  if (loop_.shared.stopping.load(std::memory_order_relaxed) || !session_) {
    close();
    return;
  }
  boost::system::error_code ec;
  socket().set_option(boost::asio::ip::tcp::no_delay(true), ec);
  if constexpr (!kTls || kOnEpollReactor) {
    // Writes are tried at once and fall back to async_write only when the kernel buffer
    // is full; a best-effort answer at timeout never blocks the loop. TLS on the socket
    // reads and writes it from OpenSSL, inside the reactor.
    socket().non_blocking(true, ec);
    if (ec) {
      close();
      return;
    }
  }
  buf_.reset(new char[kInitialBuffer]);
  cap_ = kInitialBuffer;
  last_active_ = Clock::now();
  if constexpr (kTls) {
    // The handshake counts as a request (check_timeouts): a client that stalls or drips
    // it is closed after request_timeout, not kept until idle_timeout.
    request_start_ = last_active_;
    state_ = State::kHandshake;
    stream_.async_handshake(boost::asio::ssl::stream_base::server,
                            [self = this->shared_from_this()](const boost::system::error_code& e) {
                              self->on_handshake(e);
                            });
  } else {
    start_read();
  }
}

template <typename Stream>
void StreamConnection<Stream>::on_handshake(const boost::system::error_code& ec) {
  if (state_ == State::kClosed) return;  // timed out (counted there) or shut down
  state_ = State::kRunning;
  if (ec) {  // not TLS, a refused version, no or a foreign client certificate, or gone
    loop_.shared.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
    close();
    return;
  }
  last_active_ = Clock::now();
  start_read();
}

template <typename Stream>
void StreamConnection<Stream>::drain() {
  draining_ = true;
  // Waiting for bytes means no complete request is in flight (a partial one is dropped).
  // In the other states the requests already received finish; flush() then closes.
  if (state_ == State::kReading) {
    close_with_last_answer();
  } else if (state_ == State::kHandshake) {
    close();  // no request yet
  }
}

template <typename Stream>
void StreamConnection<Stream>::check_timeouts(Clock::time_point now) {
  const NetShared& s = loop_.shared;
  switch (state_) {
    case State::kReading:
      if (pending() == 0) {
        if (s.idle_timeout != Clock::duration::zero() && now - last_active_ >= s.idle_timeout) {
          time_out(true);
        }
      } else if (s.request_timeout != Clock::duration::zero() &&
                 now - request_start_ >= s.request_timeout) {
        time_out(true);
      }
      break;
    case State::kHandshake: {
      // Bounded as a request; with no request limit, as an idle connection.
      const Clock::duration limit =
          s.request_timeout != Clock::duration::zero() ? s.request_timeout : s.idle_timeout;
      if (limit != Clock::duration::zero() && now - request_start_ >= limit) {
        loop_.shared.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
        time_out(false);
      }
      break;
    }
    case State::kWriting:
      // A client that does not read its answers holds a buffer; it gets as long as a
      // request does, and no last answer (there is no room to write one).
      if (s.request_timeout != Clock::duration::zero() && now - write_start_ >= s.request_timeout) {
        time_out(false);
      }
      break;
    case State::kJob:  // bounded by the service, and the session is the job's now
    case State::kNew:
    case State::kRunning:
    case State::kClosed:
      break;
  }
}

template <typename Stream>
void StreamConnection<Stream>::time_out(bool answer) {
  loop_.shared.timeouts.fetch_add(1, std::memory_order_relaxed);
  if (answer) {
    close_with_last_answer();
  } else {
    close();
  }
}

template <typename Stream>
void StreamConnection<Stream>::close_with_last_answer() {
  if constexpr (kTls) {
    // No last answer over TLS: it could only go as an async write, which close() would
    // cancel; a sync write on an ssl::stream over a non-blocking socket can stop
    // mid-record, and a blocking one would stall the loop. The client sees the
    // connection close.
    close();
  } else {
    session_->on_timeout(out_);
    if (!out_.empty()) {
      // Best effort: one non-blocking write; a client that cannot take it loses it.
      boost::system::error_code ec;
      stream_.write_some(boost::asio::buffer(out_), ec);
    }
    close();
  }
}

template <typename Stream>
void StreamConnection<Stream>::make_room() {
  if (begin_ > 0) {
    std::memmove(buf_.get(), buf_.get() + begin_, pending());
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ < cap_) return;
  // Full of one unfinished request. process() already closed the connection if it is
  // over max_pending_bytes, so growing to max_pending_bytes + 1 always makes room and
  // lets the next read show whether the request goes over.
  const size_t max = loop_.shared.max_pending_bytes;
  const size_t limit = std::max(max, max + 1);  // no wrap for a limit of SIZE_MAX
  const size_t cap = std::max(cap_ + 1, std::min(cap_ * 2, limit));
  std::unique_ptr<char[]> bigger(new char[cap]);
  std::memcpy(bigger.get(), buf_.get(), end_);
  buf_ = std::move(bigger);
  cap_ = cap;
}

template <typename Stream>
void StreamConnection<Stream>::consume(size_t n) {
  begin_ += std::min(n, pending());
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (cap_ > kKeepInput) {
      buf_.reset(new char[kInitialBuffer]);
      cap_ = kInitialBuffer;
    }
  } else if (n > 0) {
    // What is left is the start of a new request; its time counts from the last read.
    request_start_ = last_active_;
  }
}

template <typename Stream>
void StreamConnection<Stream>::start_read() {
  make_room();
  state_ = State::kReading;
  auto done = [self = this->shared_from_this()](const boost::system::error_code& ec, size_t n) {
    self->on_read(ec, n);
  };
  if constexpr (kTls) {
    stream_.async_read_some(boost::asio::buffer(buf_.get() + end_, cap_ - end_), std::move(done));
  } else {
    async_read_when_ready(stream_, boost::asio::buffer(buf_.get() + end_, cap_ - end_),
                          std::move(done));
  }
}

template <typename Stream>
void StreamConnection<Stream>::on_read(const boost::system::error_code& ec, size_t n) {
  if (state_ == State::kClosed) return;
  state_ = State::kRunning;
  if (ec) {  // end of stream, reset, or cancelled by close()
    close();
    return;
  }
  last_active_ = Clock::now();
  if (pending() == 0) request_start_ = last_active_;
  end_ += n;
  process();
}

template <typename Stream>
void StreamConnection<Stream>::process() {
  // After a job the session is asked even without input: its request may have ended
  // the connection (HTTP's Connection: close), which only feed() can say. After kFlush
  // too: the session may be in the middle of a large batch (made in slices).
  const bool feed_anyway = std::exchange(feed_without_input_, false);
  if (pending() > 0 || feed_anyway) {
    Session::Step step = session_->feed(input(), out_);
    consume(step.consumed);
    switch (step.next) {
      case Session::Next::kBlocking:
        if (step.blocking) {
          run_job(std::move(step.blocking));
          return;
        }
        close_after_write_ = true;  // a session bug: nothing to run; answer what we have
        break;
      case Session::Next::kClose:
        close_after_write_ = true;
        break;
      case Session::Next::kFlush:
        feed_after_write_ = true;
        break;
      case Session::Next::kNeedMore:
        break;
    }
  }
  if (!close_after_write_ && pending() > loop_.shared.max_pending_bytes) {
    loop_.shared.oversized.fetch_add(1, std::memory_order_relaxed);
    close_after_write_ = true;  // the answers to requests before it still go out
  }
  flush();
}

template <typename Stream>
void StreamConnection<Stream>::run_job(std::function<void(std::string&)> job) {
  state_ = State::kJob;
  job_mark_ = out_.size();
  // The job appends to out_ directly: nothing on the loop touches out_ or the session
  // while state_ is kJob, and both post()s order the job's writes with the loop's.
  boost::asio::post(*loop_.shared.pool, [self = this->shared_from_this(), job = std::move(job)] {
    bool ok = true;
    try {
      job(self->out_);
    } catch (const std::exception&) {  // the edge where a backend's exception could escape
      ok = false;
    }
    boost::asio::post(self->loop_.ctx, [self, ok] { self->on_job_done(ok); });
  });
}

template <typename Stream>
void StreamConnection<Stream>::on_job_done(bool ok) {
  if (state_ == State::kClosed) return;  // closed by shutdown while the job ran
  state_ = State::kRunning;
  if (!ok) {
    // Answer the requests before it, drop the failed job's partial output, and close:
    // the answers after it would be out of order.
    out_.resize(job_mark_);
    close_after_write_ = true;
    flush();
    return;
  }
  // Time spent on the job counts neither as idle nor against the next request.
  last_active_ = Clock::now();
  if (pending() > 0) request_start_ = last_active_;
  feed_without_input_ = true;
  process();
}

template <typename Stream>
void StreamConnection<Stream>::flush() {
  if (!out_.empty()) {
    if constexpr (kTls) {
      // Always async: a sync write on an ssl::stream over a non-blocking socket may stop
      // in the middle of a record, which the TLS engine cannot resume. TlsSocket's
      // reactor tries the write at once and waits only if the socket is full.
      write_async(0);
      return;
    } else {
      boost::system::error_code ec;
      const size_t n = stream_.write_some(boost::asio::buffer(out_), ec);
      if (ec && !would_block(ec)) {
        close();
        return;
      }
      if (n < out_.size()) {
        write_async(n);
        return;
      }
      out_.clear();
      if (out_.capacity() > kKeepOutput) std::string().swap(out_);
    }
  }
  if (close_after_write_) {
    close();
    return;
  }
  // Also when draining: these requests were received, and shutdown finishes them.
  if (feed_after_write_) {
    // Through the loop rather than a call: fair to the other connections, and no
    // recursion when every write completes at once.
    feed_after_write_ = false;
    state_ = State::kRunning;
    boost::asio::post(loop_.ctx, [self = this->shared_from_this()] {
      if (self->state_ == State::kClosed) return;
      self->feed_without_input_ = true;
      self->process();
    });
    return;
  }
  if (draining_) {
    close();
    return;
  }
  if (!kOnEpollReactor && loop_.connections.size() > 1) {
    // Asio's reads (async_read_some, its TLS stream) first try the socket, and right after
    // an answer the client's next request is rarely there yet: read after the loop's other
    // ready handlers instead. Alone on its loop a connection reads at once: there is
    // nothing to serve in between. On the epoll reactor a read tries the socket only if
    // the last one may have left data (async_read_when_ready, TlsSocket).
    state_ = State::kReading;
    boost::asio::post(loop_.ctx, [self = this->shared_from_this()] {
      if (self->state_ != State::kReading) return;  // closed meanwhile
      self->start_read();
    });
    return;
  }
  start_read();
}

template <typename Stream>
void StreamConnection<Stream>::write_async(size_t from) {
  state_ = State::kWriting;
  write_start_ = Clock::now();
  auto done = [self = this->shared_from_this()](const boost::system::error_code& ec, size_t) {
    self->on_write(ec);
  };
  const auto rest = boost::asio::buffer(out_.data() + from, out_.size() - from);
  if constexpr (kTls && kOnEpollReactor) {
    stream_.async_write(rest, std::move(done));
  } else {
    boost::asio::async_write(stream_, rest, std::move(done));
  }
}

template <typename Stream>
void StreamConnection<Stream>::on_write(const boost::system::error_code& ec) {
  if (state_ == State::kClosed) return;
  state_ = State::kRunning;
  if (ec) {
    close();
    return;
  }
  last_active_ = Clock::now();  // a slow reader was not idle
  out_.clear();
  if (out_.capacity() > kKeepOutput) std::string().swap(out_);
  flush();
}

template <typename Stream>
void StreamConnection<Stream>::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  boost::system::error_code ec;
  // FIN after the answers already queued in the kernel; close() cancels pending ops.
  // TLS sends no close_notify: that is one more write through the TLS engine, and closing
  // must not wait for a client. Both protocols frame their answers, so a client still
  // knows it got each one whole.
  socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
  socket().close(ec);
  loop_.connections.erase(this);
  loop_.shared.connection_closed();
}

// Both kinds are built here, and only here (make_connection).
template class StreamConnection<Socket>;
template class StreamConnection<TlsStream>;

std::shared_ptr<Connection> make_connection(Loop& loop, Socket socket,
                                            std::unique_ptr<Session> session,
                                            const TlsContext* tls) {
  if (tls == nullptr) {
    return std::make_shared<StreamConnection<Socket>>(loop, std::move(socket), std::move(session),
                                                      NoContext{});
  }
  return std::make_shared<StreamConnection<TlsStream>>(loop, std::move(socket), std::move(session),
                                                       tls->current());
}

}  // namespace idforge::server::net
