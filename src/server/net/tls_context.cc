#include "server/net/tls_context.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace idforge::server {
namespace {

// The names the settings have in the configuration, so an error says which one to fix.
constexpr std::string_view kCertName = "tls_cert";
constexpr std::string_view kKeyName = "tls_key";
constexpr std::string_view kClientCaName = "tls_client_ca";
// Larger than any certificate bundle; a bound so a wrong path (a log, a device) is not read
// whole into memory.
constexpr size_t kMaxFileBytes = 16 << 20;
// TLS 1.2 suites: ECDHE key exchange (forward secrecy) and AEAD ciphers only, as Mozilla's
// "intermediate" profile. TLS 1.3 suites are all of that kind and keep OpenSSL's defaults.
constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";
// Required by OpenSSL for resumed sessions when clients are verified; any fixed value.
constexpr std::string_view kSessionIdContext = "idforge";

struct CtxFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// OpenSSL's reasons for the errors queued since the last ERR_clear_error(), oldest first;
// empties the queue.
std::string openssl_reasons() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    const std::string text = reason ? reason : fmt::format("OpenSSL error {:#x}", e);
    if (out.find(text) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += text;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status bad(std::string_view name, const std::string& path, std::string_view why) {
  return Status::InvalidArgument(fmt::format("{} {}: {}", name, path, why));
}

// The whole file, or the system's reason it cannot be read.
Result<std::string> read_file(std::string_view name, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return bad(name, path, std::generic_category().message(errno));
  std::string text;
  char chunk[16 * 1024];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0 && text.size() <= kMaxFileBytes) {
    text.append(chunk, n);
  }
  const bool failed = std::ferror(f) != 0;
  const int error = errno;
  std::fclose(f);
  if (failed) return bad(name, path, std::generic_category().message(error));
  if (text.size() > kMaxFileBytes) return bad(name, path, "larger than 16 MiB, not a PEM file");
  return text;
}

BioPtr memory_bio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in a PEM text, in order; none is an error.
Result<std::vector<X509Ptr>> read_certificates(std::string_view name, const std::string& path,
                                               const std::string& pem) {
  BioPtr bio = memory_bio(pem);
  if (!bio) return bad(name, path, openssl_reasons());
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  // The loop ends at the end of the text (PEM_R_NO_START_LINE) or at a broken block.
  const unsigned long last = ERR_peek_last_error();
  if (ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE) {
    ERR_clear_error();
  } else if (last != 0) {
    return bad(name, path, openssl_reasons());
  }
  if (certs.empty()) return bad(name, path, "no PEM certificate in it");
  return certs;
}

// A password callback that has none: an encrypted key fails instead of prompting on the
// terminal, which OpenSSL's default callback would do.
int no_password(char*, int, int, void*) { return -1; }

Result<KeyPtr> read_key(const std::string& path, const std::string& pem) {
  if (pem.find("ENCRYPTED") != std::string::npos) {
    return bad(kKeyName, path, "encrypted keys are not supported (no password to decrypt it)");
  }
  BioPtr bio = memory_bio(pem);
  if (!bio) return bad(kKeyName, path, openssl_reasons());
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
  if (!key) return bad(kKeyName, path, openssl_reasons());
  return key;
}

// A server context from the files, with every setting; errors name the file at fault.
Result<std::shared_ptr<boost::asio::ssl::context>> build(const TlsFiles& files) {
  // The error queue is per thread and may hold leftovers of an unrelated call.
  ERR_clear_error();
  CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Status::Internal("SSL_CTX_new: " + openssl_reasons());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  // Renegotiation: a client could make the server redo the costly handshake at will, and
  // nothing here needs it. Compression: CRIME. Session tickets stay on (cheap resumption).
  SSL_CTX_set_options(
      c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(c, kTls12Ciphers) != 1) {
    return Status::Internal("SSL_CTX_set_cipher_list: " + openssl_reasons());
  }
  SSL_CTX_set_session_id_context(c,
                                 reinterpret_cast<const unsigned char*>(kSessionIdContext.data()),
                                 static_cast<unsigned>(kSessionIdContext.size()));

  IDFORGE_ASSIGN_OR_RETURN(std::string cert_pem, read_file(kCertName, files.cert));
  IDFORGE_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                           read_certificates(kCertName, files.cert, cert_pem));
  if (SSL_CTX_use_certificate(c, chain.front().get()) != 1) {
    return bad(kCertName, files.cert, openssl_reasons());  // e.g. "ee key too small"
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(c, chain[i].get()) != 1) {
      return bad(kCertName, files.cert, openssl_reasons());
    }
  }

  IDFORGE_ASSIGN_OR_RETURN(std::string key_pem, read_file(kKeyName, files.key));
  IDFORGE_ASSIGN_OR_RETURN(KeyPtr key, read_key(files.key, key_pem));
  // Checked before use: OpenSSL would take a mismatched key and fail every handshake.
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return bad(kKeyName, files.key,
               fmt::format("key does not match the certificate in {} {}", kCertName, files.cert));
  }
  if (SSL_CTX_use_PrivateKey(c, key.get()) != 1) {
    return bad(kKeyName, files.key, openssl_reasons());
  }

  if (!files.client_ca.empty()) {
    IDFORGE_ASSIGN_OR_RETURN(std::string ca_pem, read_file(kClientCaName, files.client_ca));
    IDFORGE_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas,
                             read_certificates(kClientCaName, files.client_ca, ca_pem));
    X509_STORE* store = SSL_CTX_get_cert_store(c);
    for (const X509Ptr& ca : cas) {
      // Trusted for client certificates, and named in the CertificateRequest so a client
      // with several certificates picks the right one.
      if (X509_STORE_add_cert(store, ca.get()) != 1 || SSL_CTX_add_client_CA(c, ca.get()) != 1) {
        return bad(kClientCaName, files.client_ca, openssl_reasons());
      }
    }
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  // Takes ownership of the SSL_CTX (never throws for a non-null one).
  return std::make_shared<boost::asio::ssl::context>(ctx.release());
}

}  // namespace

TlsContext::TlsContext(TlsFiles files, Native first)
    : files_(std::move(files)), current_(std::move(first)) {}

TlsContext::~TlsContext() = default;

Result<std::shared_ptr<TlsContext>> TlsContext::load(TlsFiles files) {
  IDFORGE_ASSIGN_OR_RETURN(Native first, build(files));
  return std::shared_ptr<TlsContext>(new TlsContext(std::move(files), std::move(first)));
}

Status TlsContext::reload() {
  IDFORGE_ASSIGN_OR_RETURN(Native next, build(files_));
  Native old;
  {
    MutexLock lock(mu_);
    old = std::exchange(current_, std::move(next));
  }
  // `old` is freed here, outside the lock, unless connections still hold it.
  return Status::Ok();
}

std::shared_ptr<boost::asio::ssl::context> TlsContext::current() const {
  MutexLock lock(mu_);
  return current_;
}

}  // namespace idforge::server
