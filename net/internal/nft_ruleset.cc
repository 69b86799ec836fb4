// Builds the sandbox firewall as nftables expressions, from a FirewallPlan.
#include "net/internal/nft_ruleset.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "net/address_policy.h"

namespace zygo::net::internal {
namespace {

// nft's datatype ids (src/datatype.h in nftables) and how it packs a concatenation's type:
// each field shifts the previous ones left by TYPE_BITS. Only `nft list` reads these.
constexpr uint32_t kTypeIpv4Addr = 7;
constexpr uint32_t kTypeIpv6Addr = 8;
constexpr uint32_t kTypeInetService = 13;
constexpr uint32_t kTypeBits = 6;

// Every network namespace's loopback device has ifindex 1 (LOOPBACK_IFINDEX, Linux 3.8+),
// and a sandbox without CAP_NET_ADMIN cannot rename or add devices, so the index is safer
// to match than the name.
constexpr uint32_t kLoopbackIfindex = 1;
constexpr uint8_t kIcmpv6RouterSolicit = 133;
constexpr uint8_t kIcmpv6NeighborAdvert = 136;
constexpr uint8_t kNdHopLimit = 255;  // RFC 4861 7.1.1: ND packets always carry 255
constexpr uint16_t kDnsPort = 53;

constexpr uint32_t kV4DaddrOffset = 16;  // struct iphdr
constexpr uint32_t kV6DaddrOffset = 24;  // struct ipv6hdr
constexpr uint32_t kV6HopLimitOffset = 7;
constexpr uint32_t kDportOffset = 2;  // TCP and UDP alike

std::vector<uint8_t> U8(uint8_t value) { return {value}; }

std::vector<uint8_t> HostU32(uint32_t value) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

std::vector<uint8_t> Be16(uint16_t value) {
  return {static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value & 0xff)};
}

NftExpr Load(NftExprKind kind, uint32_t key) {
  NftExpr expr;
  expr.kind = kind;
  expr.key = key;
  expr.reg = NFT_REG_1;
  return expr;
}

NftExpr Payload(uint32_t base, uint32_t offset, uint32_t len, uint32_t reg = NFT_REG_1) {
  NftExpr expr;
  expr.kind = NftExprKind::kPayload;
  expr.base = base;
  expr.offset = offset;
  expr.len = len;
  expr.reg = reg;
  return expr;
}

NftExpr Cmp(uint32_t op, std::vector<uint8_t> data) {
  NftExpr expr;
  expr.kind = NftExprKind::kCmp;
  expr.key = op;
  expr.reg = NFT_REG_1;
  expr.data = std::move(data);
  return expr;
}

NftExpr Bitwise(std::vector<uint8_t> mask) {
  NftExpr expr;
  expr.kind = NftExprKind::kBitwise;
  expr.reg = NFT_REG_1;
  expr.len = static_cast<uint32_t>(mask.size());
  expr.data = std::move(mask);
  return expr;
}

NftExpr Counter() {
  NftExpr expr;
  expr.kind = NftExprKind::kCounter;
  return expr;
}

NftExpr Verdict(uint32_t code, std::string chain = "") {
  NftExpr expr;
  expr.kind = NftExprKind::kVerdict;
  expr.key = code;
  expr.name = std::move(chain);
  return expr;
}

using Exprs = std::vector<NftExpr>;

Exprs Family(bool v6) {
  return {Load(NftExprKind::kMeta, NFT_META_NFPROTO),
          Cmp(NFT_CMP_EQ, U8(v6 ? NFPROTO_IPV6 : NFPROTO_IPV4))};
}

Exprs L4proto(uint8_t proto) {
  return {Load(NftExprKind::kMeta, NFT_META_L4PROTO), Cmp(NFT_CMP_EQ, U8(proto))};
}

Exprs DaddrIn(const IpPrefix& prefix) {
  const bool v6 = prefix.family() == AF_INET6;
  const uint32_t width = v6 ? 16 : 4;
  Exprs exprs = Family(v6);
  exprs.push_back(Payload(NFT_PAYLOAD_NETWORK_HEADER, v6 ? kV6DaddrOffset : kV4DaddrOffset, width));
  if (prefix.length() < static_cast<int>(width * 8)) {
    const std::array<uint8_t, 16> mask = prefix.Mask();
    exprs.push_back(Bitwise(std::vector<uint8_t>(mask.begin(), mask.begin() + width)));
  }
  absl::Span<const uint8_t> network = prefix.network().bytes();
  exprs.push_back(Cmp(NFT_CMP_EQ, std::vector<uint8_t>(network.begin(), network.end())));
  return exprs;
}

Exprs Dport(uint16_t port) {
  return {Payload(NFT_PAYLOAD_TRANSPORT_HEADER, kDportOffset, 2), Cmp(NFT_CMP_EQ, Be16(port))};
}

const char* DaddrWord(int family) { return family == AF_INET6 ? "ip6 daddr" : "ip daddr"; }

// Appends `parts` in order, then the verdict, as one rule.
void AddRule(NftRuleset& ruleset, const char* chain, std::string text,
             std::initializer_list<Exprs> parts, NftExpr verdict) {
  NftRule rule{chain, std::move(text), {}};
  for (const Exprs& part : parts) rule.exprs.insert(rule.exprs.end(), part.begin(), part.end());
  rule.exprs.push_back(std::move(verdict));
  ruleset.rules.push_back(std::move(rule));
}

void AddRefusedChain(const FirewallPlan& plan, NftRuleset& ruleset) {
  ruleset.chains.push_back({kRefusedChain, false, 0, "chain refused"});
  for (const RefusedRange& range : RefusedRanges()) {
    AddRule(ruleset, kRefusedChain,
            absl::StrCat(DaddrWord(range.prefix.family()), " ", range.prefix.ToString(),
                         " drop  # ", range.reason),
            {DaddrIn(range.prefix)}, Verdict(NF_DROP));
  }
  for (const IpAddress& host : plan.host_addresses()) {
    const IpPrefix prefix = IpPrefix::Create(host, host.is_v4() ? 32 : 128).value();
    AddRule(ruleset, kRefusedChain,
            absl::StrCat(DaddrWord(host.family()), " ", host.ToString(),
                         " drop  # the host itself (pasta gateway)"),
            {DaddrIn(prefix)}, Verdict(NF_DROP));
  }
}

// The head of the output chain, the same in both modes.
void AddOutputHead(const FirewallPlan& plan, NftRuleset& ruleset) {
  AddRule(ruleset, kOutputChain, "oif \"lo\" accept",
          {{Load(NftExprKind::kMeta, NFT_META_OIF), Cmp(NFT_CMP_EQ, HostU32(kLoopbackIfindex))}},
          Verdict(NF_ACCEPT));
  const uint32_t state = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
  AddRule(ruleset, kOutputChain, "ct state established,related accept",
          {{Load(NftExprKind::kCt, NFT_CT_STATE), Bitwise(HostU32(state)),
            Cmp(NFT_CMP_NEQ, HostU32(0))}},
          Verdict(NF_ACCEPT));
  // Without neighbor discovery (to ff02::1:ff00:0/104 and fe80::/10, both refused below)
  // IPv6 cannot reach even the gateway. Hop limit 255 keeps these on the link (RFC 4861).
  AddRule(ruleset, kOutputChain,
          "icmpv6 type 133-136 ip6 hoplimit 255 accept  # router/neighbor discovery",
          {Family(true),
           L4proto(IPPROTO_ICMPV6),
           {Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1), Cmp(NFT_CMP_GTE, U8(kIcmpv6RouterSolicit)),
            Cmp(NFT_CMP_LTE, U8(kIcmpv6NeighborAdvert)),
            Payload(NFT_PAYLOAD_NETWORK_HEADER, kV6HopLimitOffset, 1),
            Cmp(NFT_CMP_EQ, U8(kNdHopLimit))}},
          Verdict(NF_ACCEPT));
  if (plan.resolver().has_value()) {
    const IpAddress& resolver = *plan.resolver();
    const IpPrefix prefix = IpPrefix::Create(resolver, resolver.is_v4() ? 32 : 128).value();
    for (const auto& [proto, name] : {std::pair<uint8_t, const char*>{IPPROTO_UDP, "udp"},
                                      std::pair<uint8_t, const char*>{IPPROTO_TCP, "tcp"}}) {
      AddRule(ruleset, kOutputChain,
              absl::StrCat(DaddrWord(resolver.family()), " ", resolver.ToString(), " ", name,
                           " dport 53 accept  # the resolver"),
              {DaddrIn(prefix), L4proto(proto), Dport(kDnsPort)}, Verdict(NF_ACCEPT));
    }
  }
  AddRule(ruleset, kOutputChain, "jump refused", {}, Verdict(NFT_JUMP, kRefusedChain));
}

void AddAllowedLookups(NftRuleset& ruleset) {
  for (const NftSet& set : ruleset.sets) {
    const bool v6 = set.name == kAllowed6Set;
    for (const auto& [proto, name] : {std::pair<uint8_t, const char*>{IPPROTO_TCP, "tcp"},
                                      std::pair<uint8_t, const char*>{IPPROTO_UDP, "udp"}}) {
      // Concatenation: each field starts at a fresh 32-bit register, the key is read from
      // NFT_REG32_00 on (nf_tables.h: "NFT_REG32_00 - NFT_REG32_15").
      NftExpr lookup;
      lookup.kind = NftExprKind::kLookup;
      lookup.reg = NFT_REG32_00;
      lookup.key = set.id;
      lookup.name = set.name;
      AddRule(ruleset, kOutputChain,
              absl::StrCat("meta l4proto ", name, " ", v6 ? "ip6" : "ip", " daddr . th dport @",
                           set.name, " accept"),
              {Family(v6),
               L4proto(proto),
               {Payload(NFT_PAYLOAD_NETWORK_HEADER, v6 ? kV6DaddrOffset : kV4DaddrOffset,
                        v6 ? 16 : 4, NFT_REG32_00),
                Payload(NFT_PAYLOAD_TRANSPORT_HEADER, kDportOffset, 2,
                        v6 ? NFT_REG32_04 : NFT_REG32_01),
                lookup}},
              Verdict(NF_ACCEPT));
    }
  }
}

}  // namespace

NftRuleset BuildRuleset(const FirewallPlan& plan) {
  NftRuleset ruleset;
  const bool egress = plan.mode() == FirewallMode::kEgress;
  if (egress) {
    ruleset.sets.push_back({kAllowed4Set, 1, (kTypeIpv4Addr << kTypeBits) | kTypeInetService, 8,
                            "type ipv4_addr . inet_service; flags timeout;"});
    ruleset.sets.push_back({kAllowed6Set, 2, (kTypeIpv6Addr << kTypeBits) | kTypeInetService, 20,
                            "type ipv6_addr . inet_service; flags timeout;"});
  }
  AddRefusedChain(plan, ruleset);
  ruleset.chains.push_back({kOutputChain, true, static_cast<uint32_t>(egress ? NF_DROP : NF_ACCEPT),
                            absl::StrCat("type filter hook output priority filter; policy ",
                                         egress ? "drop" : "accept", ";")});
  AddOutputHead(plan, ruleset);
  if (egress) {
    AddAllowedLookups(ruleset);
    // Same as the policy, but counted, so `nft list` shows what egress dropped.
    AddRule(ruleset, kOutputChain, "counter drop", {{Counter()}}, Verdict(NF_DROP));
  }
  return ruleset;
}

std::string RulesetText(const NftRuleset& ruleset) {
  std::string text = absl::StrCat("table inet ", kTableName, " {\n");
  for (const NftSet& set : ruleset.sets) {
    absl::StrAppend(&text, "\tset ", set.name, " { ", set.text, " }\n");
  }
  for (const NftChain& chain : ruleset.chains) {
    absl::StrAppend(&text, "\tchain ", chain.name, " {\n");
    if (chain.base) absl::StrAppend(&text, "\t\t", chain.text, "\n");
    for (const NftRule& rule : ruleset.rules) {
      if (rule.chain == chain.name) absl::StrAppend(&text, "\t\t", rule.text, "\n");
    }
    absl::StrAppend(&text, "\t}\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

NftElement AllowedElement(const IpAddress& address, uint16_t port) {
  NftElement element;
  element.set = address.is_v4() ? kAllowed4Set : kAllowed6Set;
  absl::Span<const uint8_t> bytes = address.bytes();
  element.key.assign(bytes.begin(), bytes.end());
  const std::vector<uint8_t> port_bytes = Be16(port);
  element.key.insert(element.key.end(), port_bytes.begin(), port_bytes.end());
  element.key.push_back(0);  // the port's register is 32 bits wide
  element.key.push_back(0);
  element.text = absl::StrCat(address.ToString(), " . ", port);
  return element;
}

}  // namespace zygo::net::internal
