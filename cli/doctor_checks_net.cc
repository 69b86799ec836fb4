// What --net egress and --net full add, attempted on a throwaway child's own user and
// network namespaces: the tun device pasta opens there, the nftables firewall zygo-net
// installs, and pasta itself started the way a run starts it.
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/sched.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/doctor_checks.h"
#include "cli/doctor_child.h"
#include "cli/doctor_proc_text.h"
#include "core/base/errno_status.h"
#include "core/base/helper_binary.h"
#include "core/base/sys/wait_status.h"
#include "net/network_helper.h"
#include "net/sandbox_network_plan.h"

namespace zygo::cli {
namespace {

constexpr char kNetNeededFor[] = "--net egress and --net full";

// Steps of the child's report. The tun device is tried here, in the same namespaces
// pasta was given, so that one network namespace is made and torn down, not two (tearing
// down a tap device waits for the kernel's RCU, tens of ms).
enum NetStep : int32_t { kNetOk = 0, kTunOpen = 1, kTunSetIff = 2, kRouteRead = 3 };

// Child side: a tap device like pasta's, in this child's own network namespace (gone with
// it), then its routing table (/proc/net/route is the reader's namespace's) for the parent.
void NetBody(const void*, ChildReport* report) {
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    report->step = kTunOpen;
    report->err = errno;
  } else {
    struct ifreq request = {};
    strncpy(request.ifr_name, "zygo-doctor0", IFNAMSIZ - 1);
    request.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &request) != 0) {
      report->step = kTunSetIff;
      report->err = errno;
    }
    close(fd);
  }
  fd = open("/proc/net/route", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, report->text, sizeof(report->text) - 1);
  if (fd >= 0) close(fd);
  if (n < 0 && report->step == kNetOk) {
    report->step = kRouteRead;
    report->err = errno;
  }
}

// What the network attempt found: the firewall step, then pasta (only after it).
struct NetworkAttempt {
  absl::Status firewall = absl::UnknownError("not tried");
  std::optional<absl::Status> pasta;  // nullopt: not tried (the firewall failed)
  std::string pasta_path;
  std::unique_ptr<net::NetworkHelper> helper;
};

// What zygo run asks for with --net full, with the same test overrides (ZYGO_PASTA,
// ZYGO_DNS_UPSTREAM), so doctor tries what a run would.
net::SandboxNetworkRequest FullModeRequest() {
  net::SandboxNetworkRequest request;
  request.mode = net::SandboxNetMode::kFull;
  if (const char* pasta = getenv("ZYGO_PASTA"); pasta != nullptr && *pasta != '\0') {
    request.pasta_path = pasta;
  }
  if (const char* dns = getenv("ZYGO_DNS_UPSTREAM"); dns != nullptr) request.dns_upstream = dns;
  return request;
}

// Parent side, while the child waits in its namespaces: the firewall alone, then a full
// network as a run starts it. Always OK: what failed is recorded in `attempt`.
absl::Status HookUp(const std::string& helper, pid_t pid, NetworkAttempt* attempt) {
  attempt->firewall = net::NetworkHelper::CheckFirewall(helper, pid);
  if (!attempt->firewall.ok()) return absl::OkStatus();
  const net::SandboxNetworkRequest request = FullModeRequest();
  attempt->pasta_path = request.pasta_path;
  absl::StatusOr<net::SandboxNetworkPlan> plan = net::PlanSandboxNetwork(request);
  if (!plan.ok()) {
    attempt->pasta = plan.status();
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<net::NetworkHelper>> started =
      net::NetworkHelper::Start(helper, pid, *plan);
  attempt->pasta = started.status();
  if (started.ok()) attempt->helper = *std::move(started);
  return absl::OkStatus();
}

DoctorCheck NetCheck(const char* id, const char* label) {
  return DoctorCheck{id, label, CheckStatus::kOk, false, kNetNeededFor};
}

// The tun line from the child's report.
DoctorCheck JudgeTun(const absl::StatusOr<ChildOutcome>& outcome) {
  DoctorCheck check = NetCheck("tun", "/dev/net/tun");
  const bool failed = !outcome.ok() || !outcome->reported || outcome->report.step == kTunOpen ||
                      outcome->report.step == kTunSetIff;
  if (!failed) {
    check.detail =
        "a child in its own user and network namespaces opened it and made a tap "
        "device, as pasta does";
    return check;
  }
  check.status = CheckStatus::kMissing;
  check.detail =
      !outcome.ok() ? absl::StrCat("not tried: ", outcome.status().message())
      : !outcome->reported
          ? absl::StrCat("the child died: ", base::sys::DescribeWaitStatus(outcome->wait_status))
      : outcome->report.step == kTunOpen
          ? absl::StrCat("open(/dev/net/tun, O_RDWR): ", base::ErrnoName(outcome->report.err))
          : absl::StrCat("ioctl(TUNSETIFF, a tap device) in a network namespace of its own: ",
                         base::ErrnoName(outcome->report.err));
  check.fix = !outcome.ok()    ? "see the user namespaces line"
              : geteuid() == 0 ? "load the tun module (modprobe tun)"
                               : "pasta needs /dev/net/tun readable and writable by this user "
                                 "(crw-rw-rw-, as most distributions ship it)";
  return check;
}

}  // namespace

std::vector<DoctorCheck> CheckNetwork() {
  DoctorCheck nftables = NetCheck("nftables", "nftables");
  DoctorCheck pasta = NetCheck("pasta", "pasta");
  absl::StatusOr<std::string> helper =
      base::FindHelperBinary("zygo-net", "net", "the network helper for --net egress/full");
  NetworkAttempt network;
  ChildAttempt attempt;
  attempt.clone_flags = CLONE_NEWUSER | CLONE_NEWNET;
  attempt.write_id_maps = true;
  if (helper.ok()) {
    attempt.before_go = [&](pid_t pid) { return HookUp(*helper, pid, &network); };
  }
  attempt.body = NetBody;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  if (network.helper) network.helper->Stop();
  DoctorCheck tun = JudgeTun(outcome);
  if (!helper.ok() || !outcome.ok()) {
    // No helper to try them with, or no child (user namespaces are missing: see that line).
    for (DoctorCheck* check : {&nftables, &pasta}) {
      check->status = CheckStatus::kMissing;
      check->detail = !helper.ok() ? std::string(helper.status().message())
                                   : absl::StrCat("not tried: ", outcome.status().message());
      check->fix = !helper.ok() ? "install zygo-net beside zygo" : "see the user namespaces line";
    }
    return {tun, nftables, pasta};
  }
  if (!network.firewall.ok()) {
    nftables.status = CheckStatus::kMissing;
    nftables.detail = std::string(network.firewall.message());
    nftables.fix =
        "a kernel with nf_tables and its inet family, ct and lookup expressions "
        "(modprobe nf_tables)";
    pasta.status = CheckStatus::kMissing;
    pasta.detail = "not started: a sandbox's firewall is installed before pasta, and it failed";
    pasta.fix = "see the nftables line";
    return {tun, nftables, pasta};
  }
  nftables.detail =
      "zygo-net installed the egress firewall (table inet zygo) in a fresh "
      "network namespace and admitted an address into its set";
  std::string route = outcome->reported ? DefaultRouteInterface(outcome->report.text) : "";
  if (!network.pasta->ok() || route.empty()) {
    pasta.status = CheckStatus::kMissing;
    pasta.detail = !network.pasta->ok()
                       ? std::string(network.pasta->message())
                       : "pasta started, but the namespace it configured has no default route";
    pasta.fix = access(network.pasta_path.c_str(), X_OK) == 0
                    ? "see the error; zygo run --net full fails the same way"
                    : "install pasta (the passt package)";
    return {tun, nftables, pasta};
  }
  pasta.detail = absl::StrCat("zygo-net started ", network.pasta_path,
                              " and the resolver on a fresh network namespace as --net full "
                              "does; the child inside had a default route via ",
                              route, "; stopped");
  pasta.facts = {{"path", network.pasta_path}, {"interface", route}};
  return {tun, nftables, pasta};
}

}  // namespace zygo::cli
