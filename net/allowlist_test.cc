#include "net/allowlist.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::net {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ParseAllowEntryTest, AcceptsAndNormalizes) {
  struct Case {
    const char* text;
    const char* pattern;
    uint16_t port;
  };
  const Case cases[] = {
      {"api.example.com:443", "api.example.com", 443},
      {"API.Example.COM:443", "api.example.com", 443},
      {"api.example.com.:443", "api.example.com", 443},
      {"*.cdn.example.com:443", "*.cdn.example.com", 443},
      {"*.CDN.example.com.:8443", "*.cdn.example.com", 8443},
      {"localhost:1", "localhost", 1},
      {"a:65535", "a", 65535},
      {"xn--bcher-kva.example:443", "xn--bcher-kva.example", 443},
      {"_dmarc.example.com:53", "_dmarc.example.com", 53},
      {"1password.com:443", "1password.com", 443},
      {"host-1.example.com:80", "host-1.example.com", 80},
      {"example.com:0443", "example.com", 443},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AllowEntry> entry = ParseAllowEntry(c.text);
    ASSERT_TRUE(entry.ok()) << c.text << ": " << entry.status();
    EXPECT_EQ(entry->pattern, c.pattern) << c.text;
    EXPECT_EQ(entry->port, c.port) << c.text;
  }
  EXPECT_TRUE(ParseAllowEntry("*.cdn.example.com:443")->is_wildcard());
  EXPECT_FALSE(ParseAllowEntry("api.example.com:443")->is_wildcard());
  EXPECT_EQ(ParseAllowEntry("API.example.com.:443")->ToString(), "api.example.com:443");
}

TEST(ParseAllowEntryTest, RefusesWithAReason) {
  struct Case {
    std::string text;
    const char* reason;  // a fragment of the message
  };
  const std::vector<Case> cases = {
      {"", "needs a port"},
      {"api.example.com", "needs a port"},
      {"api.example.com:", "port"},
      {"api.example.com:0", "port"},
      {"api.example.com:65536", "port"},
      {"api.example.com:-1", "port"},
      {"api.example.com:+443", "port"},
      {"api.example.com:443x", "port"},
      {"api.example.com:https", "port"},
      {":443", "empty"},
      {"192.0.2.1:443", "IP addresses are refused"},
      {"10.0.0.1:443", "IP addresses are refused"},
      {"[2001:db8::1]:443", "IP addresses are refused"},
      {"2001:db8::1:443", "IP addresses are refused"},
      {"127.1:80", "IP addresses are refused"},
      {"1.2.3.4.:80", "IP addresses are refused"},
      {"example.123:80", "IP addresses are refused"},
      {"*:443", "'*'"},
      {"*.com:443", "at least two labels"},
      {"*.com.:443", "at least two labels"},
      {"api.*.example.com:443", "'*'"},
      {"*api.example.com:443", "'*'"},
      {"*.*.example.com:443", "'*'"},
      {"**.example.com:443", "'*'"},
      {"api..example.com:443", "empty label"},
      {".example.com:443", "empty label"},
      {"example.com..:443", "empty label"},
      {"-api.example.com:443", "'-'"},
      {"api-.example.com:443", "'-'"},
      {"api example.com:443", "character"},
      {"api/example.com:443", "character"},
      {"b\xc3\xbc"
       "cher.example:443",
       "punycode"},
      {std::string(64, 'a') + ".com:443", "longer than 63"},
      {std::string(250, 'a').replace(60, 1, ".").replace(120, 1, ".").replace(180, 1, ".") +
           ".com:443",
       "longer than 253"},
      {std::string("api.example.com\0:443", 20), "character"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AllowEntry> entry = ParseAllowEntry(c.text);
    ASSERT_FALSE(entry.ok()) << c.text << " parsed as " << entry->ToString();
    EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_TRUE(absl::StrContains(entry.status().message(), c.reason))
        << c.text << ": " << entry.status();
  }
}

TEST(AllowlistTest, ParseNamesTheBadEntry) {
  const std::vector<std::string> entries = {"api.example.com:443", "192.0.2.1:443"};
  absl::StatusOr<Allowlist> list = Allowlist::Parse(entries);
  ASSERT_FALSE(list.ok());
  EXPECT_TRUE(absl::StrContains(list.status().message(), "allow[1]")) << list.status();
  EXPECT_TRUE(absl::StrContains(list.status().message(), "192.0.2.1:443")) << list.status();
}

TEST(AllowlistTest, EmptyListAllowsNothing) {
  const Allowlist list;
  EXPECT_TRUE(list.empty());
  EXPECT_THAT(list.PortsFor("example.com"), IsEmpty());
  EXPECT_FALSE(list.Allows("example.com"));
}

TEST(AllowlistTest, PortsForMatchesByWholeLabels) {
  const std::vector<std::string> entries = {
      "api.example.com:443",       "*.cdn.example.com:443", "*.cdn.example.com:8443",
      "API.example.com:8080",      "example.org:80",        "*.example.org:443",
      "xn--bcher-kva.example:443", "api.example.com:443",
  };
  const Allowlist list = Allowlist::Parse(entries).value();
  struct Case {
    const char* name;
    std::vector<uint16_t> ports;
  };
  const std::vector<Case> cases = {
      // Exact names, any case, with or without the root dot; duplicates merged, sorted.
      {"api.example.com", {443, 8080}},
      {"API.EXAMPLE.COM", {443, 8080}},
      {"api.example.com.", {443, 8080}},
      {"Api.Example.Com.", {443, 8080}},
      // Exact entries do not cover their parent, children or siblings.
      {"example.com", {}},
      {"www.api.example.com", {}},
      {"web.example.com", {}},
      // Wildcards cover one or more labels below, never the name itself.
      {"a.cdn.example.com", {443, 8443}},
      {"a.b.c.cdn.example.com", {443, 8443}},
      {"A.CDN.Example.COM.", {443, 8443}},
      {"cdn.example.com", {}},
      {"cdn.example.com.", {}},
      // No partial-label matches.
      {"evilcdn.example.com", {}},
      {"a.evilcdn.example.com", {}},
      {"evilexample.com", {}},
      {"api.example.com.evil.net", {}},
      {"apiexample.com", {}},
      {"xapi.example.com", {}},
      {"cdn.example.com.evil", {}},
      // An exact entry and a wildcard on the same name combine.
      {"example.org", {80}},
      {"www.example.org", {443}},
      {"deep.www.example.org", {443}},
      // Punycode matches as given; the Unicode form is not converted.
      {"xn--bcher-kva.example", {443}},
      {"b\xc3\xbc"
       "cher.example",
       {}},
      // Malformed names match nothing, even below a wildcard.
      {"", {}},
      {".", {}},
      {"api.example.com..", {}},
      {"..cdn.example.com", {}},
      {".cdn.example.com", {}},
      {"a b.cdn.example.com", {}},
      {"a\x00.cdn.example.com", {}},
      {"*.cdn.example.com", {}},
      {"a..cdn.example.com", {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(list.PortsFor(c.name), c.ports) << "\"" << c.name << "\"";
    EXPECT_EQ(list.Allows(c.name), !c.ports.empty()) << c.name;
  }
  // An embedded NUL must not cut the name short.
  EXPECT_THAT(list.PortsFor(absl::string_view("api.example.com\0.evil", 21)), IsEmpty());
  EXPECT_THAT(list.PortsFor(absl::string_view("x\0.cdn.example.com", 18)), IsEmpty());
  EXPECT_THAT(list.PortsFor("api.example.com"), ElementsAre(443, 8080));
}

TEST(NormalizeHostNameTest, LowercasesAndDropsTheRootDot) {
  EXPECT_EQ(NormalizeHostName("WWW.Example.COM.").value(), "www.example.com");
  EXPECT_EQ(NormalizeHostName("a").value(), "a");
  EXPECT_FALSE(NormalizeHostName("").has_value());
  EXPECT_FALSE(NormalizeHostName("a..b").has_value());
  EXPECT_FALSE(NormalizeHostName(std::string(254, 'a')).has_value());
}

}  // namespace
}  // namespace zygo::net
