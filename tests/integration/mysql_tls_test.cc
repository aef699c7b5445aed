// The MySQL/MariaDB store's TLS options (tls=off|on|verify, tls_ca) against a MariaDB
// that takes TCP clients over TLS only: scripts/test-services start mariadb --tls, with
// a throwaway CA whose certificate is <dir>/tls/ca.pem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "idforge/segment_store.h"
#include "integration/services.h"
#include "store/store_factory.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::has;
using test::with_query;

using test_support::RunResult;

// The --tls server, started once per test binary; stopped with the rest at the end.
const Result<Server>& tls_server() {
  static const Result<Server> server =
      Services::get().start_private(ServerKind::kMariadb, "mariadb-tls", {"--tls"});
  return server;
}

std::string ca_of(const Server& server) { return server.dir + "/tls/ca.pem"; }

// What an error may show of the URL: everything but the password.
std::string shown_url(const Server& server) {
  std::string shown = server.url;
  const size_t at = shown.find(":idforge@");
  if (at != std::string::npos) shown.erase(at, std::string(":idforge").size());
  return shown;
}

TagSpec tls_tag(const std::string& name) {
  TagSpec t;
  t.name = name;
  t.start = 1;
  t.step = 100;
  return t;
}

TEST(MysqlTlsTest, VerifiedTlsConnectsAndAllocates) {
  const Result<Server>& server = tls_server();
  ASSERT_TRUE(server.ok()) << server.status().to_string();

  auto s = store::open_store(with_query(server->url, "tls=verify&tls_ca=" + ca_of(*server)));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string tag = unique_tag("tls");
  ASSERT_TRUE((*s)->create_tag(tls_tag(tag)).ok());
  Result<Segment> a = (*s)->allocate(tag, 0);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->first, 1u);
  EXPECT_EQ(a->count, 100u);

  // A session as idforge (the script's client, over TLS) is encrypted.
  const RunResult cipher =
      Services::get().client(*server, {"-N", "-B", "-e", "SHOW STATUS LIKE 'Ssl_cipher'"});
  ASSERT_EQ(cipher.exit_code, 0) << cipher.err;
  ASSERT_TRUE(has(cipher.out, "Ssl_cipher\t")) << cipher.out;
  const std::string name = cipher.out.substr(cipher.out.find('\t') + 1);
  EXPECT_FALSE(name.empty() || name == "\n") << "no cipher: " << cipher.out;

  // The store's own session cannot be asked, but the server takes no other: a plain
  // connection with the same user and password is refused. MariaDB 10.11 reports
  // require_secure_transport as "Access denied" (1045), the TLS login above being the
  // proof that the password itself is right.
  auto plain = store::open_store(with_query(server->url, "tls=off"));
  ASSERT_FALSE(plain.ok()) << "a plain connection was let in";
  const Status& refused = plain.status();
  EXPECT_TRUE(refused.code() == StatusCode::kIoError || refused.code() == StatusCode::kUnavailable)
      << refused.to_string();
  EXPECT_TRUE(has(refused.message(), "Access denied")) << refused.message();
  EXPECT_TRUE(has(refused.message(), shown_url(*server))) << refused.message();
  EXPECT_FALSE(has(refused.message(), ":idforge@")) << refused.message();
}

TEST(MysqlTlsTest, AWrongCaIsRefusedWithAClearError) {
  const Result<Server>& server = tls_server();
  ASSERT_TRUE(server.ok()) << server.status().to_string();

  // An unrelated CA: it signed nothing the server has.
  const std::string other = Services::get().make_dir("other-ca");
  const RunResult made = test_support::run_command(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
       "/CN=unrelated test CA", "-keyout", other + "/ca-key.pem", "-out", other + "/ca.pem"},
      other + "/openssl");
  ASSERT_EQ(made.exit_code, 0) << made.err;

  auto wrong = store::open_store(with_query(server->url, "tls=verify&tls_ca=" + other + "/ca.pem"));
  ASSERT_FALSE(wrong.ok()) << "a server certificate from another CA was accepted";
  const std::string message = wrong.status().message();
  // A setting to fix, not a server to wait for.
  EXPECT_EQ(wrong.status().code(), StatusCode::kIoError) << wrong.status().to_string();
  EXPECT_TRUE(has(message, shown_url(*server))) << message;
  EXPECT_TRUE(has(message, "certificate")) << message;
  EXPECT_FALSE(has(message, ":idforge@")) << message;

  // tls=on encrypts without checking the certificate: no CA needed.
  auto unverified = store::open_store(with_query(server->url, "tls=on"));
  ASSERT_TRUE(unverified.ok()) << unverified.status().to_string();
  const std::string tag = unique_tag("tlson");
  ASSERT_TRUE((*unverified)->create_tag(tls_tag(tag)).ok());
  EXPECT_TRUE((*unverified)->allocate(tag, 0).ok());
}

}  // namespace
}  // namespace idforge::integration
