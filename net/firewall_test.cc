// The firewall in real network namespaces made by the test: a "sandbox" namespace with the
// ruleset, joined by a veth pair to an "internet" namespace that holds TEST-NET servers and
// stand-ins for a private LAN host, the metadata address and the host behind pasta. Every
// denial is paired with an allow control through the same probe. Needs root.
#include "net/firewall.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "net/firewall_plan.h"
#include "net/internal/test_netns.h"
#include "net/ip_address.h"
#include "net/netns_socket.h"

namespace zygo::net {
namespace {

using testing::ConnectResult;
using testing::TestNetns;

constexpr char kServer[] = "198.51.100.10";      // a public server
constexpr char kDnsServer[] = "198.51.100.53";   // the resolver, when not on loopback
constexpr char kGateway[] = "203.0.113.1";       // the "internet" side of the veth: the host
constexpr char kPrivate[] = "10.1.2.3";          // a LAN host
constexpr char kMetadata[] = "169.254.169.254";  // the cloud metadata address
constexpr char kServer6[] = "2001:db8:2::10";
constexpr char kLoopbackResolver[] = "127.0.0.53";

IpAddress Ip(const char* text) { return IpAddress::Parse(text).value(); }

class FirewallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    ASSERT_NO_FATAL_FAILURE(SkipWithoutNftables());
    if (IsSkipped()) return;
    sandbox_ = TestNetns::Create().value();
    internet_ = TestNetns::Create().value();
    ASSERT_NO_FATAL_FAILURE(BuildTopology());
    ASSERT_NO_FATAL_FAILURE(StartServers());
    absl::StatusOr<base::UniqueFd> netlink = OpenNetlinkInNetns(sandbox_->fd());
    ASSERT_TRUE(netlink.ok()) << netlink.status();
    netlink_ = *std::move(netlink);
  }

  // Installs a ruleset in a throwaway namespace: if the kernel cannot, every test skips.
  void SkipWithoutNftables() {
    std::unique_ptr<TestNetns> probe = TestNetns::Create().value();
    absl::StatusOr<base::UniqueFd> netlink = OpenNetlinkInNetns(probe->fd());
    absl::Status status = netlink.status();
    if (netlink.ok()) {
      status =
          InstallFirewall(netlink->get(), FirewallPlan::Egress(Ip(kLoopbackResolver), {}).value());
    }
    if (absl::IsUnimplemented(status)) GTEST_SKIP() << status;
    ASSERT_TRUE(status.ok()) << status;
  }

  void In(TestNetns& netns, const std::vector<std::string>& argv) {
    absl::StatusOr<std::string> out = netns.Run(argv);
    ASSERT_TRUE(out.ok()) << out.status();
  }

  void BuildTopology() {
    const std::string peer = std::to_string(internet_->pid());
    In(*sandbox_, {"ip", "link", "set", "lo", "up"});
    In(*sandbox_,
       {"ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", peer});
    In(*internet_, {"ip", "link", "set", "lo", "up"});
    In(*internet_, {"ip", "addr", "add", "203.0.113.1/24", "dev", "veth1"});
    In(*internet_, {"ip", "-6", "addr", "add", "2001:db8:1::1/64", "dev", "veth1", "nodad"});
    In(*internet_, {"ip", "link", "set", "veth1", "up"});
    for (const char* address : {kServer, kDnsServer, kPrivate, kMetadata}) {
      In(*internet_, {"ip", "addr", "add", absl::StrCat(address, "/32"), "dev", "lo"});
    }
    // nodad: a tentative address (duplicate detection still running) cannot be bound yet,
    // which made StartServers fail now and then.
    In(*internet_,
       {"ip", "-6", "addr", "add", absl::StrCat(kServer6, "/128"), "dev", "lo", "nodad"});
    In(*sandbox_, {"ip", "addr", "add", "203.0.113.2/24", "dev", "veth0"});
    In(*sandbox_, {"ip", "-6", "addr", "add", "2001:db8:1::2/64", "dev", "veth0", "nodad"});
    In(*sandbox_, {"ip", "link", "set", "veth0", "up"});
    In(*sandbox_, {"ip", "route", "add", "default", "via", kGateway});
    In(*sandbox_, {"ip", "-6", "route", "add", "default", "via", "2001:db8:1::1"});
  }

  void Serve(TestNetns& netns, const char* address, uint16_t port) {
    absl::StatusOr<base::UniqueFd> fd = testing::Listen(netns.fd(), address, port);
    ASSERT_TRUE(fd.ok()) << fd.status();
    servers_.push_back(*std::move(fd));
  }

  void StartServers() {
    Serve(*internet_, kServer, 8080);
    Serve(*internet_, kServer, 9090);
    Serve(*internet_, kDnsServer, 53);
    Serve(*internet_, kDnsServer, 54);
    Serve(*internet_, kPrivate, 8080);
    Serve(*internet_, kMetadata, 80);
    Serve(*internet_, kGateway, 8080);
    Serve(*internet_, kServer6, 8080);
    Serve(*sandbox_, "127.0.0.1", 7000);  // the sandbox's own loopback
    absl::StatusOr<base::UniqueFd> udp = testing::BindUdp(internet_->fd(), kServer, 5353);
    ASSERT_TRUE(udp.ok()) << udp.status();
    udp_server_ = *std::move(udp);
  }

  testing::ConnectOutcome Connect(const char* address, uint16_t port) {
    return testing::TryConnect(sandbox_->fd(), address, port);
  }

  void Install(const absl::StatusOr<FirewallPlan>& plan) {
    ASSERT_TRUE(plan.ok()) << plan.status();
    const absl::Status status = InstallFirewall(netlink_.get(), *plan);
    ASSERT_TRUE(status.ok()) << status;
  }

  void Allow(const char* address, uint16_t port, uint32_t ttl_seconds = 60) {
    const absl::Status status = AddAllowed(netlink_.get(), Ip(address), port, ttl_seconds);
    ASSERT_TRUE(status.ok()) << status;
  }

  std::unique_ptr<TestNetns> sandbox_;
  std::unique_ptr<TestNetns> internet_;
  base::UniqueFd netlink_;
  std::vector<base::UniqueFd> servers_;
  base::UniqueFd udp_server_;
};

#define EXPECT_CONNECTED(address, port)                               \
  EXPECT_EQ(Connect(address, port).result, ConnectResult::kConnected) \
      << address << ":" << port << " " << Connect(address, port).ToString()
#define EXPECT_DROPPED(address, port)                               \
  EXPECT_EQ(Connect(address, port).result, ConnectResult::kDropped) \
      << address << ":" << port << " " << Connect(address, port).ToString()

TEST_F(FirewallTest, WithoutTheFirewallEverythingIsReachable) {
  // The control for every test below: the topology reaches all of these, so a drop later
  // is the firewall's.
  EXPECT_CONNECTED(kServer, 8080);
  EXPECT_CONNECTED(kServer, 9090);
  EXPECT_CONNECTED(kDnsServer, 54);
  EXPECT_CONNECTED(kPrivate, 8080);
  EXPECT_CONNECTED(kMetadata, 80);
  EXPECT_CONNECTED(kGateway, 8080);
  EXPECT_CONNECTED(kServer6, 8080);
  EXPECT_EQ(Connect(kServer, 1).result, ConnectResult::kRefused);  // RST, not silence
  EXPECT_EQ(testing::SendUdp(sandbox_->fd(), kServer, 5353), 0);
  EXPECT_TRUE(testing::ReceivedUdp(udp_server_.get()));
  EXPECT_EQ(testing::SendIcmpEcho(sandbox_->fd(), kServer), 0);
}

TEST_F(FirewallTest, EgressAdmitsOnlyWhatAddAllowedAdded) {
  EXPECT_CONNECTED(kServer, 8080);  // control
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {Ip(kGateway)}));
  EXPECT_DROPPED(kServer, 8080);
  Allow(kServer, 8080);
  EXPECT_CONNECTED(kServer, 8080);
  EXPECT_DROPPED(kServer, 9090);   // same address, other port
  EXPECT_DROPPED(kDnsServer, 54);  // other address
  // ICMP is never in the set, even to an allowed address.
  EXPECT_EQ(testing::SendIcmpEcho(sandbox_->fd(), kServer), EPERM);
}

TEST_F(FirewallTest, AllowedElementExpiresWithItsTtl) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  Allow(kServer, 8080, /*ttl_seconds=*/1);
  EXPECT_CONNECTED(kServer, 8080);
  usleep(2500 * 1000);
  EXPECT_DROPPED(kServer, 8080);
}

TEST_F(FirewallTest, AddingAgainKeepsTheLongerTtl) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  Allow(kServer, 8080, 1);
  Allow(kServer, 8080, 60);  // extends: replaced atomically
  Allow(kServer, 8080, 1);   // does not shorten
  Allow(kServer, 9090, 1);   // control: expires
  usleep(2500 * 1000);
  EXPECT_CONNECTED(kServer, 8080);
  EXPECT_DROPPED(kServer, 9090);
}

TEST_F(FirewallTest, RefusedAddressesAreRefusedAndDropped) {
  EXPECT_CONNECTED(kPrivate, 8080);  // control
  EXPECT_CONNECTED(kMetadata, 80);   // control
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  for (const char* address : {kPrivate, kMetadata, "::ffff:10.1.2.3", "127.0.0.1", "fe80::1"}) {
    const absl::Status status = AddAllowed(netlink_.get(), Ip(address), 8080, 60);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << address << ": " << status;
  }
  EXPECT_DROPPED(kPrivate, 8080);
  EXPECT_DROPPED(kMetadata, 80);
}

TEST_F(FirewallTest, HostAddressIsDroppedEvenWhenInTheSet) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {Ip(kGateway)}));
  // The address policy does not know the plan's host addresses, so this is accepted...
  Allow(kGateway, 8080);
  Allow(kServer, 8080);  // control, added the same way
  // ...but `jump refused` comes before the set lookups.
  EXPECT_DROPPED(kGateway, 8080);
  EXPECT_CONNECTED(kServer, 8080);
}

TEST_F(FirewallTest, ResolverAndLoopbackStayReachable) {
  Install(FirewallPlan::Egress(Ip(kDnsServer), {}));
  EXPECT_CONNECTED(kDnsServer, 53);
  EXPECT_DROPPED(kDnsServer, 54);  // only port 53
  EXPECT_EQ(testing::SendUdp(sandbox_->fd(), kDnsServer, 53), 0);
  EXPECT_EQ(testing::SendUdp(sandbox_->fd(), kDnsServer, 5353), EPERM);
  EXPECT_CONNECTED("127.0.0.1", 7000);
}

TEST_F(FirewallTest, UdpFollowsTheSet) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  EXPECT_EQ(testing::SendUdp(sandbox_->fd(), kServer, 5353), EPERM);
  EXPECT_FALSE(testing::ReceivedUdp(udp_server_.get()));
  Allow(kServer, 5353);
  EXPECT_EQ(testing::SendUdp(sandbox_->fd(), kServer, 5353), 0);
  EXPECT_TRUE(testing::ReceivedUdp(udp_server_.get()));
}

TEST_F(FirewallTest, Ipv6WorksThroughTheFilterFromAColdNeighborCache) {
  // No IPv6 packet has left the sandbox yet, so reaching the gateway needs neighbor
  // discovery through the filter.
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  EXPECT_DROPPED(kServer6, 8080);
  Allow(kServer6, 8080);
  EXPECT_CONNECTED(kServer6, 8080);
}

TEST_F(FirewallTest, FullModeReachesPublicButNotRefusedOrHost) {
  Install(FirewallPlan::Full(std::nullopt, {Ip(kGateway)}));
  EXPECT_CONNECTED(kServer, 8080);
  EXPECT_CONNECTED(kServer, 9090);
  EXPECT_CONNECTED(kServer6, 8080);
  EXPECT_DROPPED(kPrivate, 8080);
  EXPECT_DROPPED(kMetadata, 80);
  EXPECT_DROPPED(kGateway, 8080);
  EXPECT_CONNECTED("127.0.0.1", 7000);
  // Full mode has no sets.
  const absl::Status status = AddAllowed(netlink_.get(), Ip(kServer), 8080, 60);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
}

TEST_F(FirewallTest, ReinstallReplacesTheTable) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  Allow(kServer, 8080);
  EXPECT_CONNECTED(kServer, 8080);
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {}));
  EXPECT_DROPPED(kServer, 8080);  // the old set went with the old table
  Install(FirewallPlan::Full(std::nullopt, {}));
  EXPECT_CONNECTED(kServer, 9090);
}

TEST_F(FirewallTest, AddAllowedWithoutTheTableSaysSo) {
  const absl::Status status = AddAllowed(netlink_.get(), Ip(kServer), 8080, 60);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "allowed4")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "ENOENT")) << status;
}

TEST_F(FirewallTest, NftListShowsTheTable) {
  Install(FirewallPlan::Egress(Ip(kLoopbackResolver), {Ip(kGateway)}));
  Allow(kServer, 8080);
  // Inspection only: the ruleset was programmed over netlink, never with nft.
  absl::StatusOr<std::string> listing = sandbox_->Run({"nft", "list", "ruleset"});
  ASSERT_TRUE(listing.ok()) << listing.status();
  for (const char* want :
       {"table inet zygo", "set allowed4", "type ipv4_addr . inet_service", "flags timeout",
        "set allowed6", "type ipv6_addr . inet_service", "chain refused", "chain output",
        "type filter hook output priority filter; policy drop;", "jump refused",
        "198.51.100.10 . 8080", "ip daddr 169.254.0.0/16 drop", "ip6 daddr fc00::/7 drop"}) {
    EXPECT_TRUE(absl::StrContains(*listing, want)) << "missing \"" << want << "\" in\n" << *listing;
  }
}

}  // namespace
}  // namespace zygo::net
