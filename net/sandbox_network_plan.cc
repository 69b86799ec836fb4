#include "net/sandbox_network_plan.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "net/allowlist.h"

namespace zygo::net {
namespace {

const char* ModeFlag(SandboxNetMode mode) {
  return mode == SandboxNetMode::kEgress ? "--net egress" : "--net full";
}

// The resolver's upstream servers: `dns_upstream`, else the resolv.conf's nameservers.
absl::StatusOr<std::vector<UpstreamServer>> PlanUpstream(const SandboxNetworkRequest& request) {
  if (!request.dns_upstream.empty()) {
    absl::StatusOr<UpstreamServer> server = ParseDnsServer(request.dns_upstream);
    if (!server.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ZYGO_DNS_UPSTREAM: ", server.status().message()));
    }
    return std::vector<UpstreamServer>{*server};
  }
  std::ifstream in(request.resolv_conf_path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<UpstreamServer>> servers = ParseResolvConf(text.str());
  if (!servers.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        ModeFlag(request.mode), " needs an upstream DNS server: ", request.resolv_conf_path, ": ",
        servers.status().message()));
  }
  return servers;
}

}  // namespace

std::string UpstreamServer::ToString() const {
  return address.is_v4() ? absl::StrCat(address.ToString(), ":", port)
                         : absl::StrCat("[", address.ToString(), "]:", port);
}

absl::StatusOr<UpstreamServer> ParseDnsServer(absl::string_view text) {
  absl::string_view host = text;
  uint32_t port = 53;
  if (absl::ConsumePrefix(&host, "[")) {
    size_t close = host.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("DNS server '", text, "': missing ']'"));
    }
    absl::string_view rest = host.substr(close + 1);
    host = host.substr(0, close);
    if (!rest.empty() && (!absl::ConsumePrefix(&rest, ":") || !absl::SimpleAtoi(rest, &port))) {
      return absl::InvalidArgumentError(absl::StrCat("DNS server '", text, "': bad port"));
    }
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    size_t colon = host.find(':');
    if (!absl::SimpleAtoi(host.substr(colon + 1), &port)) {
      return absl::InvalidArgumentError(absl::StrCat("DNS server '", text, "': bad port"));
    }
    host = host.substr(0, colon);
  }
  if (port == 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("DNS server '", text, "': bad port"));
  }
  absl::StatusOr<IpAddress> address = IpAddress::Parse(host);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DNS server '", text, "': ", address.status().message()));
  }
  return UpstreamServer{*address, static_cast<uint16_t>(port)};
}

absl::StatusOr<std::vector<UpstreamServer>> ParseResolvConf(absl::string_view content) {
  std::vector<UpstreamServer> servers;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() < 2 || words[0] != "nameserver") continue;
    // A zone id ("fe80::1%eth0") names a link the resolver cannot use from here.
    if (words[1].find('%') != absl::string_view::npos) continue;
    absl::StatusOr<IpAddress> address = IpAddress::Parse(words[1]);
    if (address.ok()) servers.push_back(UpstreamServer{*address, 53});
  }
  if (servers.empty()) return absl::InvalidArgumentError("no usable nameserver line");
  return servers;
}

absl::StatusOr<SandboxNetworkPlan> PlanSandboxNetwork(const SandboxNetworkRequest& request) {
  SandboxNetworkPlan plan;
  plan.mode = request.mode;
  plan.pasta_path = request.pasta_path;
  if (request.mode == SandboxNetMode::kEgress) {
    absl::StatusOr<Allowlist> allowlist = Allowlist::Parse(request.allow);
    if (!allowlist.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--allow: ", allowlist.status().message()));
    }
    for (const AllowEntry& entry : allowlist->entries()) plan.allow.push_back(entry.ToString());
  }
  // Both modes: the sandbox's resolv.conf names Zygo's resolver, which asks these.
  absl::StatusOr<std::vector<UpstreamServer>> upstream = PlanUpstream(request);
  if (!upstream.ok()) return upstream.status();
  plan.upstream = *std::move(upstream);
  if (geteuid() != 0 && access(request.tun_path.c_str(), R_OK | W_OK) != 0) {
    // Rootless pasta opens the tun device itself; as root it may, whatever the mode.
    return absl::FailedPreconditionError(absl::StrCat(
        ModeFlag(request.mode), " as an ordinary user needs ", request.tun_path,
        " readable and writable for pasta (", strerror(errno),
        "); Debian ships it mode 0666, or run as root"));
  }
  if (access(request.pasta_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(ModeFlag(request.mode), " needs pasta, and ", request.pasta_path,
                     " is missing or not executable: install the passt package"));
  }
  return plan;
}

std::vector<std::string> SandboxNetworkPlanToArgs(const SandboxNetworkPlan& plan) {
  std::vector<std::string> args = {
      absl::StrCat("--mode=", plan.mode == SandboxNetMode::kEgress ? "egress" : "full"),
      absl::StrCat("--pasta=", plan.pasta_path)};
  for (const std::string& entry : plan.allow) args.push_back(absl::StrCat("--allow=", entry));
  for (const UpstreamServer& server : plan.upstream) {
    args.push_back(absl::StrCat("--upstream=", server.ToString()));
  }
  return args;
}

absl::StatusOr<SandboxNetworkPlan> SandboxNetworkPlanFromArgs(
    const std::vector<std::string>& args) {
  SandboxNetworkPlan plan;
  bool have_mode = false;
  for (const std::string& arg : args) {
    absl::string_view value = arg;
    if (absl::ConsumePrefix(&value, "--mode=")) {
      if (value != "egress" && value != "full") {
        return absl::InvalidArgumentError(absl::StrCat("bad mode '", value, "'"));
      }
      plan.mode = value == "egress" ? SandboxNetMode::kEgress : SandboxNetMode::kFull;
      have_mode = true;
    } else if (absl::ConsumePrefix(&value, "--pasta=")) {
      plan.pasta_path = std::string(value);
    } else if (absl::ConsumePrefix(&value, "--allow=")) {
      plan.allow.push_back(std::string(value));
    } else if (absl::ConsumePrefix(&value, "--upstream=")) {
      absl::StatusOr<UpstreamServer> server = ParseDnsServer(value);
      if (!server.ok()) return server.status();
      plan.upstream.push_back(*server);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument '", arg, "'"));
    }
  }
  if (!have_mode || plan.pasta_path.empty()) {
    return absl::InvalidArgumentError("--mode and --pasta are required");
  }
  // Both modes run the resolver; only egress has an allowlist.
  if (plan.upstream.empty()) return absl::InvalidArgumentError("--upstream is required");
  if (plan.mode == SandboxNetMode::kEgress && plan.allow.empty()) {
    return absl::InvalidArgumentError("egress needs --allow");
  }
  if (plan.mode == SandboxNetMode::kFull && !plan.allow.empty()) {
    return absl::InvalidArgumentError("full takes no --allow");
  }
  return plan;
}

}  // namespace zygo::net
