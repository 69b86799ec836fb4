// Installs the sandbox firewall and adds resolver answers to it.
#include "net/firewall.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "net/address_policy.h"
#include "net/internal/nft_batch.h"
#include "net/internal/nft_ruleset.h"

namespace zygo::net {
namespace {

// Each round is add; on EEXIST, look the element up; if it has less time left, replace it.
// A round fails only when the element expires or appears between our steps, so a few
// rounds are plenty.
constexpr int kAddRounds = 3;

absl::Status AddOnce(int fd, const internal::NftElement& element, uint64_t timeout_ms) {
  internal::NftBatch batch(internal::NextSeqBase());
  batch.AddElement(element, timeout_ms);
  return internal::SendBatch(fd, batch);
}

absl::Status Replace(int fd, const internal::NftElement& element, uint64_t timeout_ms) {
  internal::NftBatch batch(internal::NextSeqBase());
  batch.DeleteElement(element);
  batch.AddElement(element, timeout_ms);
  return internal::SendBatch(fd, batch);
}

}  // namespace

absl::Status InstallFirewall(int netlink_fd, const FirewallPlan& plan) {
  internal::NftBatch batch(internal::NextSeqBase());
  batch.AddRuleset(internal::BuildRuleset(plan));
  return internal::SendBatch(netlink_fd, batch);
}

absl::Status AddAllowed(int netlink_fd, const IpAddress& address, uint16_t port,
                        uint32_t ttl_seconds) {
  const IpAddress plain = address.MappedV4().value_or(address);
  const std::string target = absl::StrCat(plain.ToString(), " port ", port);
  if (const absl::Status policy = CheckPublicAddress(plain); !policy.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("refusing to allow ", target, ": ", policy.message()));
  }
  if (port == 0 || ttl_seconds == 0 || ttl_seconds > kMaxAllowedTtlSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("refusing to allow ", target, " for ",
                                                   ttl_seconds, "s: port must be non-zero and ",
                                                   "the TTL from 1 to ", kMaxAllowedTtlSeconds));
  }
  const internal::NftElement element = internal::AllowedElement(plain, port);
  const uint64_t timeout_ms = uint64_t{ttl_seconds} * 1000;
  for (int round = 0; round < kAddRounds; ++round) {
    const absl::Status added = AddOnce(netlink_fd, element, timeout_ms);
    if (!absl::IsAlreadyExists(added)) {
      if (absl::IsNotFound(added)) {
        return absl::NotFoundError(absl::StrCat(
            added.message(), "; is the egress firewall installed in this socket's namespace?"));
      }
      return added;
    }
    ZYGO_ASSIGN_OR_RETURN(
        const std::optional<uint64_t> left,
        internal::GetElementExpiration(netlink_fd, element, internal::NextSeqBase()));
    if (!left.has_value()) continue;  // expired since; add again
    if (*left >= timeout_ms) return absl::OkStatus();
    const absl::Status replaced = Replace(netlink_fd, element, timeout_ms);
    // NotFound: it expired before the delete; EEXIST: someone re-added it. Go round again.
    if (!absl::IsNotFound(replaced) && !absl::IsAlreadyExists(replaced)) return replaced;
  }
  return absl::AbortedError(absl::StrCat("allowing ", target, ": the element kept changing under ",
                                         kAddRounds, " attempts"));
}

std::string DescribeFirewall(const FirewallPlan& plan) {
  return internal::RulesetText(internal::BuildRuleset(plan));
}

}  // namespace zygo::net
