// parse_mysql_url: every part of the URL, the options, and errors that never show the
// password.
#include "store/mysql/mysql_url.h"

#include <gtest/gtest.h>

#include <string>

namespace idforge::store {
namespace {

TEST(MysqlUrlTest, PartsDefaultsAndPercentEscapes) {
  MysqlUrl u = parse_mysql_url("mysql://app:p%40ss%3Aw@db.example:3307/ids").value();
  EXPECT_EQ(u.user, "app");
  EXPECT_EQ(u.password, "p@ss:w");
  EXPECT_EQ(u.host, "db.example");
  EXPECT_EQ(u.port, 3307u);
  EXPECT_EQ(u.database, "ids");
  EXPECT_EQ(u.table, "idforge_segments");
  EXPECT_EQ(u.scheme, MysqlScheme::kIdforge);
  EXPECT_EQ(u.shown, "mysql://app@db.example:3307/ids");
  EXPECT_EQ(u.tls, MysqlTls::kOff);

  MysqlUrl v = parse_mysql_url("mariadb://root@[::1]/x").value();
  EXPECT_EQ(v.host, "::1");
  EXPECT_EQ(v.port, 3306u);
  EXPECT_EQ(v.password, "");
}

TEST(MysqlUrlTest, WellKnownTablesChooseTheirScheme) {
  EXPECT_EQ(parse_mysql_url("mysql://u@h/d?table=leaf_alloc")->scheme, MysqlScheme::kLeaf);
  EXPECT_EQ(parse_mysql_url("mysql://u@h/d?table=tiny_id_info")->scheme, MysqlScheme::kTinyid);
  EXPECT_EQ(parse_mysql_url("mysql://u@h/d?table=SEQUENCE")->scheme, MysqlScheme::kSequence);
  EXPECT_EQ(parse_mysql_url("mysql://u@h/d?table=ids2")->scheme, MysqlScheme::kIdforge);
  MysqlUrl renamed = parse_mysql_url("mysql://u@h/d?table=leaf_v2&scheme=leaf").value();
  EXPECT_EQ(renamed.table, "leaf_v2");
  EXPECT_EQ(renamed.scheme, MysqlScheme::kLeaf);
}

TEST(MysqlUrlTest, OptionsAreReadAndCheckedTogether) {
  MysqlUrl u = parse_mysql_url(
                   "mysql://u@h/d?connect_timeout=1&read_timeout=9&write_timeout=8&"
                   "lock_wait_timeout=2&pool=2&retries=3&step=50&tls=verify&tls_ca=/ca.pem")
                   .value();
  EXPECT_EQ(u.connect_timeout_s, 1u);
  EXPECT_EQ(u.read_timeout_s, 9u);
  EXPECT_EQ(u.write_timeout_s, 8u);
  EXPECT_EQ(u.lock_wait_timeout_s, 2u);
  EXPECT_EQ(u.pool, 2u);
  EXPECT_EQ(u.retries, 3u);
  EXPECT_EQ(u.step, 50u);
  EXPECT_EQ(u.tls, MysqlTls::kVerify);
  EXPECT_EQ(u.tls_ca, "/ca.pem");
  // A CA file alone asks for verification.
  EXPECT_EQ(parse_mysql_url("mysql://u@h/d?tls_ca=/ca.pem")->tls, MysqlTls::kVerify);
}

TEST(MysqlUrlTest, ErrorsNameTheProblemAndNeverThePassword) {
  const std::pair<const char*, const char*> cases[] = {
      {"postgres://u:hunter2@h/d", "must start with mysql://"},
      {"mysql://:hunter2@h/d", "the user is empty"},
      {"mysql://u:hunter2@h", "no database"},
      {"mysql://u:hunter2@h/d-b", "the database must be"},
      {"mysql://u:hunter2@[::1/d", "unclosed '['"},
      {"mysql://u:hunter2@h:0/d", "port"},
      {"mysql://u:hunter2@h/d?pool=0", "pool must be at least 1"},
      {"mysql://u:hunter2@h/d?pool=1&pool=2", "given twice"},
      {"mysql://u:hunter2@h/d?tls=maybe", "tls must be off, on or verify"},
      {"mysql://u:hunter2@h/d?tls_cert=/c.pem", "tls_cert and tls_key go together"},
      {"mysql://u:hunter2@h/d?retries=x", "retries"},
      {"mysql://u:hunter%zz@h/d", "%-escape"},
  };
  for (const auto& [url, why] : cases) {
    Result<MysqlUrl> u = parse_mysql_url(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(u.status().message().find(why), std::string::npos)
        << url << ": " << u.status().message();
    EXPECT_EQ(u.status().message().find("hunter2"), std::string::npos) << u.status().message();
  }
}

}  // namespace
}  // namespace idforge::store
