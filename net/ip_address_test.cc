#include "net/ip_address.h"

#include <arpa/inet.h>

#include "gtest/gtest.h"

namespace zygo::net {
namespace {

TEST(IpAddressTest, ParsesAndPrintsCanonicalText) {
  struct Case {
    const char* text;
    int family;
    const char* canonical;
  };
  const Case cases[] = {
      {"192.0.2.1", AF_INET, "192.0.2.1"},
      {"0.0.0.0", AF_INET, "0.0.0.0"},
      {"255.255.255.255", AF_INET, "255.255.255.255"},
      {"2001:DB8::1", AF_INET6, "2001:db8::1"},
      {"2001:db8:0:0:0:0:0:1", AF_INET6, "2001:db8::1"},
      {"::", AF_INET6, "::"},
      {"::ffff:192.0.2.1", AF_INET6, "::ffff:192.0.2.1"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<IpAddress> address = IpAddress::Parse(c.text);
    ASSERT_TRUE(address.ok()) << c.text << ": " << address.status();
    EXPECT_EQ(address->family(), c.family) << c.text;
    EXPECT_EQ(address->ToString(), c.canonical) << c.text;
  }
}

TEST(IpAddressTest, RefusesNonNumericAndLooseForms) {
  for (const char* text :
       {"", "example.com", "127.1", "0x7f.0.0.1", "010.0.0.1", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4.5",
        "256.0.0.1", "[2001:db8::1]", "fe80::1%eth0", "2001:db8::g", "1.2.3.4/8"}) {
    EXPECT_FALSE(IpAddress::Parse(text).ok()) << text;
  }
  EXPECT_FALSE(IpAddress::Parse(absl::string_view("1.2.3.4\0", 8)).ok());
}

TEST(IpAddressTest, ConvertsFromKernelStructs) {
  in_addr v4;
  ASSERT_EQ(inet_pton(AF_INET, "198.51.100.7", &v4), 1);
  EXPECT_EQ(IpAddress::V4(v4).ToString(), "198.51.100.7");
  EXPECT_EQ(IpAddress::V4(v4).v4().s_addr, v4.s_addr);
  in6_addr v6;
  ASSERT_EQ(inet_pton(AF_INET6, "2001:db8::7", &v6), 1);
  EXPECT_EQ(IpAddress::V6(v6).ToString(), "2001:db8::7");
  EXPECT_EQ(IpAddress::V6(v6), IpAddress::Parse("2001:db8::7").value());
  EXPECT_NE(IpAddress::V6(v6), IpAddress::V4(v4));
}

TEST(IpAddressTest, FromBytesChecksTheWidth) {
  const uint8_t four[4] = {192, 0, 2, 1};
  EXPECT_EQ(IpAddress::FromBytes(AF_INET, four).value().ToString(), "192.0.2.1");
  EXPECT_FALSE(IpAddress::FromBytes(AF_INET6, four).ok());
  EXPECT_FALSE(IpAddress::FromBytes(AF_UNIX, four).ok());
}

TEST(IpAddressTest, UnwrapsOnlyIpv4Mapped) {
  EXPECT_EQ(IpAddress::Parse("::ffff:10.1.2.3").value().MappedV4().value().ToString(), "10.1.2.3");
  EXPECT_FALSE(IpAddress::Parse("::10.1.2.3").value().MappedV4().has_value());  // compatible
  EXPECT_FALSE(IpAddress::Parse("64:ff9b::10.1.2.3").value().MappedV4().has_value());
  EXPECT_FALSE(IpAddress::Parse("10.1.2.3").value().MappedV4().has_value());
}

TEST(IpPrefixTest, ParsesChecksAndMatches) {
  const IpPrefix ten = IpPrefix::Parse("10.0.0.0/8").value();
  EXPECT_EQ(ten.ToString(), "10.0.0.0/8");
  EXPECT_TRUE(ten.Contains(IpAddress::Parse("10.255.0.1").value()));
  EXPECT_FALSE(ten.Contains(IpAddress::Parse("11.0.0.1").value()));
  EXPECT_FALSE(ten.Contains(IpAddress::Parse("::ffff:10.0.0.1").value()));  // other family

  const IpPrefix cgnat = IpPrefix::Parse("100.64.0.0/10").value();
  EXPECT_TRUE(cgnat.Contains(IpAddress::Parse("100.127.255.255").value()));
  EXPECT_FALSE(cgnat.Contains(IpAddress::Parse("100.128.0.0").value()));
  EXPECT_EQ(cgnat.Mask()[1], 0xc0);

  const IpPrefix ula = IpPrefix::Parse("fc00::/7").value();
  EXPECT_TRUE(ula.Contains(IpAddress::Parse("fdff::1").value()));
  EXPECT_FALSE(ula.Contains(IpAddress::Parse("fe00::1").value()));

  EXPECT_EQ(IpPrefix::Parse("192.0.2.1").value().length(), 32);
  EXPECT_EQ(IpPrefix::Parse("2001:db8::1").value().length(), 128);
  EXPECT_TRUE(IpPrefix::Parse("0.0.0.0/0").value().Contains(IpAddress::Parse("8.8.8.8").value()));

  for (const char* bad : {"10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1",
                          "10.0.0.0/8x", "x/8", "10.0.0.0/0008"}) {
    EXPECT_FALSE(IpPrefix::Parse(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace zygo::net
