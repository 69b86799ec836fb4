#include "security_tests/egress_attempts.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zygo::testing {

std::vector<std::string> EgressFlags() {
  return {"--net", "egress", "--allow", "allowed.test:8080", "--allow", "rebind.test:8080"};
}

std::vector<std::string> EgressTargets() {
  return {"allowed.test:8080",      "allowed.test:8081",  "other.test:8080",
          "rebind.test:8080",       "198.51.100.20:8080", "10.0.0.5:8080",
          "169.254.169.254:80",     "dns@198.51.100.53",  "udp@allowed.test:8080",
          "udp@198.51.100.20:8080", "udp@10.0.0.5:8080",  "udp@169.254.169.254:8080",
          "ping@198.51.100.20",     "raw@198.51.100.20"};
}

EgressBaseline TakeEgressBaseline(FakeInternet& internet) {
  return {internet.dns().QueriesFor("other.test"), internet.other_dns().Queries()};
}

void ExpectOnlyAllowlistedEgress(std::map<std::string, std::string>& v, FakeInternet& internet,
                                 const EgressBaseline& before) {
  // The control: an allowed name resolves and connects.
  EXPECT_EQ(v["allowed.test:8080"], "connected");
  EXPECT_GE(internet.dns().QueriesFor("allowed.test"), 1);
  // The same address on a port off the list.
  EXPECT_EQ(v["allowed.test:8081"], "timeout");
  // A name off the list: NXDOMAIN, and the upstream never heard of it.
  EXPECT_EQ(v["other.test:8080"], "nxdomain");
  EXPECT_EQ(internet.dns().QueriesFor("other.test"), before.other_test_queries);
  // An allowed name answering a private address: no address comes back.
  EXPECT_EQ(v["rebind.test:8080"], "noaddr");
  // Raw addresses: public, LAN, metadata.
  EXPECT_EQ(v["198.51.100.20:8080"], "timeout");
  EXPECT_EQ(v["10.0.0.5:8080"], "timeout");
  EXPECT_EQ(v["169.254.169.254:80"], "timeout");
  // DNS straight to another server.
  EXPECT_EQ(v["dns@198.51.100.53"], "error 1");  // EPERM from the local drop
  EXPECT_EQ(internet.other_dns().Queries(), before.other_dns_queries);
  // UDP: the allowed name on its port arrives (the control); addresses nothing admitted
  // are dropped before they leave.
  EXPECT_EQ(v["udp@allowed.test:8080"], "sent");
  EXPECT_TRUE(internet.UdpArrived(kAllowedAddress));
  for (const char* address : {kOtherAddress, kLanAddress, kMetadataAddress}) {
    EXPECT_EQ(v[absl::StrCat("udp@", address, ":8080")], "error 1") << address;  // EPERM
    EXPECT_FALSE(internet.UdpArrived(address)) << address;
  }
  // ICMP: no CAP_NET_RAW for a raw socket, and ping sockets are off in the sandbox's netns.
  EXPECT_EQ(v["ping@198.51.100.20"], "error 13");  // EACCES
  EXPECT_EQ(v["raw@198.51.100.20"], "error 1");    // EPERM
  EXPECT_FALSE(internet.IcmpEchoArrived(kOtherAddress));
}

}  // namespace zygo::testing
