// The checks of `zygo doctor`, each an attempt of the thing itself in a throwaway child
// (cli/doctor_child.h) or with a throwaway cgroup, never a setting read back: nothing is
// written to /proc/sys, sysfs or a cgroup zygo did not make (except what --fix asks for).
// Parent side; the caller must be single-threaded.
#ifndef ZYGO_CLI_DOCTOR_CHECKS_H_
#define ZYGO_CLI_DOCTOR_CHECKS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/doctor_check.h"
#include "core/cgroup.h"

namespace zygo::cli {

// --- doctor_checks_sandbox.cc: the kernel facilities every sandbox is made of ---

// uname: kernel, release and machine (information).
DoctorCheck CheckKernel();
// root or an ordinary user (information: rootless runs map the caller to root inside).
DoctorCheck CheckRunningAs();
// A child cloned into the namespaces a run uses (user, pid, mount, net, ipc, uts, cgroup)
// whose id maps are written, and which then sees itself as root and pid 1. Needed.
DoctorCheck CheckUserNamespaces();
// A child installs the sandbox's own seccomp programs (with the listener zygo-init
// uses) and sees a refused call refused. Needed.
DoctorCheck CheckSeccomp();
// A child applies the sandbox's Landlock ruleset and is refused a write it could make
// before. Optional: defence in depth.
DoctorCheck CheckLandlock();
// A child mounts an overlay in a user and mount namespace of its own and copies a file
// up. Optional: zygo run flattens image roots instead.
DoctorCheck CheckOverlayfs();

// --- doctor_checks_cgroup.cc: limits ---

// The cgroup driver a run would use (core::ProbeCgroupDriver), probed once and shared by
// the two checks below, as one run uses one.
using ProbedDriver = absl::StatusOr<std::unique_ptr<core::CgroupDriver>>;

// What doctor names its cgroups ("zygo-doctor-<pid>-<n>"), where a run names its own
// "zygo-<pid>-<n>": making one also sweeps the stale ones of the same name beside it, and
// a plain doctor must leave a killed zygo's for --fix. Probe the driver with it.
inline constexpr char kDoctorCgroupPrefix[] = "zygo-doctor-";

// A cgroup made by `driver` where a run makes one, with limits written, a child placed in
// it the way a run places the sandbox, which finds itself there, is refused its 17th
// process and is charged its memory; then removed. Needed, unless `allow_unlimited`.
DoctorCheck CheckLimits(const ProbedDriver& driver, bool allow_unlimited);
// `zygo run host /bin/true` itself (the plan and launch a run uses, with `driver`). Needed.
DoctorCheck CheckSandboxRun(const ProbedDriver& driver, bool allow_unlimited);
// Stale cgroups of killed zygo processes (and killed doctors', kDoctorCgroupPrefix),
// removed with `fix` (information).
DoctorCheck CheckStaleCgroups(bool fix);
// Where images are kept (information).
DoctorCheck CheckImages();

// --- doctor_checks_net.cc: what --net egress and --net full add ---

// One throwaway child in user and network namespaces of its own, three lines, all
// optional (only --net egress/full need them):
// "nftables": zygo-net installs the egress firewall in the child's namespace;
// "pasta": zygo-net then starts pasta (and the resolver) on it as a run does, and the
// child finds the default route pasta configured;
// "/dev/net/tun": the child opens /dev/net/tun and makes a tap device, as pasta does.
// Returned in the order tun, nftables, pasta.
std::vector<DoctorCheck> CheckNetwork();

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_CHECKS_H_
