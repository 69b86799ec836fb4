// The batch transport against a real kernel, in a network namespace made by the test:
// a failure anywhere aborts the whole transaction and is reported for its own message.
#include <unistd.h>

#include <memory>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "net/firewall_plan.h"
#include "net/internal/nft_batch.h"
#include "net/internal/nft_ruleset.h"
#include "net/internal/test_netns.h"
#include "net/ip_address.h"
#include "net/netns_socket.h"

namespace zygo::net::internal {
namespace {

IpAddress Ip(const char* text) { return IpAddress::Parse(text).value(); }

class NftBatchNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    netns_ = testing::TestNetns::Create().value();
    absl::StatusOr<base::UniqueFd> netlink = OpenNetlinkInNetns(netns_->fd());
    ASSERT_TRUE(netlink.ok()) << netlink.status();
    netlink_ = *std::move(netlink);
    NftBatch install(NextSeqBase());
    install.AddRuleset(BuildRuleset(FirewallPlan::Egress(Ip("127.0.0.53"), {}).value()));
    const absl::Status status = SendBatch(netlink_.get(), install);
    if (absl::IsUnimplemented(status)) GTEST_SKIP() << status;
    ASSERT_TRUE(status.ok()) << status;
  }

  std::unique_ptr<testing::TestNetns> netns_;
  base::UniqueFd netlink_;
};

TEST_F(NftBatchNetnsTest, AFailedMessageAbortsTheTransactionAndIsNamed) {
  const NftElement missing = AllowedElement(Ip("198.51.100.10"), 80);
  const NftElement other = AllowedElement(Ip("198.51.100.11"), 80);
  NftBatch batch(NextSeqBase());
  batch.DeleteElement(missing);    // ENOENT: never added
  batch.AddElement(other, 60000);  // fine on its own, and the last message (the ACK)
  const absl::Status status = SendBatch(netlink_.get(), batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "deleting element 198.51.100.10 . 80")) << status;
  // Aborted as a whole: the add did not happen either.
  absl::StatusOr<std::optional<uint64_t>> left =
      GetElementExpiration(netlink_.get(), other, NextSeqBase());
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_FALSE(left->has_value());
}

TEST_F(NftBatchNetnsTest, ElementsCarryTheirExpiration) {
  const NftElement element = AllowedElement(Ip("2001:db8::1"), 443);
  NftBatch batch(NextSeqBase());
  batch.AddElement(element, 60000);
  ASSERT_TRUE(SendBatch(netlink_.get(), batch).ok());
  absl::StatusOr<std::optional<uint64_t>> left =
      GetElementExpiration(netlink_.get(), element, NextSeqBase());
  ASSERT_TRUE(left.ok()) << left.status();
  ASSERT_TRUE(left->has_value());
  EXPECT_LE(**left, 60000u);
  EXPECT_GT(**left, 55000u);

  // Adding it again is EEXIST (NLM_F_EXCL), which AddAllowed relies on.
  NftBatch again(NextSeqBase());
  again.AddElement(element, 60000);
  EXPECT_EQ(SendBatch(netlink_.get(), again).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(NftBatchNetnsTest, ManyFailuresStillEndWithTheFirst) {
  // No chains, so every rule fails (ENOENT): dozens of reports, one status, the first.
  NftRuleset ruleset = BuildRuleset(FirewallPlan::Full(std::nullopt, {}).value());
  ruleset.chains.clear();
  NftBatch batch(NextSeqBase());
  batch.AddRuleset(ruleset);
  const absl::Status status = SendBatch(netlink_.get(), batch);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "ip daddr 0.0.0.0/8 drop")) << status;
  // The aborted batch deleted nothing: the egress table from SetUp is still there.
  NftBatch probe(NextSeqBase());
  probe.AddElement(AllowedElement(Ip("198.51.100.10"), 80), 1000);
  EXPECT_TRUE(SendBatch(netlink_.get(), probe).ok());
}

}  // namespace
}  // namespace zygo::net::internal
