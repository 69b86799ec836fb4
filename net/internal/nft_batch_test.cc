// The batch bytes, checked without the kernel: framing, numbering, flags, the expressions
// libnftnl reads back, and how kernel errors become Status.
#include "net/internal/nft_batch.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/rule.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "net/firewall_plan.h"
#include "net/internal/nft_ruleset.h"
#include "net/ip_address.h"

namespace zygo::net::internal {
namespace {

IpAddress Ip(const char* text) { return IpAddress::Parse(text).value(); }

std::vector<const nlmsghdr*> Messages(const std::vector<char>& bytes) {
  std::vector<const nlmsghdr*> out;
  int left = static_cast<int>(bytes.size());
  for (const nlmsghdr* nlh = reinterpret_cast<const nlmsghdr*>(bytes.data());
       mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
    out.push_back(nlh);
  }
  EXPECT_EQ(left, 0) << "trailing bytes";
  return out;
}

uint16_t NftType(const nlmsghdr* nlh) { return nlh->nlmsg_type & 0xff; }

TEST(NftBatchTest, RulesetIsOneFramedTransaction) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {Ip("203.0.113.1")}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  NftBatch batch(1000);
  batch.AddRuleset(ruleset);
  const std::vector<const nlmsghdr*> messages = Messages(batch.Finish());
  const size_t body = 3 + ruleset.sets.size() + ruleset.chains.size() + ruleset.rules.size();
  ASSERT_EQ(messages.size(), body + 2);
  EXPECT_EQ(messages.front()->nlmsg_type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(messages.back()->nlmsg_type, NFNL_MSG_BATCH_END);
  EXPECT_EQ(batch.begin_seq(), 1000u);
  EXPECT_EQ(batch.last_seq(), 1000u + body);
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i]->nlmsg_seq, 1000u + i);
    // Only the last message asks for an ACK; failures of the others are reported anyway.
    EXPECT_EQ((messages[i]->nlmsg_flags & NLM_F_ACK) != 0, i == body) << i;
  }
  EXPECT_EQ(NftType(messages[1]), NFT_MSG_NEWTABLE);
  EXPECT_EQ(messages[1]->nlmsg_flags & NLM_F_EXCL, 0);
  EXPECT_EQ(NftType(messages[2]), NFT_MSG_DELTABLE);
  EXPECT_EQ(NftType(messages[3]), NFT_MSG_NEWTABLE);
  EXPECT_NE(messages[3]->nlmsg_flags & NLM_F_EXCL, 0);
  EXPECT_EQ(NftType(messages[4]), NFT_MSG_NEWSET);
  EXPECT_EQ(NftType(messages[6]), NFT_MSG_NEWCHAIN);
  EXPECT_EQ(NftType(messages[8]), NFT_MSG_NEWRULE);
  EXPECT_EQ(NftType(messages[body]), NFT_MSG_NEWRULE);
}

TEST(NftBatchTest, RulesReadBackAsTheirExpressions) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {}).value();
  const NftRuleset ruleset = BuildRuleset(plan);
  NftBatch batch(1);
  batch.AddRuleset(ruleset);
  const std::vector<const nlmsghdr*> messages = Messages(batch.Finish());
  const size_t first_rule = 1 + 3 + ruleset.sets.size() + ruleset.chains.size();
  for (size_t i = 0; i < ruleset.rules.size(); ++i) {
    nftnl_rule* rule = nftnl_rule_alloc();
    ASSERT_EQ(nftnl_rule_nlmsg_parse(messages[first_rule + i], rule), 0);
    char text[4096];
    nftnl_rule_snprintf(text, sizeof(text), rule, NFTNL_OUTPUT_DEFAULT, 0);
    nftnl_rule_free(rule);
    const std::string dump = text;
    const std::string& want = ruleset.rules[i].text;
    EXPECT_TRUE(absl::StrContains(dump, ruleset.rules[i].chain)) << dump;
    if (absl::StartsWith(want, "ip daddr 10.0.0.0/8")) {
      EXPECT_TRUE(absl::StrContains(dump, "[ payload load 4b @ network header + 16 => reg 1 ]"))
          << dump;
      EXPECT_TRUE(
          absl::StrContains(dump, "[ bitwise reg 1 = ( reg 1 & 0x000000ff ) ^ 0x00000000 ]"))
          << dump;
      EXPECT_TRUE(absl::StrContains(dump, "[ cmp eq reg 1 0x0000000a ]")) << dump;
      EXPECT_TRUE(absl::StrContains(dump, "[ immediate reg 0 drop ]")) << dump;
    }
    if (want == "meta l4proto tcp ip daddr . th dport @allowed4 accept") {
      EXPECT_TRUE(absl::StrContains(dump, "[ payload load 4b @ network header + 16 => reg 8 ]"))
          << dump;
      EXPECT_TRUE(absl::StrContains(dump, "[ payload load 2b @ transport header + 2 => reg 9 ]"))
          << dump;
      EXPECT_TRUE(absl::StrContains(dump, "[ lookup reg 8 set allowed4 ]")) << dump;
    }
    if (want == "jump refused") {
      EXPECT_TRUE(absl::StrContains(dump, "[ immediate reg 0 jump -> refused ]")) << dump;
    }
  }
}

TEST(NftBatchTest, ElementMessages) {
  NftBatch batch(50);
  const NftElement element = AllowedElement(Ip("198.51.100.10"), 8080);
  batch.DeleteElement(element);
  batch.AddElement(element, 1000);
  const std::vector<const nlmsghdr*> messages = Messages(batch.Finish());
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(NftType(messages[1]), NFT_MSG_DELSETELEM);
  EXPECT_EQ(NftType(messages[2]), NFT_MSG_NEWSETELEM);
  EXPECT_NE(messages[2]->nlmsg_flags & NLM_F_EXCL, 0);
}

TEST(NftBatchTest, KernelErrorsNameTheMessageAndErrno) {
  const FirewallPlan plan = FirewallPlan::Egress(Ip("127.0.0.53"), {}).value();
  NftBatch batch(100);
  batch.AddRuleset(BuildRuleset(plan));
  batch.Finish();

  const absl::Status whole = batch.ErrorFor(100, EOPNOTSUPP);
  EXPECT_EQ(whole.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StartsWith(whole.message(), "nftables is not available: the batch")) << whole;
  EXPECT_TRUE(absl::StrContains(whole.message(), "EOPNOTSUPP")) << whole;

  const absl::Status family = batch.ErrorFor(101, EAFNOSUPPORT);
  EXPECT_EQ(family.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(family.message(), "adding table inet zygo")) << family;

  const absl::Status set = batch.ErrorFor(104, EINVAL);
  EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(set.message(), "creating set inet zygo allowed4")) << set;
  EXPECT_TRUE(absl::StrContains(set.message(), "EINVAL")) << set;

  // ENOENT on a rule: an expression module is missing.
  const absl::Status rule = batch.ErrorFor(108, ENOENT);
  EXPECT_EQ(rule.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(rule.message(), "adding rule")) << rule;

  const absl::Status perm = batch.ErrorFor(100, EPERM);
  EXPECT_EQ(perm.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(perm.message(), "CAP_NET_ADMIN")) << perm;

  NftBatch element_batch(7);
  element_batch.AddElement(AllowedElement(Ip("198.51.100.10"), 80), 5000);
  const absl::Status exists = element_batch.ErrorFor(8, EEXIST);
  EXPECT_EQ(exists.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(absl::StrContains(exists.message(), "198.51.100.10 . 80")) << exists;
}

TEST(NftBatchTest, SeqBasesLeaveRoomForABatch) {
  const uint32_t base = NextSeqBase();
  EXPECT_GT(base, 0u);
  EXPECT_LT(base, 0x70000001u);
}

}  // namespace
}  // namespace zygo::net::internal
