#include "net/address_policy.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace zygo::net {
namespace {

struct Case {
  const char* address;
  const char* range;  // the matching range, or nullptr for a public address
};

void ExpectTable(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const IpAddress address = IpAddress::Parse(c.address).value();
    const RefusedRange* range = FindRefusedRange(address);
    if (c.range == nullptr) {
      EXPECT_EQ(range, nullptr) << c.address << " matched " << range->ToString();
      EXPECT_FALSE(IsRefusedAddress(address)) << c.address;
    } else {
      ASSERT_NE(range, nullptr) << c.address << " should be in " << c.range;
      EXPECT_EQ(range->prefix.ToString(), c.range) << c.address;
      EXPECT_TRUE(IsRefusedAddress(address)) << c.address;
    }
  }
}

TEST(AddressPolicyTest, Ipv4Ranges) {
  ExpectTable({
      {"0.0.0.0", "0.0.0.0/8"},
      {"0.255.255.255", "0.0.0.0/8"},
      {"1.0.0.0", nullptr},
      {"9.255.255.255", nullptr},
      {"10.0.0.0", "10.0.0.0/8"},
      {"10.255.255.255", "10.0.0.0/8"},
      {"11.0.0.0", nullptr},
      {"100.63.255.255", nullptr},
      {"100.64.0.0", "100.64.0.0/10"},
      {"100.127.255.255", "100.64.0.0/10"},
      {"100.128.0.0", nullptr},
      {"126.255.255.255", nullptr},
      {"127.0.0.1", "127.0.0.0/8"},
      {"127.255.255.254", "127.0.0.0/8"},
      {"128.0.0.0", nullptr},
      {"169.253.255.255", nullptr},
      {"169.254.169.254", "169.254.0.0/16"},
      {"169.255.0.0", nullptr},
      {"172.15.255.255", nullptr},
      {"172.16.0.0", "172.16.0.0/12"},
      {"172.31.255.255", "172.16.0.0/12"},
      {"172.32.0.0", nullptr},
      {"192.167.255.255", nullptr},
      {"192.168.1.1", "192.168.0.0/16"},
      {"192.169.0.0", nullptr},
      {"223.255.255.255", nullptr},
      {"224.0.0.1", "224.0.0.0/4"},
      {"239.255.255.255", "224.0.0.0/4"},
      {"240.0.0.1", "240.0.0.0/4"},
      {"255.255.255.254", "240.0.0.0/4"},
      {"255.255.255.255", "255.255.255.255/32"},
      // The test internet of the firewall tests, and ordinary public addresses.
      {"198.51.100.10", nullptr},
      {"203.0.113.1", nullptr},
      {"8.8.8.8", nullptr},
      {"1.1.1.1", nullptr},
  });
}

TEST(AddressPolicyTest, Ipv6Ranges) {
  ExpectTable({
      {"::", "::/128"},
      {"::1", "::1/128"},
      {"::2", "::/96"},
      {"fc00::1", "fc00::/7"},
      {"fdff:ffff::1", "fc00::/7"},
      {"fe00::1", nullptr},
      {"fe80::1", "fe80::/10"},
      {"febf:ffff::1", "fe80::/10"},
      {"fec0::1", "fec0::/10"},
      {"ff02::1", "ff00::/8"},
      {"ff05::1:3", "ff00::/8"},
      {"2001::1", "2001::/32"},
      {"2001:db8::1", nullptr},
      {"2606:4700::1111", nullptr},
      {"64:ff9b:1::1", "64:ff9b:1::/48"},
  });
}

TEST(AddressPolicyTest, EmbeddedIpv4FormsFollowTheIpv4Ranges) {
  ExpectTable({
      // IPv4-mapped.
      {"::ffff:10.1.2.3", "::ffff:10.0.0.0/104"},
      {"::ffff:127.0.0.1", "::ffff:127.0.0.0/104"},
      {"::ffff:169.254.169.254", "::ffff:169.254.0.0/112"},
      {"::ffff:172.16.0.1", "::ffff:172.16.0.0/108"},
      {"::ffff:192.168.0.1", "::ffff:192.168.0.0/112"},
      {"::ffff:100.64.0.1", "::ffff:100.64.0.0/106"},
      {"::ffff:0.0.0.0", "::ffff:0.0.0.0/104"},
      {"::ffff:224.0.0.1", "::ffff:224.0.0.0/100"},
      {"::ffff:255.255.255.255", "::ffff:255.255.255.255/128"},
      {"::ffff:8.8.8.8", nullptr},
      {"::ffff:198.51.100.10", nullptr},
      // IPv4-compatible (deprecated): refused whatever it embeds.
      {"::10.1.2.3", "::/96"},
      {"::169.254.169.254", "::/96"},
      {"::8.8.8.8", "::/96"},
      // NAT64 well-known prefix: follows the embedded address.
      {"64:ff9b::10.1.2.3", "64:ff9b::a00:0/104"},
      {"64:ff9b::169.254.169.254", "64:ff9b::a9fe:0/112"},
      {"64:ff9b::127.0.0.1", "64:ff9b::7f00:0/104"},
      {"64:ff9b::8.8.8.8", nullptr},
      // 6to4.
      {"2002:a01:203::1", "2002:a00::/24"},
      {"2002:a9fe:a9fe::1", "2002:a9fe::/32"},
      {"2002:c0a8:101::1", "2002:c0a8::/32"},
      {"2002:808:808::1", nullptr},
  });
}

TEST(AddressPolicyTest, KernelStructAndTextOverloadsAgree) {
  in_addr v4;
  ASSERT_EQ(inet_pton(AF_INET, "169.254.169.254", &v4), 1);
  EXPECT_TRUE(IsRefusedAddress(v4));
  ASSERT_EQ(inet_pton(AF_INET, "198.51.100.10", &v4), 1);
  EXPECT_FALSE(IsRefusedAddress(v4));
  in6_addr v6;
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:192.168.1.1", &v6), 1);
  EXPECT_TRUE(IsRefusedAddress(v6));
  ASSERT_EQ(inet_pton(AF_INET6, "2001:db8::1", &v6), 1);
  EXPECT_FALSE(IsRefusedAddress(v6));

  EXPECT_EQ(IsRefusedAddress(absl::string_view("10.0.0.1")).value(), true);
  EXPECT_EQ(IsRefusedAddress(absl::string_view("203.0.113.9")).value(), false);
  EXPECT_FALSE(IsRefusedAddress(absl::string_view("metadata.google.internal")).ok());
}

TEST(AddressPolicyTest, MessagesNameTheRange) {
  const absl::Status status = CheckPublicAddress(IpAddress::Parse("169.254.169.254").value());
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(status.message(), "169.254.0.0/16")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "metadata")) << status;

  const absl::Status mapped = CheckPublicAddress(IpAddress::Parse("::ffff:10.0.0.1").value());
  EXPECT_TRUE(absl::StrContains(mapped.message(), "IPv4-mapped form of 10.0.0.0/8")) << mapped;

  EXPECT_TRUE(CheckPublicAddress(IpAddress::Parse("198.51.100.10").value()).ok());
}

TEST(AddressPolicyTest, TableIsOrderedIpv4FirstAndWellFormed) {
  const std::vector<RefusedRange>& table = RefusedRanges();
  ASSERT_FALSE(table.empty());
  bool seen_v6 = false;
  for (const RefusedRange& range : table) {
    if (range.prefix.family() == AF_INET6) seen_v6 = true;
    EXPECT_FALSE(seen_v6 && range.prefix.family() == AF_INET) << range.ToString();
    EXPECT_FALSE(range.reason.empty()) << range.prefix.ToString();
  }
  // 10 IPv4 ranges; ::, ::1, ::/96; 3 embeddings of each IPv4 range; 6 more IPv6 ranges.
  EXPECT_EQ(table.size(), 10u + 3u + 30u + 6u);
}

}  // namespace
}  // namespace zygo::net
