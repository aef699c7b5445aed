// NetServer's TLS listeners (tls_context.h) over real loopback sockets, with OpenSSL as the
// client. The certificates are made at test time by the `openssl` command into a temporary
// directory: two CAs, two server certificates of the first (subjectAltName IP:127.0.0.1) and
// a client certificate from each CA. The session is a tiny line protocol:
//   PING -> PONG, ECHO x -> x, BIG n -> n 'x's, SLOW -> DONE (a kBlocking job).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/line_session.h"
#include "server/net/net_server.h"
#include "server/net/tls_context.h"

namespace idforge::server {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

Hooks hooks;  // shared by every session of every test here

// A connected TCP socket with 3 s send and receive timeouts, so a broken server fails a
// test instead of hanging it.
int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Reads until the peer closes or resets (true) or the timeout passes (false).
bool raw_wait_closed(int fd, std::string* rest) {
  char c[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, c, sizeof c, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    rest->append(c, static_cast<size_t>(n));
  }
}

struct ClientOptions {
  int min_version = 0;  // 0: OpenSSL's default
  int max_version = 0;
  bool legacy = false;  // security level 0, so that the client can offer TLS 1.1 at all
  std::string cert;     // a client certificate and its key, for mTLS
  std::string key;
  std::string ca;  // when set: the server's certificate must verify against it for 127.0.0.1
};

// A blocking OpenSSL client on its own socket.
class TlsClient {
 public:
  TlsClient(uint16_t port, const ClientOptions& o) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (o.min_version) SSL_CTX_set_min_proto_version(ctx_, o.min_version);
    if (o.max_version) SSL_CTX_set_max_proto_version(ctx_, o.max_version);
    if (o.legacy) {
      SSL_CTX_set_security_level(ctx_, 0);
      SSL_CTX_set_cipher_list(ctx_, "ALL:@SECLEVEL=0");
    }
    // The server closes without close_notify; that is the end of the stream here.
    SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (!o.cert.empty()) {
      EXPECT_EQ(SSL_CTX_use_certificate_file(ctx_, o.cert.c_str(), SSL_FILETYPE_PEM), 1);
      EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, o.key.c_str(), SSL_FILETYPE_PEM), 1);
    }
    if (!o.ca.empty()) {
      EXPECT_EQ(SSL_CTX_load_verify_locations(ctx_, o.ca.c_str(), nullptr), 1);
    }
    ssl_ = SSL_new(ctx_);
    if (!o.ca.empty()) {
      SSL_set_verify(ssl_, SSL_VERIFY_PEER, nullptr);
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    }
    fd_ = connect_to(port);
    SSL_set_fd(ssl_, fd_);
    handshake_ok_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool handshake_ok() const { return handshake_ok_; }
  int version() const { return SSL_version(ssl_); }
  // The server certificate's common name, "" without one.
  std::string peer_name() const {
    X509* cert = SSL_get1_peer_certificate(ssl_);
    if (!cert) return "";
    char name[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
    X509_free(cert);
    return name;
  }

  void send(std::string_view data) {
    if (!data.empty()) SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
  }
  // Each piece a TLS record of its own (none larger than 16,384 bytes), all held back
  // (TCP_CORK) and sent at once: the server's socket has them together before it reads.
  void send_records(const std::vector<std::string>& records) {
    int cork = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &cork, sizeof cork);
    for (const std::string& record : records) send(record);
    cork = 0;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &cork, sizeof cork);
  }
  // Reads until `lines` newlines arrived, the stream ended, or the timeout passed.
  std::string read_lines(int lines) {
    std::string got;
    int seen = 0;
    char c[16 * 1024];
    while (seen < lines) {
      const int n = SSL_read(ssl_, c, sizeof c);
      if (n <= 0) break;
      for (int i = 0; i < n; ++i) seen += c[i] == '\n';
      got.append(c, static_cast<size_t>(n));
    }
    ERR_clear_error();
    return got;
  }
  // Reads until the stream ends or fails (true) or the timeout passes (false).
  bool wait_closed(std::string* rest = nullptr) {
    char c[4096];
    for (;;) {
      const int n = SSL_read(ssl_, c, sizeof c);
      const int error = errno;
      if (n > 0) {
        if (rest) rest->append(c, static_cast<size_t>(n));
        continue;
      }
      const int why = SSL_get_error(ssl_, n);
      ERR_clear_error();
      return !(why == SSL_ERROR_SYSCALL && (error == EAGAIN || error == EWOULDBLOCK));
    }
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool handshake_ok_ = false;
};

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // SSL_write to a connection the server closed must fail, not kill the test.
    std::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/idforge-tls-XXXXXX";
    if (!::mkdtemp(tmpl)) return;
    dir_ = tmpl;
    certs_ok_ = make_certificates();
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void SetUp() override { ASSERT_TRUE(certs_ok_) << "openssl failed; see " << path("openssl.log"); }

  static std::string path(std::string_view name) { return dir_ + "/" + std::string(name); }

  static bool run(const std::string& command) {
    return std::system((command + " >>" + path("openssl.log") + " 2>&1").c_str()) == 0;
  }
  static bool make_ca(const std::string& name) {
    return run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name +
               " -addext basicConstraints=critical,CA:TRUE -keyout " + path(name + ".key") +
               " -out " + path(name + ".pem"));
  }
  // A certificate for `name` signed by `ca`, with `serial` and the extensions in `ext`.
  static bool make_signed(const std::string& name, const std::string& ca, int serial,
                          const std::string& ext) {
    std::ofstream(path(name + ".ext")) << ext << "\n";
    return run("openssl req -new -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " +
               path(name + ".key") + " -out " + path(name + ".csr")) &&
           run("openssl x509 -req -days 2 -in " + path(name + ".csr") + " -CA " +
               path(ca + ".pem") + " -CAkey " + path(ca + ".key") + " -set_serial " +
               std::to_string(serial) + " -extfile " + path(name + ".ext") + " -out " +
               path(name + ".pem"));
  }
  static bool make_certificates() {
    const std::string server = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth";
    const std::string client = "extendedKeyUsage=clientAuth";
    return make_ca("test-ca") && make_ca("other-ca") &&
           make_signed("server-a", "test-ca", 0xa1, server) &&
           make_signed("server-b", "test-ca", 0xb2, server) &&
           make_signed("client", "test-ca", 0xc1, client) &&
           make_signed("stranger", "other-ca", 0xc2, client);
  }

  static TlsFiles server_files(std::string_view name, std::string client_ca = "") {
    return {path(std::string(name) + ".pem"), path(std::string(name) + ".key"),
            std::move(client_ca)};
  }
  static std::shared_ptr<TlsContext> load(TlsFiles files) {
    Result<std::shared_ptr<TlsContext>> tls = TlsContext::load(std::move(files));
    EXPECT_TRUE(tls.ok()) << tls.status().to_string();
    return tls.ok() ? *tls : nullptr;
  }
  static NetOptions small() {
    NetOptions o;
    o.io_threads = 2;
    o.worker_threads = 2;
    return o;
  }
  // Starts a server with one TLS listener on 127.0.0.1:0; port_ is its port.
  void start(NetOptions options, std::shared_ptr<TlsContext> tls) {
    server_ = std::make_unique<NetServer>(options);
    Result<Endpoint> bound = server_->listen(
        "127.0.0.1:0", "tls", [] { return std::make_unique<LineSession>(hooks); }, std::move(tls));
    ASSERT_TRUE(bound.ok()) << bound.status().to_string();
    port_ = bound->port;
    ASSERT_TRUE(server_->start().ok());
  }
  // A client verifying the server against the test CA.
  static ClientOptions verifying() {
    ClientOptions o;
    o.ca = path("test-ca.pem");
    return o;
  }
  // Over TLS 1.2 and 1.3, the server refuses a client made with `o`, and counts it: the
  // handshake fails or (1.3, where the server checks a client certificate after the
  // client's handshake ends) the first request gets no answer before the close.
  void expect_refused_with_each_version(ClientOptions o) {
    uint64_t failures = 0;
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
      o.min_version = o.max_version = version;
      TlsClient c(port_, o);
      std::string rest;
      if (c.handshake_ok()) {
        c.send("PING\n");
        EXPECT_TRUE(c.wait_closed(&rest)) << version;
      }
      EXPECT_EQ(rest.find("PONG"), std::string::npos) << version;
      EXPECT_TRUE(failures_reach(++failures)) << version;
    }
  }
  template <typename Pred>
  static bool eventually(Pred pred, Ms limit = 2s) {
    const auto end = SteadyClock::now() + limit;
    while (!pred()) {
      if (SteadyClock::now() > end) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }
  bool failures_reach(uint64_t n) {
    return eventually([&] { return server_->stats().tls_handshake_failures == n; });
  }

  static inline std::string dir_;
  static inline bool certs_ok_ = false;
  std::unique_ptr<NetServer> server_;
  uint16_t port_ = 0;
};

TEST_F(TlsTest, Tls13ClientGetsPipelinedLargeAndBlockingAnswers) {
  start(small(), load(server_files("server-a")));
  ClientOptions o = verifying();
  o.min_version = TLS1_3_VERSION;
  TlsClient c(port_, o);
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.version(), TLS1_3_VERSION);
  EXPECT_EQ(c.peer_name(), "server-a");
  // Far larger than a TLS record and the socket buffers: written in many async parts.
  constexpr size_t kBig = 4 << 20;
  c.send("PING\nSLOW\nBIG " + std::to_string(kBig) + "\nECHO end\n");
  const std::string got = c.read_lines(4);
  ASSERT_EQ(got.size(), 5 + 5 + kBig + 1 + 4);
  EXPECT_EQ(got.substr(0, 10), "PONG\nDONE\n");
  EXPECT_EQ(got.substr(got.size() - 7), "xx\nend\n");
  EXPECT_EQ(server_->stats().tls_handshake_failures, 0u);
}

TEST_F(TlsTest, Tls12ClientGetsAnswers) {
  start(small(), load(server_files("server-a")));
  ClientOptions o = verifying();
  o.max_version = TLS1_2_VERSION;
  TlsClient c(port_, o);
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.version(), TLS1_2_VERSION);
  c.send("PING\nECHO twelve\n");
  EXPECT_EQ(c.read_lines(2), "PONG\ntwelve\n");
}

// Many small records in the socket at once: OpenSSL's read-ahead takes several in one
// recv, and the server must serve the ones it holds before it waits on the socket again.
TEST_F(TlsTest, ManySmallRecordsSentAtOnceAreAllAnswered) {
  start(small(), load(server_files("server-a")));
  TlsClient c(port_, verifying());
  ASSERT_TRUE(c.handshake_ok());
  constexpr int kRecords = 2000;
  for (int i = 0; i < kRecords; ++i) c.send("PING\n");
  EXPECT_EQ(c.read_lines(kRecords).size(), 5u * kRecords);
}

// More input than OpenSSL's read buffer holds, in records of 16 KB, is served to the end.
// (While it arrives, new data keeps raising edges; the read after a full one is the
// next test's.)
TEST_F(TlsTest, InputLargerThanTheTlsReadBufferIsReadToTheEnd) {
  start(small(), load(server_files("server-a")));
  TlsClient c(port_, verifying());
  ASSERT_TRUE(c.handshake_ok());
  constexpr int kLines = 20000;  // 200 KB in 13 records of 16 KB
  std::string in;
  for (int i = 0; i < kLines; ++i) in += "ECHO abcd\n";
  c.send(in);
  EXPECT_EQ(c.read_lines(kLines).size(), 5u * kLines);
}

// A recv that filled OpenSSL's read buffer and ended on a record boundary may have left
// the next record in the socket, and no new edge comes for it: the read after it must
// try the socket at once. How much OpenSSL asks for at a time is its own business
// (16,709 bytes with OpenSSL 3.0 here), so the rounds move the boundary byte by byte
// over the sizes it could be: two records that may fill that read exactly, then a third.
TEST_F(TlsTest, ARecordLeftBehindAFullReadIsServedWithoutNewData) {
  start(small(), load(server_files("server-a")));
  TlsClient c(port_, verifying());
  ASSERT_TRUE(c.handshake_ok());
  c.send("PING\n");  // a round trip: both sides are past the handshake
  ASSERT_EQ(c.read_lines(1), "PONG\n");
  constexpr size_t kRecord = 16384;  // the largest record's plaintext
  for (size_t second = 1; second <= 512; ++second) {
    // "ECHO ww...w\n" in the first two records, PING in the third.
    const std::string line = "ECHO " + std::string(kRecord + second - 6, 'w') + "\n";
    c.send_records({line.substr(0, kRecord), line.substr(kRecord), "PING\n"});
    ASSERT_EQ(c.read_lines(2), line.substr(5) + "PONG\n") << "second record of " << second;
  }
}

TEST_F(TlsTest, Tls11OnlyClientIsRefused) {
  start(small(), load(server_files("server-a")));
  ClientOptions o;
  o.min_version = o.max_version = TLS1_1_VERSION;
  o.legacy = true;
  TlsClient old(port_, o);
  EXPECT_FALSE(old.handshake_ok());
  EXPECT_TRUE(failures_reach(1));
  TlsClient current(port_, verifying());  // the listener still serves others
  current.send("PING\n");
  EXPECT_EQ(current.read_lines(1), "PONG\n");
}

TEST_F(TlsTest, PlainBytesToATlsListenerAreRefusedAndCounted) {
  start(small(), load(server_files("server-a")));
  const int fd = connect_to(port_);
  ASSERT_EQ(::send(fd, "PING\nPING\n", 10, MSG_NOSIGNAL), 10);
  std::string rest;
  EXPECT_TRUE(raw_wait_closed(fd, &rest));
  ::close(fd);
  EXPECT_EQ(rest.find("PONG"), std::string::npos);
  EXPECT_TRUE(failures_reach(1));
  EXPECT_TRUE(eventually([&] { return server_->stats().connections_open == 0; }));
  TlsClient c(port_, verifying());
  c.send("PING\n");
  EXPECT_EQ(c.read_lines(1), "PONG\n");
}

TEST_F(TlsTest, PlainAndTlsListenersServeSideBySide) {
  NetServer server(small());
  auto factory = [] { return std::make_unique<LineSession>(hooks); };
  Result<Endpoint> plain = server.listen("127.0.0.1:0", "plain", factory);
  Result<Endpoint> tls =
      server.listen("127.0.0.1:0", "tls", factory, load(server_files("server-a")));
  ASSERT_TRUE(plain.ok() && tls.ok());
  ASSERT_TRUE(server.start().ok());

  TlsClient secure(tls->port, verifying());
  ASSERT_TRUE(secure.handshake_ok());
  const int fd = connect_to(plain->port);
  ASSERT_EQ(::send(fd, "ECHO plain\n", 11, MSG_NOSIGNAL), 11);
  secure.send("ECHO tls\n");
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "plain\n");
  EXPECT_EQ(secure.read_lines(1), "tls\n");
  ::close(fd);
  EXPECT_EQ(server.stats().connections_total, 2u);
  EXPECT_EQ(server.stats().tls_handshake_failures, 0u);
}

TEST_F(TlsTest, MutualTlsAnswersAClientWithACertificateFromTheCa) {
  start(small(), load(server_files("server-a", path("test-ca.pem"))));
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    ClientOptions o = verifying();
    o.min_version = o.max_version = version;
    o.cert = path("client.pem");
    o.key = path("client.key");
    TlsClient c(port_, o);
    ASSERT_TRUE(c.handshake_ok()) << version;
    c.send("PING\n");
    EXPECT_EQ(c.read_lines(1), "PONG\n") << version;
  }
  EXPECT_EQ(server_->stats().tls_handshake_failures, 0u);
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  start(small(), load(server_files("server-a", path("test-ca.pem"))));
  expect_refused_with_each_version(verifying());
}

TEST_F(TlsTest, MutualTlsRefusesACertificateFromAnotherCa) {
  start(small(), load(server_files("server-a", path("test-ca.pem"))));
  ClientOptions o = verifying();
  o.cert = path("stranger.pem");
  o.key = path("stranger.key");
  expect_refused_with_each_version(o);
}

// The served files, in a directory of their own so a test may overwrite them.
class TlsReloadTest : public TlsTest {
 protected:
  void SetUp() override {
    TlsTest::SetUp();
    served_ = path(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directory(served_);
    serve("server-a");
  }
  // Copies `name`'s certificate and key over the served files.
  void serve(const std::string& name) {
    fs::copy_file(path(name + ".pem"), files().cert, fs::copy_options::overwrite_existing);
    fs::copy_file(path(name + ".key"), files().key, fs::copy_options::overwrite_existing);
  }
  TlsFiles files() const { return {served_ + "/cert.pem", served_ + "/key.pem", ""}; }

  std::string served_;
};

TEST_F(TlsReloadTest, ReloadServesTheNewCertificateToNewConnectionsAndKeepsOpenOnes) {
  std::shared_ptr<TlsContext> tls = load(files());
  ASSERT_TRUE(tls);
  EXPECT_EQ(tls->files().cert, files().cert);
  start(small(), tls);
  TlsClient before(port_, verifying());
  ASSERT_EQ(before.peer_name(), "server-a");
  before.send("PING\n");
  ASSERT_EQ(before.read_lines(1), "PONG\n");

  serve("server-b");
  ASSERT_TRUE(tls->reload().ok());
  TlsClient after(port_, verifying());
  EXPECT_EQ(after.peer_name(), "server-b");
  after.send("PING\n");
  EXPECT_EQ(after.read_lines(1), "PONG\n");
  // The connection made before the reload is still served, on its old session.
  before.send("ECHO still here\n");
  EXPECT_EQ(before.read_lines(1), "still here\n");
}

TEST_F(TlsReloadTest, FailedReloadKeepsServingTheOldCertificate) {
  std::shared_ptr<TlsContext> tls = load(files());
  ASSERT_TRUE(tls);
  start(small(), tls);

  std::ofstream(files().key, std::ios::trunc) << "not a key\n";
  Status broken = tls->reload();
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken.message().rfind("tls_key " + files().key + ": ", 0), 0u) << broken.message();

  fs::copy_file(path("server-b.pem"), files().cert, fs::copy_options::overwrite_existing);
  fs::copy_file(path("server-a.key"), files().key, fs::copy_options::overwrite_existing);
  Status mismatched = tls->reload();
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.message().find("key does not match the certificate"), std::string::npos)
      << mismatched.message();

  TlsClient c(port_, verifying());
  EXPECT_EQ(c.peer_name(), "server-a");
  c.send("PING\n");
  EXPECT_EQ(c.read_lines(1), "PONG\n");
}

TEST_F(TlsTest, LoadNamesAMissingFile) {
  const std::string missing = path("missing.pem");
  const struct {
    TlsFiles files;
    std::string prefix;
  } cases[] = {
      {{missing, path("server-a.key"), ""}, "tls_cert " + missing + ": "},
      {{path("server-a.pem"), missing, ""}, "tls_key " + missing + ": "},
      {{path("server-a.pem"), path("server-a.key"), missing}, "tls_client_ca " + missing + ": "},
  };
  for (const auto& c : cases) {
    Result<std::shared_ptr<TlsContext>> tls = TlsContext::load(c.files);
    ASSERT_FALSE(tls.ok()) << c.prefix;
    EXPECT_EQ(tls.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(tls.status().message(), c.prefix + "No such file or directory");
  }
}

TEST_F(TlsTest, LoadRejectsAKeyThatDoesNotMatchTheCertificate) {
  Result<std::shared_ptr<TlsContext>> tls =
      TlsContext::load({path("server-a.pem"), path("server-b.key"), ""});
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tls.status().message(), "tls_key " + path("server-b.key") +
                                        ": key does not match the certificate in tls_cert " +
                                        path("server-a.pem"));
  Result<std::shared_ptr<TlsContext>> not_pem =
      TlsContext::load({path("server-a.key"), path("server-a.key"), ""});
  ASSERT_FALSE(not_pem.ok());
  EXPECT_EQ(not_pem.status().message(),
            "tls_cert " + path("server-a.key") + ": no PEM certificate in it");
}

// The first bytes a TLS client sends: a real ClientHello, from OpenSSL into memory.
std::string client_hello() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);  // owned by ssl now
  SSL_connect(ssl);           // wants to read the ServerHello; the hello is in `out`
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);
  std::string hello(data, n > 0 ? static_cast<size_t>(n) : 0);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return hello;
}

TEST_F(TlsTest, HandshakeDrippedOneBytePer100MsIsClosedAfterRequestTimeout) {
  NetOptions o = small();
  o.idle_timeout_ms = 10'000;
  o.request_timeout_ms = 500;
  start(o, load(server_files("server-a")));
  const std::string hello = client_hello();
  ASSERT_GT(hello.size(), 100u);  // 10 s to send whole: the drip outlasts the test
  const int fd = connect_to(port_);
  const auto begin = SteadyClock::now();
  std::atomic<bool> closed{false};
  std::thread drip([&] {
    for (size_t i = 0; i < hello.size() && !closed.load(); ++i) {
      if (::send(fd, &hello[i], 1, MSG_NOSIGNAL) != 1) return;
      std::this_thread::sleep_for(100ms);
    }
  });
  std::string rest;
  EXPECT_TRUE(raw_wait_closed(fd, &rest));
  const auto waited = SteadyClock::now() - begin;
  closed.store(true);
  drip.join();
  ::close(fd);
  EXPECT_GE(waited, 450ms);
  EXPECT_LT(waited, 1500ms);
  EXPECT_EQ(rest, "");
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 1; }));
  EXPECT_EQ(server_->stats().tls_handshake_failures, 1u);
}

TEST_F(TlsTest, IdleTlsConnectionClosesWithoutALastAnswer) {
  NetOptions o = small();
  o.idle_timeout_ms = 100;
  start(o, load(server_files("server-a")));
  TlsClient c(port_, verifying());
  c.send("PING\n");
  ASSERT_EQ(c.read_lines(1), "PONG\n");
  const auto begin = SteadyClock::now();
  std::string rest;
  EXPECT_TRUE(c.wait_closed(&rest));
  EXPECT_LT(SteadyClock::now() - begin, 1s);
  EXPECT_EQ(rest, "");  // no TIMEOUT line: a TLS connection just closes
  EXPECT_TRUE(eventually([&] { return server_->stats().timeouts == 1; }));
  EXPECT_EQ(server_->stats().tls_handshake_failures, 0u);
}

TEST_F(TlsTest, ShutdownFinishesAnInFlightJobOverTls) {
  start(small(), load(server_files("server-a")));
  TlsClient busy(port_, verifying());
  TlsClient idle(port_, verifying());
  idle.send("PING\n");
  ASSERT_EQ(idle.read_lines(1), "PONG\n");
  const int started = hooks.jobs_started.load();
  busy.send("SLOW\n");
  ASSERT_TRUE(eventually([&] { return hooks.jobs_started.load() == started + 1; }));
  server_->shutdown(2s);
  std::string rest;
  EXPECT_TRUE(busy.wait_closed(&rest));
  EXPECT_EQ(rest, "DONE\n");
  EXPECT_TRUE(idle.wait_closed());
  EXPECT_EQ(server_->stats().connections_open, 0u);
}

}  // namespace
}  // namespace idforge::server
