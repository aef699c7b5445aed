// TlsContext: the certificate, key and settings of the server's TLS listeners
// (NetServer::listen with a context). TLS 1.2 and 1.3 only, no compression, no
// renegotiation; with a client CA, clients must present a certificate it signed (mTLS).
//
//   Result<std::shared_ptr<TlsContext>> tls = TlsContext::load({cert, key, client_ca});
//   net.listen("0.0.0.0:8443", "https", make_http_session, *tls);
//   ...
//   Status s = (*tls)->reload();  // on SIGHUP: new connections get the new certificate
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "core/thread_annotations.h"
#include "idforge/status.h"

// Declared, not included: <boost/asio/ssl.hpp> pulls OpenSSL's headers into every file
// that sees this one; only net_connection.cc and tls_context.cc need them.
namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace idforge::server {

struct TlsFiles {
  std::string cert;  // PEM certificate chain (server cert first)
  std::string key;   // PEM private key (not encrypted)
  std::string
      client_ca;  // PEM CA bundle; non-empty: clients must present a certificate it signed (mTLS)
};

// The TLS settings of the listeners, shared by all of them. Connections take the current
// context when they are accepted, so reload() swaps certificates for new connections without
// dropping open ones.
class TlsContext {
 public:
  // InvalidArgument naming the file and OpenSSL's reason ("tls_cert /x/y.pem: No such file
  // or directory", "tls_key /k.pem: key does not match the certificate in tls_cert /c.pem").
  static Result<std::shared_ptr<TlsContext>> load(TlsFiles files);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads the same files (SIGHUP). On any error the old certificate stays in use and the
  // error is returned.
  Status reload();
  const TlsFiles& files() const { return files_; }
  // Whether clients must present a certificate (client_ca is set).
  bool verifies_clients() const { return !files_.client_ca.empty(); }

  // The context a connection accepted now uses (net_connection.cc). The connection keeps
  // it until it closes, so a reload never changes it under an open connection.
  std::shared_ptr<boost::asio::ssl::context> current() const IDFORGE_EXCLUDES(mu_);

 private:
  using Native = std::shared_ptr<boost::asio::ssl::context>;
  TlsContext(TlsFiles files, Native first);

  const TlsFiles files_;
  mutable Mutex mu_;
  Native current_ IDFORGE_GUARDED_BY(mu_);
};

}  // namespace idforge::server
