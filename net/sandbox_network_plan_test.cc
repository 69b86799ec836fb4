#include "net/sandbox_network_plan.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::net {
namespace {

TEST(ParseResolvConfTest, TakesNameserverLines) {
  absl::StatusOr<std::vector<UpstreamServer>> servers = ParseResolvConf(
      "# comment\nsearch example.com\nnameserver 127.0.0.53\nnameserver  2001:db8::1\n"
      "nameserver fe80::1%eth0\nnameserver bogus\noptions edns0\n");
  ASSERT_TRUE(servers.ok()) << servers.status();
  ASSERT_EQ(servers->size(), 2u);
  EXPECT_EQ((*servers)[0].address.ToString(), "127.0.0.53");
  EXPECT_EQ((*servers)[0].port, 53);
  EXPECT_EQ((*servers)[1].address.ToString(), "2001:db8::1");
}

TEST(ParseResolvConfTest, NoNameserverIsAnError) {
  EXPECT_FALSE(ParseResolvConf("search example.com\n").ok());
}

TEST(ParseDnsServerTest, Forms) {
  absl::StatusOr<UpstreamServer> v4 = ParseDnsServer("198.51.100.1:5353");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->address.ToString(), "198.51.100.1");
  EXPECT_EQ(v4->port, 5353);
  absl::StatusOr<UpstreamServer> v6 = ParseDnsServer("[2001:db8::1]:53");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->address.ToString(), "2001:db8::1");
  absl::StatusOr<UpstreamServer> bare = ParseDnsServer("192.0.2.1");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->port, 53);
  EXPECT_FALSE(ParseDnsServer("192.0.2.1:0").ok());
  EXPECT_FALSE(ParseDnsServer("example.com:53").ok());
  EXPECT_FALSE(ParseDnsServer("[2001:db8::1").ok());
}

TEST(PlanSandboxNetworkTest, RefusesBadAllowEntry) {
  SandboxNetworkRequest request;
  request.allow = {"192.0.2.1:443"};
  request.dns_upstream = "192.0.2.53:53";
  absl::StatusOr<SandboxNetworkPlan> plan = PlanSandboxNetwork(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("--allow"));
}

TEST(PlanSandboxNetworkTest, RefusesMissingPasta) {
  SandboxNetworkRequest request;
  request.mode = SandboxNetMode::kFull;
  request.pasta_path = "/nonexistent/pasta";
  request.dns_upstream = "192.0.2.53:53";  // whatever this host's resolv.conf says
  absl::StatusOr<SandboxNetworkPlan> plan = PlanSandboxNetwork(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("passt"));
}

}  // namespace
}  // namespace zygo::net

namespace zygo::net {
namespace {

TEST(SandboxNetworkPlanArgsTest, RoundTrips) {
  SandboxNetworkPlan plan;
  plan.mode = SandboxNetMode::kEgress;
  plan.allow = {"allowed.test:8080", "*.cdn.test:443"};
  plan.upstream = {*ParseDnsServer("198.51.100.53:53"), *ParseDnsServer("[2001:db8::53]:5353")};
  plan.pasta_path = "/usr/bin/pasta";
  absl::StatusOr<SandboxNetworkPlan> back =
      SandboxNetworkPlanFromArgs(SandboxNetworkPlanToArgs(plan));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->allow, plan.allow);
  ASSERT_EQ(back->upstream.size(), 2u);
  EXPECT_EQ(back->upstream[1].ToString(), "[2001:db8::53]:5353");
  EXPECT_EQ(back->pasta_path, plan.pasta_path);
  EXPECT_FALSE(SandboxNetworkPlanFromArgs({"--mode=egress"}).ok());
}

}  // namespace
}  // namespace zygo::net

namespace zygo::net {
namespace {

// A resolv.conf with `content` in the test's temporary directory.
std::string WriteResolvConf(const std::string& name, const std::string& content) {
  const char* dir = getenv("TEST_TMPDIR");
  std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << content;
  return path;
}

SandboxNetworkRequest FullRequest() {
  SandboxNetworkRequest request;
  request.mode = SandboxNetMode::kFull;
  request.pasta_path = "/bin/true";  // any executable: nothing is started here
  return request;
}

// --net full runs Zygo's resolver too, so it needs an upstream, and says where it looked.
TEST(PlanSandboxNetworkTest, FullPlansTheUpstreamFromResolvConf) {
  SandboxNetworkRequest request = FullRequest();
  request.resolv_conf_path = WriteResolvConf("no-nameserver.conf", "search example.com\n");
  absl::StatusOr<SandboxNetworkPlan> plan = PlanSandboxNetwork(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("--net full"));
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr(request.resolv_conf_path));
  EXPECT_EQ(plan.status().message().find('\n'), absl::string_view::npos);

  // The control: the same request with a nameserver line (a private one, as on hosts whose
  // resolver the sandbox could never reach itself) plans it.
  request.resolv_conf_path = WriteResolvConf("private.conf", "nameserver 10.255.255.53\n");
  plan = PlanSandboxNetwork(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->upstream.size(), 1u);
  EXPECT_EQ(plan->upstream[0].ToString(), "10.255.255.53:53");
  EXPECT_TRUE(plan->allow.empty());
}

TEST(PlanSandboxNetworkTest, FullTakesDnsUpstream) {
  SandboxNetworkRequest request = FullRequest();
  request.resolv_conf_path = "/nonexistent/resolv.conf";  // not read when dns_upstream is set
  request.dns_upstream = "192.0.2.53:5353";
  absl::StatusOr<SandboxNetworkPlan> plan = PlanSandboxNetwork(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->upstream.size(), 1u);
  EXPECT_EQ(plan->upstream[0].ToString(), "192.0.2.53:5353");
  request.dns_upstream = "bogus";
  plan = PlanSandboxNetwork(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("ZYGO_DNS_UPSTREAM"));
}

TEST(SandboxNetworkPlanArgsTest, FullCarriesItsUpstream) {
  SandboxNetworkPlan plan;
  plan.mode = SandboxNetMode::kFull;
  plan.upstream = {*ParseDnsServer("198.51.100.53:53")};
  plan.pasta_path = "/usr/bin/pasta";
  absl::StatusOr<SandboxNetworkPlan> back =
      SandboxNetworkPlanFromArgs(SandboxNetworkPlanToArgs(plan));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->mode, SandboxNetMode::kFull);
  ASSERT_EQ(back->upstream.size(), 1u);
  EXPECT_EQ(back->upstream[0].ToString(), "198.51.100.53:53");
  EXPECT_FALSE(SandboxNetworkPlanFromArgs({"--mode=full", "--pasta=/usr/bin/pasta"}).ok());
  EXPECT_FALSE(SandboxNetworkPlanFromArgs({"--mode=full", "--pasta=/usr/bin/pasta",
                                           "--upstream=198.51.100.53:53", "--allow=a.test:443"})
                   .ok());
}

}  // namespace
}  // namespace zygo::net
