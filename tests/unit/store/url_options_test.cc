// The URL helpers every backend shares (src/url/url_options.h): how a URL is shown in
// errors and logs.
#include "url/url_options.h"

#include <gtest/gtest.h>

namespace idforge {
namespace {

TEST(RedactUrlTest, ThePasswordIsNeverShownWhateverItHolds) {
  EXPECT_EQ(redact_url("postgres://idforge:s3cret@db1:5432/ids"),
            "postgres://idforge@db1:5432/ids");
  // A '/' or '@' in a password that was not percent-encoded: the URL does not parse, and
  // its error shows it.
  EXPECT_EQ(redact_url("postgres://idforge:s3/cret@db1:5432/ids"),
            "postgres://idforge@db1:5432/ids");
  EXPECT_EQ(redact_url("mysql://app:p@ss/w@db:3306/ids?table=leaf_alloc"),
            "mysql://app@db:3306/ids?table=leaf_alloc");
  EXPECT_EQ(redact_url("postgres://db1/ids?user=u&password=s3cret&sslmode=require"),
            "postgres://db1/ids?user=u&password=***&sslmode=require");
}

TEST(RedactUrlTest, AUrlWithoutAPasswordIsShownAsItIs) {
  for (const char* url : {"postgres://idforge@db1:5432/ids", "sqlite:/var/lib/idforge/s.db",
                          "redis://127.0.0.1:6379/3", "mysql://u@h/d?table=ids2"}) {
    EXPECT_EQ(redact_url(url), url);
  }
}

}  // namespace
}  // namespace idforge
