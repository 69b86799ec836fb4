// Checks and normalizes the inputs of the sandbox firewall.
#include "net/firewall_plan.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace zygo::net {
namespace {

// Ranges that name no single host to talk to.
constexpr const char* kNotUnicast[] = {
    "0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32", "::/128", "ff00::/8",
};

absl::StatusOr<IpAddress> CheckUnicast(const IpAddress& address, const char* role) {
  const IpAddress plain = address.MappedV4().value_or(address);
  for (const char* text : kNotUnicast) {
    if (IpPrefix::Parse(text).value().Contains(plain)) {
      return absl::InvalidArgumentError(absl::StrCat("firewall ", role, " ", address.ToString(),
                                                     " is not a unicast address (in ", text, ")"));
    }
  }
  return plain;
}

absl::StatusOr<std::vector<IpAddress>> CheckHostAddresses(std::vector<IpAddress> addresses) {
  std::vector<IpAddress> checked;
  for (const IpAddress& address : addresses) {
    ZYGO_ASSIGN_OR_RETURN(IpAddress plain, CheckUnicast(address, "host address"));
    if (std::find(checked.begin(), checked.end(), plain) == checked.end()) {
      checked.push_back(plain);
    }
  }
  return checked;
}

}  // namespace

absl::StatusOr<FirewallPlan> FirewallPlan::Egress(const IpAddress& resolver,
                                                  std::vector<IpAddress> host_addresses) {
  ZYGO_ASSIGN_OR_RETURN(IpAddress checked_resolver, CheckUnicast(resolver, "resolver"));
  ZYGO_ASSIGN_OR_RETURN(std::vector<IpAddress> hosts,
                        CheckHostAddresses(std::move(host_addresses)));
  return FirewallPlan(FirewallMode::kEgress, checked_resolver, std::move(hosts));
}

absl::StatusOr<FirewallPlan> FirewallPlan::Full(std::optional<IpAddress> resolver,
                                                std::vector<IpAddress> host_addresses) {
  std::optional<IpAddress> checked_resolver;
  if (resolver.has_value()) {
    ZYGO_ASSIGN_OR_RETURN(checked_resolver, CheckUnicast(*resolver, "resolver"));
  }
  ZYGO_ASSIGN_OR_RETURN(std::vector<IpAddress> hosts,
                        CheckHostAddresses(std::move(host_addresses)));
  return FirewallPlan(FirewallMode::kFull, checked_resolver, std::move(hosts));
}

}  // namespace zygo::net
