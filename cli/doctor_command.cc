// `zygo doctor`: flags, the order of the checks, printing (text or --json) and the exit
// code. The checks themselves are attempts (cli/doctor_checks.h, doctor_cgroup_moves.h).
#include "cli/doctor_command.h"

#include <stdio.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/doctor_cgroup_moves.h"
#include "cli/doctor_check.h"
#include "cli/doctor_checks.h"
#include "core/cgroup.h"

namespace zygo::cli {
namespace {

constexpr char kUsage[] =
    "Usage: zygo doctor [--fix] [--json] [--allow-unlimited]\n"
    "\n"
    "Tries, on this host, what zygo run does, one line per check: each makes a throwaway\n"
    "child, namespace or cgroup, attempts the thing and removes it (nothing is written to\n"
    "/proc/sys, sysfs or a cgroup zygo did not make). Exits 0 when zygo run can work here,\n"
    "1 when something it needs is missing (that line says what to do), 125 for a bad\n"
    "argument.\n"
    "\n"
    "Needed by every run (a MISSING one makes doctor exit 1):\n"
    "  user namespaces  a child in new user, pid, mount, net, ipc, uts, cgroup namespaces\n"
    "  limits           a cgroup where a run makes one, with limits, a child inside it\n"
    "                   (not needed with --allow-unlimited)\n"
    "  seccomp          a child under the sandbox's own filter\n"
    "  sandbox          zygo run host /bin/true itself\n"
    "Optional layers and features (MISSING says what is lost):\n"
    "  landlock         a child under the sandbox's ruleset (defence in depth)\n"
    "  overlayfs        an overlay mount in a user namespace (zygo run does not use it)\n"
    "  /dev/net/tun     a tap device in a namespace of its own  } --net egress\n"
    "  nftables         the egress firewall, by zygo-net        } and --net full\n"
    "  pasta            pasta started as a run starts it        }\n"
    "  cgroup moves     cgroup2 with favordynmods (the warm path's 1-in-100 latency)\n"
    "Information: kernel, running as, images, stale cgroups.\n"
    "\n"
    "Options:\n"
    "  --fix              remove the stale cgroups killed zygo processes left (named\n"
    "                     zygo-PID-N, their PID gone; one still holding a process, or a\n"
    "                     cgroup zygo did not name, is kept); and where cgroup2 lacks\n"
    "                     favordynmods, offer to remount it with it and keep it in\n"
    "                     /etc/fstab: asked y/N on a terminal, never done without one,\n"
    "                     never offered inside a container\n"
    "  --json             one JSON document instead of lines (docs/zygo-run.md)\n"
    "  --allow-unlimited  judge for runs with --allow-unlimited: limits become optional\n"
    "  -h, --help         this text\n";

struct DoctorFlags {
  bool fix = false;
  bool json = false;
  bool allow_unlimited = false;
};

// The cgroup moves line, and with --fix the remount offered (only when it is fixable).
DoctorCheck CgroupMoves(bool fix) {
  CgroupMovesFacts facts = ReadCgroupMovesFacts();
  CgroupMovesDecision decision = DecideCgroupMoves(facts);
  DoctorCheck check = DescribeCgroupMoves(facts, decision);
  if (!fix || !decision.fix.has_value()) return check;
  std::string done = OfferRemount(*decision.fix, facts.systemd, RealFixActions());
  CgroupMovesFacts after = ReadCgroupMovesFacts();
  DoctorCheck now = DescribeCgroupMoves(after, DecideCgroupMoves(after));
  now.detail = absl::StrCat(now.detail, " (--fix: ", done, ")");
  now.facts["fix_result"] = done;
  return now;
}

}  // namespace

int DoctorCommand(int argc, char** argv) {
  DoctorFlags flags;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--fix") {
      flags.fix = true;
    } else if (arg == "--json") {
      flags.json = true;
    } else if (arg == "--allow-unlimited") {
      flags.allow_unlimited = true;
    } else {
      fprintf(stderr,
              "zygo: doctor: unknown argument '%s'; usage: zygo doctor [--fix] [--json] "
              "[--allow-unlimited]\n",
              arg.c_str());
      return 125;
    }
  }
  // Probed once, as by one run: on v2 the driver may move this process into place (a leaf,
  // a systemd scope) and moves it back when it goes, after the last check.
  core::CgroupProbeOptions probe;
  probe.name_prefix = kDoctorCgroupPrefix;
  probe.purpose = "zygo doctor";
  const ProbedDriver driver = core::ProbeCgroupDriver(probe);
  // In the order a reader needs them: what the host is, what every run needs, the
  // optional layers, then information.
  const std::vector<std::function<std::vector<DoctorCheck>()>> steps = {
      [] {
        return std::vector<DoctorCheck>{CheckKernel(), CheckRunningAs()};
      },
      [] { return std::vector<DoctorCheck>{CheckUserNamespaces()}; },
      [&] { return std::vector<DoctorCheck>{CheckLimits(driver, flags.allow_unlimited)}; },
      [] { return std::vector<DoctorCheck>{CheckSeccomp()}; },
      [] { return std::vector<DoctorCheck>{CheckLandlock()}; },
      [&] { return std::vector<DoctorCheck>{CheckSandboxRun(driver, flags.allow_unlimited)}; },
      [] { return std::vector<DoctorCheck>{CheckOverlayfs()}; },
      [] { return CheckNetwork(); },
      [&] { return std::vector<DoctorCheck>{CgroupMoves(flags.fix)}; },
      [] { return std::vector<DoctorCheck>{CheckImages()}; },
      [&] { return std::vector<DoctorCheck>{CheckStaleCgroups(flags.fix)}; },
  };
  std::vector<DoctorCheck> checks;
  for (const auto& step : steps) {
    auto start = std::chrono::steady_clock::now();
    std::vector<DoctorCheck> done = step();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (DoctorCheck& check : done) {
      check.ms = ms;
      if (!flags.json) {
        printf("%s\n", FormatCheckLine(check).c_str());
        fflush(stdout);
      }
      checks.push_back(std::move(check));
    }
  }
  if (flags.json) printf("%s\n", ChecksToJson(checks).dump(2).c_str());
  return RunCanWork(checks) ? 0 : 1;
}

}  // namespace zygo::cli
