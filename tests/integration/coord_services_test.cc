// scripts/test-services for the coordinators: etcd and ZooKeeper start on random
// loopback ports, keep their data across stop/restart, and pause/resume. The registry
// tests rely on each of these.
#include <gtest/gtest.h>

#include <string>

#include "integration/services.h"

namespace idforge::integration {
namespace {

bool has_prefix(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(CoordServices, EtcdKeepsDataAcrossRestart) {
  Services& services = Services::get();
  Result<Server> server = services.start_private(ServerKind::kEtcd, "etcd-svc");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  EXPECT_TRUE(has_prefix(server->url, "etcd://127.0.0.1:")) << server->url;

  ASSERT_EQ(services.client(*server, {"put", "/svc-test", "kept"}).exit_code, 0);
  ASSERT_TRUE(services.stop(*server).ok());
  EXPECT_NE(services.client(*server, {"--dial-timeout=500ms", "get", "/svc-test"}).exit_code, 0);
  ASSERT_TRUE(services.restart(*server).ok());
  const test_support::RunResult got =
      services.client(*server, {"get", "--print-value-only", "/svc-test"});
  EXPECT_EQ(got.exit_code, 0);
  EXPECT_EQ(got.out, "kept\n");

  ASSERT_TRUE(services.pause(*server).ok());
  EXPECT_NE(services.client(*server, {"--command-timeout=500ms", "get", "/svc-test"}).exit_code, 0);
  ASSERT_TRUE(services.resume(*server).ok());
  EXPECT_EQ(services.client(*server, {"get", "/svc-test"}).exit_code, 0);
  ASSERT_TRUE(services.stop(*server).ok());
}

TEST(CoordServices, ZookeeperKeepsDataAcrossRestart) {
  Services& services = Services::get();
  Result<Server> server = services.start_private(ServerKind::kZookeeper, "zk-svc");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  EXPECT_TRUE(has_prefix(server->url, "zookeeper://127.0.0.1:")) << server->url;

  ASSERT_EQ(services.client(*server, {"create", "/svc-test", "kept"}).exit_code, 0);
  ASSERT_TRUE(services.stop(*server).ok());
  ASSERT_TRUE(services.restart(*server).ok());
  const test_support::RunResult got = services.client(*server, {"get", "/svc-test"});
  EXPECT_EQ(got.exit_code, 0);
  EXPECT_NE(got.out.find("kept"), std::string::npos) << got.out;
  ASSERT_TRUE(services.stop(*server).ok());
}

TEST(CoordServices, SharedServersAnswer) {
  Result<std::string> etcd = Services::get().etcd_url();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Result<std::string> zk = Services::get().zookeeper_url();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Result<Server> shared = Services::get().shared(ServerKind::kZookeeper);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->url, *zk);
  EXPECT_EQ(Services::get().client(*shared, {"ls", "/"}).exit_code, 0);
}

}  // namespace
}  // namespace idforge::integration
