#include "net/internal/nft_ruleset.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/address_policy.h"
#include "net/firewall_plan.h"
#include "net/ip_address.h"

namespace zygo::net::internal {
namespace {

using ::testing::ElementsAre;

IpAddress Ip(const char* text) { return IpAddress::Parse(text).value(); }

std::vector<std::string> ChainTexts(const NftRuleset& ruleset, const std::string& chain) {
  std::vector<std::string> texts;
  for (const NftRule& rule : ruleset.rules) {
    if (rule.chain == chain) texts.push_back(rule.text);
  }
  return texts;
}

TEST(NftRulesetTest, EgressOutputChainInOrder) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {Ip("203.0.113.1")}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  EXPECT_THAT(
      ChainTexts(ruleset, kOutputChain),
      ElementsAre("oif \"lo\" accept", "ct state established,related accept",
                  "icmpv6 type 133-136 ip6 hoplimit 255 accept  # router/neighbor discovery",
                  "ip daddr 127.0.0.53 udp dport 53 accept  # the resolver",
                  "ip daddr 127.0.0.53 tcp dport 53 accept  # the resolver", "jump refused",
                  "meta l4proto tcp ip daddr . th dport @allowed4 accept",
                  "meta l4proto udp ip daddr . th dport @allowed4 accept",
                  "meta l4proto tcp ip6 daddr . th dport @allowed6 accept",
                  "meta l4proto udp ip6 daddr . th dport @allowed6 accept", "counter drop"));
  ASSERT_EQ(ruleset.sets.size(), 2u);
  EXPECT_EQ(ruleset.sets[0].name, "allowed4");
  EXPECT_EQ(ruleset.sets[0].key_len, 8u);
  EXPECT_EQ(ruleset.sets[0].key_type, (7u << 6) | 13u);  // ipv4_addr . inet_service
  EXPECT_EQ(ruleset.sets[1].name, "allowed6");
  EXPECT_EQ(ruleset.sets[1].key_len, 20u);
  EXPECT_EQ(ruleset.sets[1].key_type, (8u << 6) | 13u);
  // The jump target is created before the chain that jumps to it.
  ASSERT_EQ(ruleset.chains.size(), 2u);
  EXPECT_EQ(ruleset.chains[0].name, "refused");
  EXPECT_FALSE(ruleset.chains[0].base);
  EXPECT_EQ(ruleset.chains[1].name, "output");
  EXPECT_TRUE(ruleset.chains[1].base);
  EXPECT_EQ(ruleset.chains[1].policy, static_cast<uint32_t>(NF_DROP));
}

TEST(NftRulesetTest, RefusedChainCoversTheTableThenHostAddresses) {
  const FirewallPlan plan =
      FirewallPlan::Egress(Ip("127.0.0.53"), {Ip("203.0.113.1"), Ip("2001:db8:1::1")}).value();
  const std::vector<std::string> refused = ChainTexts(BuildRuleset(plan), kRefusedChain);
  ASSERT_EQ(refused.size(), RefusedRanges().size() + 2);
  for (size_t i = 0; i < RefusedRanges().size(); ++i) {
    const std::string& prefix = RefusedRanges()[i].prefix.ToString();
    EXPECT_TRUE(absl::StrContains(refused[i], absl::StrCat(" ", prefix, " drop"))) << refused[i];
  }
  EXPECT_TRUE(absl::StartsWith(refused[refused.size() - 2], "ip daddr 203.0.113.1 drop"));
  EXPECT_TRUE(absl::StartsWith(refused.back(), "ip6 daddr 2001:db8:1::1 drop"));
  EXPECT_TRUE(absl::StartsWith(refused.front(), "ip daddr 0.0.0.0/8 drop"));
}

TEST(NftRulesetTest, FullModeAcceptsByPolicyAndHasNoSets) {
  const FirewallPlan plan = FirewallPlan::Full(std::nullopt, {Ip("203.0.113.1")}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  EXPECT_TRUE(ruleset.sets.empty());
  EXPECT_EQ(ruleset.chains[1].policy, static_cast<uint32_t>(NF_ACCEPT));
  EXPECT_THAT(ChainTexts(ruleset, kOutputChain),
              ElementsAre("oif \"lo\" accept", "ct state established,related accept",
                          "icmpv6 type 133-136 ip6 hoplimit 255 accept  # router/neighbor "
                          "discovery",
                          "jump refused"));
  const FirewallPlan with_dns = FirewallPlan::Full(Ip("203.0.113.1"), {Ip("203.0.113.1")}).value();
  EXPECT_EQ(ChainTexts(BuildRuleset(with_dns), kOutputChain)[3],
            "ip daddr 203.0.113.1 udp dport 53 accept  # the resolver");
}

TEST(NftRulesetTest, PrefixRuleChecksFamilyMasksAndCompares) {
  const FirewallPlan plan = FirewallPlan::Full(std::nullopt, {}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  const auto it = std::find_if(ruleset.rules.begin(), ruleset.rules.end(), [](const NftRule& r) {
    return absl::StartsWith(r.text, "ip daddr 172.16.0.0/12 drop");
  });
  ASSERT_NE(it, ruleset.rules.end());
  const std::vector<NftExpr>& e = it->exprs;
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0].kind, NftExprKind::kMeta);
  EXPECT_EQ(e[0].key, static_cast<uint32_t>(NFT_META_NFPROTO));
  EXPECT_THAT(e[1].data, ElementsAre(NFPROTO_IPV4));
  EXPECT_EQ(e[2].kind, NftExprKind::kPayload);
  EXPECT_EQ(e[2].base, static_cast<uint32_t>(NFT_PAYLOAD_NETWORK_HEADER));
  EXPECT_EQ(e[2].offset, 16u);
  EXPECT_EQ(e[2].len, 4u);
  EXPECT_EQ(e[3].kind, NftExprKind::kBitwise);
  EXPECT_THAT(e[3].data, ElementsAre(0xff, 0xf0, 0, 0));
  EXPECT_EQ(e[4].kind, NftExprKind::kCmp);
  EXPECT_THAT(e[4].data, ElementsAre(172, 16, 0, 0));
  EXPECT_EQ(e[5].kind, NftExprKind::kVerdict);
  EXPECT_EQ(e[5].key, static_cast<uint32_t>(NF_DROP));

  // A /32 needs no mask.
  const auto bcast = std::find_if(ruleset.rules.begin(), ruleset.rules.end(), [](const NftRule& r) {
    return absl::StartsWith(r.text, "ip daddr 255.255.255.255/32 drop");
  });
  ASSERT_NE(bcast, ruleset.rules.end());
  EXPECT_EQ(bcast->exprs.size(), 5u);
}

TEST(NftRulesetTest, LookupRulesLoadConcatenatedRegisters) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  for (const NftRule& rule : ruleset.rules) {
    if (!absl::StrContains(rule.text, "@allowed")) continue;
    const bool v6 = absl::StrContains(rule.text, "@allowed6");
    const std::vector<NftExpr>& e = rule.exprs;
    ASSERT_EQ(e.size(), 8u) << rule.text;
    EXPECT_EQ(e[4].reg, static_cast<uint32_t>(NFT_REG32_00)) << rule.text;  // address
    EXPECT_EQ(e[4].len, v6 ? 16u : 4u) << rule.text;
    EXPECT_EQ(e[5].reg, static_cast<uint32_t>(v6 ? NFT_REG32_04 : NFT_REG32_01)) << rule.text;
    EXPECT_EQ(e[5].base, static_cast<uint32_t>(NFT_PAYLOAD_TRANSPORT_HEADER));
    EXPECT_EQ(e[6].kind, NftExprKind::kLookup);
    EXPECT_EQ(e[6].reg, static_cast<uint32_t>(NFT_REG32_00));
    EXPECT_EQ(e[6].name, v6 ? "allowed6" : "allowed4");
    EXPECT_EQ(e[6].key, v6 ? 2u : 1u);  // the set's id
  }
}

TEST(NftRulesetTest, ElementKeysArePaddedConcatenations) {
  const NftElement v4 = AllowedElement(Ip("198.51.100.10"), 443);
  EXPECT_EQ(v4.set, "allowed4");
  EXPECT_THAT(v4.key, ElementsAre(198, 51, 100, 10, 0x01, 0xbb, 0, 0));
  EXPECT_EQ(v4.text, "198.51.100.10 . 443");
  const NftElement v6 = AllowedElement(Ip("2001:db8::1"), 8080);
  EXPECT_EQ(v6.set, "allowed6");
  ASSERT_EQ(v6.key.size(), 20u);
  EXPECT_EQ(v6.key[0], 0x20);
  EXPECT_EQ(v6.key[15], 0x01);
  EXPECT_EQ(v6.key[16], 0x1f);
  EXPECT_EQ(v6.key[17], 0x90);
  EXPECT_EQ(v6.key[18], 0);
  EXPECT_EQ(v6.key[19], 0);
}

TEST(NftRulesetTest, TextListsTheTable) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {}).value();
  const std::string text = RulesetText(BuildRuleset(plan));
  EXPECT_TRUE(absl::StartsWith(text, "table inet zygo {\n")) << text;
  EXPECT_TRUE(absl::StrContains(text,
                                "set allowed4 { type ipv4_addr . inet_service; flags "
                                "timeout; }"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text, "chain output {\n\t\ttype filter hook output priority filter; policy drop;\n"))
      << text;
}

}  // namespace
}  // namespace zygo::net::internal
