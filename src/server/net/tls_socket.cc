#include "server/net/tls_socket.h"

#if IDFORGE_READ_WHEN_READY

#include <openssl/bio.h>
#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <climits>

namespace idforge::server::net {
namespace {

using BioState = TlsSocket::BioState;

BioState& state_of(BIO* bio) { return *static_cast<BioState*>(BIO_get_data(bio)); }

// One recv or send (`io`, retried on EINTR) for OpenSSL. `ran_short` becomes true when it
// moved fewer bytes than asked or would block: the socket is empty (read) or full (write),
// so epoll will raise an edge when that changes. Would-block is OpenSSL's "retry".
template <typename Io>
int bio_io(BIO* bio, int len, bool& ran_short, int retry_flag, Io io) {
  BioState& s = state_of(bio);
  BIO_clear_retry_flags(bio);
  if (len <= 0) return 0;
  ssize_t n;
  do {
    n = io(s.fd, static_cast<size_t>(len));
  } while (n < 0 && errno == EINTR);
  if (n >= 0) {  // for a read, 0 is the end of the stream: nothing more is there either
    ran_short = n < len;
    return static_cast<int>(n);
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    ran_short = true;
    BIO_set_flags(bio, retry_flag | BIO_FLAGS_SHOULD_RETRY);
  } else {
    s.error = errno;
  }
  return -1;
}

int bio_read(BIO* bio, char* out, int len) {
  return bio_io(bio, len, state_of(bio).read_drained, BIO_FLAGS_READ,
                [out](int fd, size_t n) { return ::recv(fd, out, n, 0); });
}

int bio_write(BIO* bio, const char* in, int len) {
  return bio_io(bio, len, state_of(bio).write_blocked, BIO_FLAGS_WRITE,
                [in](int fd, size_t n) { return ::send(fd, in, n, MSG_NOSIGNAL); });
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  // Writes go straight to the socket: a flush has nothing to do. Nothing else is known.
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// The method is made once and never freed (OpenSSL keeps a pointer for each BIO).
BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "idforge socket");
    if (m != nullptr) {
      BIO_meth_set_read(m, bio_read);
      BIO_meth_set_write(m, bio_write);
      BIO_meth_set_ctrl(m, bio_ctrl);
      BIO_meth_set_create(m, bio_create);
    }
    return m;
  }();
  return method;
}

// How many times one step runs OpenSSL again when it asked for more input (or room) that
// the socket did not refuse: each round consumes a record, and the bound keeps a peer
// that sends only records without data from holding the loop.
constexpr int kRoundsPerStep = 16;

}  // namespace

TlsSocket::TlsSocket(Socket socket, boost::asio::ssl::context& context)
    : socket_(std::move(socket)) {
  bio_.fd = socket_.native_handle();
  ssl_ = SSL_new(context.native_handle());
  BIO* bio = socket_bio_method() != nullptr ? BIO_new(socket_bio_method()) : nullptr;
  if (ssl_ == nullptr || bio == nullptr) {  // out of memory: the handshake fails (step)
    BIO_free(bio);
    SSL_free(ssl_);
    ssl_ = nullptr;
    return;
  }
  BIO_set_data(bio, &bio_);
  SSL_set_bio(ssl_, bio, bio);  // the SSL object owns the BIO now
  SSL_set_accept_state(ssl_);
  // Read as much as the socket holds: a read that fills OpenSSL's buffer is then the only
  // one that may have left data behind. Writes may end between records and resume from
  // a buffer that moved (the connection's output buffer does not, but nothing relies on it).
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

TlsSocket::~TlsSocket() { SSL_free(ssl_); }

TlsSocket::Step TlsSocket::step(Call call, int queue, char* data, size_t size, size_t& done,
                                boost::system::error_code& ec) {
  if (ssl_ == nullptr) {
    ec = boost::system::errc::make_error_code(boost::system::errc::not_enough_memory);
    return Step::kDone;
  }
  if (call != Call::kHandshake && size == 0) return Step::kDone;  // SSL_read of 0 says nothing
  int idle_rounds = 0;
  while (idle_rounds < kRoundsPerStep) {
    // SSL_get_error reads the thread's error queue: it must hold nothing older.
    ERR_clear_error();
    bio_.read_drained = false;
    bio_.write_blocked = false;
    bio_.error = 0;
    int r = 0;
    switch (call) {
      case Call::kHandshake:
        r = SSL_do_handshake(ssl_);
        break;
      case Call::kRead:
        r = SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
        break;
      case Call::kWrite:
        if (done >= size) return Step::kDone;
        r = SSL_write(ssl_, data + done, static_cast<int>(std::min<size_t>(size - done, INT_MAX)));
        break;
    }
    if (r > 0) {
      switch (call) {
        case Call::kHandshake:
          return Step::kDone;
        case Call::kRead:
          done = static_cast<size_t>(r);
          // Nothing left in OpenSSL's buffer and the socket said it had no more. Only a
          // read on the read queue says so: the verdict is that queue's (a read moved to
          // the write queue would otherwise make the next write wait for an edge).
          return queue == kReadQueue && bio_.read_drained && SSL_has_pending(ssl_) == 0
                     ? Step::kDoneDrained
                     : Step::kDone;
        case Call::kWrite:
          done += static_cast<size_t>(r);
          if (done >= size) return Step::kDone;
          continue;
      }
    }
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        if (queue != kReadQueue) return Step::kSwitch;
        // Wait for epoll's edge only if the socket said it was empty; otherwise the data
        // already there would never raise one.
        if (bio_.read_drained) return Step::kWait;
        ++idle_rounds;
        continue;
      case SSL_ERROR_WANT_WRITE:
        if (queue != kWriteQueue) return Step::kSwitch;
        if (bio_.write_blocked) return Step::kWait;
        ++idle_rounds;
        continue;
      case SSL_ERROR_ZERO_RETURN:  // the client's close_notify
        ec = boost::asio::error::eof;
        return Step::kDone;
      case SSL_ERROR_SYSCALL:
        ec = bio_.error != 0
                 ? boost::system::error_code(bio_.error, boost::system::system_category())
                 : boost::system::error_code(boost::asio::error::eof);
        return Step::kDone;
      default: {  // a protocol error, a refused version or certificate
        const unsigned long e = ERR_get_error();
        ec = e != 0 ? boost::system::error_code(static_cast<int>(e),
                                                boost::asio::error::get_ssl_category())
                    : boost::system::errc::make_error_code(boost::system::errc::protocol_error);
        return Step::kDone;
      }
    }
  }
  // Round after round of records that carry nothing for the caller (empty records, key
  // updates) while the socket keeps data: a peer that does only that is dropped. Waiting
  // instead could wait for an edge that never comes.
  ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
  return Step::kDone;
}

}  // namespace idforge::server::net

#endif  // IDFORGE_READ_WHEN_READY
