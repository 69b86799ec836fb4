// The refused-address table and its lookups.
#include "net/address_policy.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace zygo::net {
namespace {

struct V4Range {
  const char* prefix;
  const char* reason;
};

// Ordered most specific first where ranges overlap (255.255.255.255 lies inside 240/4).
constexpr V4Range kV4Ranges[] = {
    {"0.0.0.0/8", "\"this network\" (RFC 791)"},
    {"10.0.0.0/8", "private (RFC 1918)"},
    {"100.64.0.0/10", "shared address space for carrier-grade NAT (RFC 6598)"},
    {"127.0.0.0/8", "loopback"},
    {"169.254.0.0/16", "link-local, with the cloud metadata address 169.254.169.254"},
    {"172.16.0.0/12", "private (RFC 1918)"},
    {"192.168.0.0/16", "private (RFC 1918)"},
    {"224.0.0.0/4", "multicast"},
    {"255.255.255.255/32", "limited broadcast"},
    {"240.0.0.0/4", "reserved (RFC 1112)"},
};

// An IPv6 form that carries an IPv4 address at a fixed bit offset.
struct Embedding {
  uint8_t head[12];   // the leading bytes of the form
  int head_bytes;     // how many of `head` are fixed
  int v4_offset;      // byte offset of the embedded IPv4 address
  int length_offset;  // prefix length of the form when it embeds a /0
  const char* name;
};

constexpr Embedding kEmbeddings[] = {
    // ::ffff:a.b.c.d; an AF_INET6 socket sends these as IPv4, so the IPv4 rules cover them
    // on the wire, but a resolver answer must still be refused.
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12, 12, 96, "IPv4-mapped form"},
    {{0x00, 0x64, 0xff, 0x9b}, 4, 12, 96, "NAT64 (RFC 6052) form"},
    {{0x20, 0x02, 0, 0}, 2, 2, 16, "6to4 (RFC 3056) form"},
};

IpPrefix MustParse(const char* text) { return IpPrefix::Parse(text).value(); }

IpPrefix Embed(const Embedding& form, const IpPrefix& v4) {
  uint8_t bytes[16] = {};
  std::memcpy(bytes, form.head, form.head_bytes);
  std::memcpy(bytes + form.v4_offset, v4.network().bytes().data(), 4);
  IpAddress network = IpAddress::FromBytes(AF_INET6, bytes).value();
  return IpPrefix::Create(network, form.length_offset + v4.length()).value();
}

std::vector<RefusedRange> BuildTable() {
  std::vector<RefusedRange> table;
  for (const V4Range& range : kV4Ranges) table.push_back({MustParse(range.prefix), range.reason});

  table.push_back({MustParse("::/128"), "unspecified"});
  table.push_back({MustParse("::1/128"), "loopback"});
  table.push_back(
      {MustParse("::/96"), "IPv4-compatible (deprecated by RFC 4291), refused whatever it embeds"});
  for (const Embedding& form : kEmbeddings) {
    for (const V4Range& range : kV4Ranges) {
      const IpPrefix v4 = MustParse(range.prefix);
      table.push_back(
          {Embed(form, v4), absl::StrCat(form.name, " of ", v4.ToString(), ", ", range.reason)});
    }
  }
  table.push_back({MustParse("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)"});
  table.push_back({MustParse("2001::/32"),
                   "Teredo (RFC 4380), which embeds an IPv4 address that cannot be vetted"});
  table.push_back({MustParse("fc00::/7"), "unique local (RFC 4193)"});
  table.push_back({MustParse("fe80::/10"), "link-local"});
  table.push_back({MustParse("fec0::/10"), "site-local (deprecated by RFC 3879)"});
  table.push_back({MustParse("ff00::/8"), "multicast"});
  return table;
}

}  // namespace

std::string RefusedRange::ToString() const { return absl::StrCat(prefix.ToString(), ", ", reason); }

const std::vector<RefusedRange>& RefusedRanges() {
  // Built once and never destroyed (no exit-time destructor); immutable after that.
  static const std::vector<RefusedRange>* const table = new std::vector<RefusedRange>(BuildTable());
  return *table;
}

const RefusedRange* FindRefusedRange(const IpAddress& address) {
  for (const RefusedRange& range : RefusedRanges()) {
    if (range.prefix.Contains(address)) return &range;
  }
  return nullptr;
}

bool IsRefusedAddress(const in_addr& address) {
  return FindRefusedRange(IpAddress::V4(address)) != nullptr;
}

bool IsRefusedAddress(const in6_addr& address) {
  return FindRefusedRange(IpAddress::V6(address)) != nullptr;
}

bool IsRefusedAddress(const IpAddress& address) { return FindRefusedRange(address) != nullptr; }

absl::StatusOr<bool> IsRefusedAddress(absl::string_view address) {
  absl::StatusOr<IpAddress> parsed = IpAddress::Parse(address);
  if (!parsed.ok()) return parsed.status();
  return IsRefusedAddress(*parsed);
}

absl::Status CheckPublicAddress(const IpAddress& address) {
  const RefusedRange* range = FindRefusedRange(address);
  if (range == nullptr) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(address.ToString(), " is in ", range->ToString(),
                                                  ": a sandbox may not reach it"));
}

}  // namespace zygo::net
