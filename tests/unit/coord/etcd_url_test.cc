// The etcd target of a registry URL, etcd://HOST:PORT[,HOST:PORT...]: the forms that
// name every member of a cluster, and the ones refused with the accepted form.
#include "coord/etcd/etcd_url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coord/etcd/etcd_client.h"

namespace idforge::coord {
namespace {

std::vector<std::string> shown(const Result<std::vector<EtcdMember>>& members) {
  std::vector<std::string> out;
  if (members.ok()) {
    for (const EtcdMember& m : *members) out.push_back(m.shown);
  }
  return out;
}

// etcd://h:1,h:2,... with `n` members.
std::string members_on_ports(int n) {
  std::string out = "etcd://";
  for (int i = 1; i <= n; ++i) {
    if (i > 1) out += ',';
    out += "h:";
    out += std::to_string(i);
  }
  return out;
}

TEST(EtcdUrlTest, OneOrManyMembersAreRead) {
  Result<std::vector<EtcdMember>> one = parse_etcd_target("etcd://10.0.0.6:2379");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].host, "10.0.0.6");
  EXPECT_EQ((*one)[0].port, "2379");

  Result<std::vector<EtcdMember>> three =
      parse_etcd_target("etcd://etcd-1.example.com:2379,10.0.0.7:2379,[fd00::8]:12379");
  ASSERT_TRUE(three.ok()) << three.status().to_string();
  EXPECT_EQ(shown(three),
            (std::vector<std::string>{"etcd://etcd-1.example.com:2379", "etcd://10.0.0.7:2379",
                                      "etcd://[fd00::8]:12379"}));
  EXPECT_EQ((*three)[2].host, "fd00::8");  // without brackets, for the resolver
  EXPECT_EQ(etcd_target_shown(*three),
            "etcd://etcd-1.example.com:2379,10.0.0.7:2379,[fd00::8]:12379");

  // A trailing '/', a port with leading zeros (shown without), a bare IPv6 address
  // (its last ':' starts the port), '_' as /etc/hosts allows.
  EXPECT_EQ(shown(parse_etcd_target("etcd://a:1,b:2/")),
            (std::vector<std::string>{"etcd://a:1", "etcd://b:2"}));
  EXPECT_EQ(shown(parse_etcd_target("etcd://a:02379")),
            (std::vector<std::string>{"etcd://a:2379"}));
  EXPECT_EQ(shown(parse_etcd_target("etcd://::1:2379")),
            (std::vector<std::string>{"etcd://[::1]:2379"}));
  EXPECT_TRUE(parse_etcd_target("etcd://etcd_1:1").ok());

  Result<std::vector<EtcdMember>> sixteen = parse_etcd_target(members_on_ports(16));
  ASSERT_TRUE(sixteen.ok()) << sixteen.status().to_string();
  EXPECT_EQ(sixteen->size(), 16u);
}

TEST(EtcdUrlTest, BadFormsAreRefusedNamingTheProblemAndTheAcceptedForm) {
  const std::string seventeen = members_on_ports(17);
  const struct {
    std::string target;
    std::string why;
  } cases[] = {
      {"http://a:1", "does not start with etcd://"},
      {"etcd://", "no port"},
      {"etcd://a", "no port"},
      {"etcd://:2379", "no host"},
      {"etcd://a:0", "port '0' is not a number from 1 to 65535"},
      {"etcd://a:65536", "port '65536'"},
      {"etcd://a:x", "port 'x'"},
      {"etcd://a:1/path", "it has a path"},
      {"etcd://u:p@a:1", "user names are not supported"},
      {"etcd://a:1,", "member 2 is empty"},
      {"etcd://,a:1", "member 1 is empty"},
      {"etcd://a:1,,b:2", "member 2 is empty"},
      {"etcd://a:1,b:2,", "member 3 is empty"},
      {"etcd://a:1,b", "member 'b': no port"},
      {"etcd://a:1,b:99999", "member 'b:99999': port '99999'"},
      {"etcd://a:1,b:2,a:1", "member 'a:1' is named twice"},
      {"etcd://Etcd-1:2379,etcd-1:02379", "member 'etcd-1:02379' is named twice"},
      {"etcd://[::1]:1,[0::1]:1", "member '[0::1]:1' is named twice"},
      {"etcd://10.0.0.1:1,10.0.0.01:1", "neither a host name nor an IP address"},
      {"etcd://[::1:2379", "'[' without ']'"},
      {"etcd://[::1]2379", "no port after the address"},
      {"etcd://[example.com]:1", "neither a host name nor an IPv6 address"},
      {"etcd://[10.0.0.1]:1", "neither a host name nor an IPv6 address"},
      {"etcd://a b:1", "'a b' is neither a host name nor an IP address"},
      {"etcd://a:1;b:2", "'a:1;b' is neither a host name nor an IP address"},
      {seventeen, "more than 16 members"},
  };
  for (const auto& c : cases) {
    Result<std::vector<EtcdMember>> got = parse_etcd_target(c.target);
    ASSERT_FALSE(got.ok()) << c.target;
    const Status status = got.status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.target;
    const std::string& message = status.message();
    EXPECT_NE(message.find(c.why), std::string::npos) << c.target << ": " << message;
    EXPECT_NE(message.find("(use etcd://HOST:PORT[,HOST:PORT...])"), std::string::npos) << message;
    EXPECT_NE(message.find(c.target), std::string::npos) << message;
  }
}

TEST(EtcdUrlTest, TheClientKeepsEveryMemberAndShowsThem) {
  // open() only parses: nothing is contacted before the first call.
  Result<std::unique_ptr<EtcdClient>> client =
      EtcdClient::open("etcd://127.0.0.1:1,127.0.0.1:2,[::1]:3", {});
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  EXPECT_EQ((*client)->shown(), "etcd://127.0.0.1:1,127.0.0.1:2,[::1]:3");
  EXPECT_EQ((*client)->members().size(), 3u);
  EXPECT_EQ(EtcdClient::open("etcd://a:1,a:1", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EtcdClient::open("etcd://a:1", {.connect_ms = 0}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idforge::coord
