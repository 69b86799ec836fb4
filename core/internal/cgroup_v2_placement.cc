#include "core/internal/cgroup_v2_placement.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/internal/cgroup_fs.h"
#include "core/internal/cgroup_v2.h"
#include "core/internal/cgroup_v2_tree.h"

namespace zygo::core::internal {
namespace {

namespace sys = ::zygo::base::sys;

// As docker-in-docker names it, so that the two agree on where a container's processes go.
constexpr char kContainerInitCgroup[] = "init";

std::string ParentDir(const std::string& dir) { return dir.substr(0, dir.rfind('/')); }

absl::StatusOr<std::string> OwnCgroupDir(const CgroupProbeOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(std::string self, sys::ReadFile(options.self_cgroup_file));
  ZYGO_ASSIGN_OR_RETURN(std::string own, ParseV2SelfCgroup(self));
  // A cgroup outside our cgroup namespace shows as "/.."; we could not reach it.
  if (HasDotDot(own)) {
    return absl::FailedPreconditionError(absl::StrCat("own cgroup \"", own, "\" (",
                                                      options.self_cgroup_file,
                                                      ") is outside this cgroup namespace"));
  }
  return CgroupDir(options.mount_root, own);
}

// "" when `dir` offers memory, pids and cpu to its children's use; else why not.
std::string MissingControllersReason(const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> missing = MissingAvailableControllers(dir);
  if (!missing.ok()) return std::string(missing.status().message());
  if (missing->empty()) return "";
  return absl::StrCat(dir, " is not given ", absl::StrJoin(*missing, ", "),
                      " by its parent (cgroup.controllers)");
}

// "" when this process is the only one of `members`, the processes in `dir`; else what
// is there.
std::string SharedReason(const std::string& dir, const std::vector<pid_t>& members) {
  size_t others = 0;
  for (pid_t pid : members) others += pid != getpid();
  if (others == 0) return "";
  return absl::StrCat(dir, " holds ", others, " other process", others == 1 ? "" : "es");
}

// The nearest cgroup above `own_dir` (up to the top of the tree this process sees) that
// it may manage and that can be a parent: the root cgroup, or one without processes that
// is given the controllers. Stops at the first it may not manage: nothing above it could
// take a process moved from below.
std::optional<std::string> ManageableAncestor(const std::string& own_dir,
                                              const std::string& mount_root) {
  for (std::string dir = own_dir; dir.size() > mount_root.size();) {
    dir = ParentDir(dir);
    if (!CheckMayManage(dir).ok()) return std::nullopt;
    if (!MissingControllersReason(dir).empty()) continue;
    if (IsRootCgroup(dir)) return dir;
    absl::StatusOr<std::vector<pid_t>> members = MemberProcesses(dir);
    if (members.ok() && members->empty()) return dir;
  }
  return std::nullopt;
}

std::string ScopeUnitName(const std::string& prefix) {
  std::random_device random;
  return absl::StrCat(prefix, getpid(), "-", absl::Hex(random() & 0xffff, absl::kZeroPad4),
                      ".scope");
}

}  // namespace

V2PlacementPlan FixedV2Placement(const std::string& parent_dir) {
  V2PlacementPlan plan;
  plan.own_dir = parent_dir;
  plan.placement = {CgroupPlacementKind::kDelegatedAncestor, parent_dir,
                    absl::StrCat("below ", parent_dir, ", as the caller set up")};
  return plan;
}

absl::StatusOr<V2PlacementPlan> PlanV2Placement(const CgroupProbeOptions& options,
                                                const CgroupFacts& facts) {
  ZYGO_ASSIGN_OR_RETURN(const std::string own_dir, OwnCgroupDir(options));
  V2PlacementPlan plan;
  plan.own_dir = own_dir;
  CgroupPlacement& placement = plan.placement;
  std::vector<std::string> reasons;
  // A cgroup2 mount made outside this cgroup namespace (a container that did not mount
  // its own) shows another tree than /proc/self/cgroup's path is relative to.
  absl::StatusOr<std::vector<pid_t>> members = MemberProcesses(own_dir);
  if (!members.ok() || std::find(members->begin(), members->end(), getpid()) == members->end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cgroup v2: zygo is not in ", own_dir, ", where ", options.self_cgroup_file,
        " says it is: the cgroup2 mount at ", options.mount_root,
        " shows another cgroup namespace's tree (mount cgroup2 afresh inside the container)"));
  }

  if (IsRootCgroup(own_dir)) {
    if (std::string missing = MissingControllersReason(own_dir); !missing.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cgroup v2: ", missing, " (the kernel has not got them)"));
    }
    placement = {CgroupPlacementKind::kRootCgroup, own_dir,
                 absl::StrCat("below the root cgroup ", own_dir,
                              ", the one cgroup that may both hold processes and give "
                              "controllers to its children")};
    return plan;
  }

  const std::string missing = MissingControllersReason(own_dir);
  const std::string shared = SharedReason(own_dir, *members);
  const absl::Status may_manage = CheckMayManage(own_dir);
  if (shared.empty() && may_manage.ok() && missing.empty()) {
    placement = {CgroupPlacementKind::kLeafOfOwnCgroup, own_dir,
                 absl::StrCat("below ", own_dir,
                              ", which zygo has to itself: zygo moves into a leaf there and "
                              "the sandboxes' cgroups are the leaf's siblings")};
    return plan;
  }
  for (const std::string* reason : {&shared, &missing}) {
    if (!reason->empty()) reasons.push_back(*reason);
  }
  if (!may_manage.ok()) {
    reasons.push_back(
        absl::StrCat("zygo may not manage ", own_dir, " (", may_manage.message(), ")"));
  }

  if (facts.systemd) {
    const SystemdManager manager = geteuid() == 0 ? SystemdManager::kSystem : SystemdManager::kUser;
    absl::StatusOr<std::string> helper = FindSystemdScopeHelper();
    if (!helper.ok()) {
      reasons.push_back(std::string(helper.status().message()));
    } else if (!SystemdManagerReachable(manager)) {
      reasons.push_back(absl::StrCat("systemd's ", SystemdManagerName(manager),
                                     " manager cannot be reached to ask for a scope",
                                     manager == SystemdManager::kUser
                                         ? " (no $XDG_RUNTIME_DIR/systemd/private or bus: "
                                           "is user@UID.service running? loginctl "
                                           "enable-linger starts it)"
                                         : ""));
    } else {
      plan.asks = manager;
      plan.scope_helper = *helper;
      placement = {CgroupPlacementKind::kSystemdScope, "",
                   absl::StrCat("in a transient scope with Delegate=yes from systemd's ",
                                SystemdManagerName(manager), " manager, because ",
                                absl::StrJoin(reasons, " and "),
                                "; zygo moves into a leaf of the scope and the sandboxes' "
                                "cgroups are the leaf's siblings")};
      return plan;
    }
  } else if (std::optional<std::string> ancestor =
                 ManageableAncestor(own_dir, options.mount_root)) {
    placement = {CgroupPlacementKind::kDelegatedAncestor, *ancestor,
                 absl::StrCat("below ", *ancestor, ", the nearest cgroup above ", own_dir,
                              " that zygo may manage and that holds no process, because ",
                              absl::StrJoin(reasons, " and "))};
    return plan;
  } else if (own_dir == options.mount_root && may_manage.ok() && missing.empty()) {
    // The top of the tree zygo sees, not the root cgroup: a container's own cgroup
    // namespace. Nothing above can be reached, so the container's processes make room.
    placement = {CgroupPlacementKind::kContainerRoot, own_dir,
                 absl::StrCat("below ", own_dir,
                              ", the root of this container's cgroups, once its processes "
                              "(zygo among them) have moved into ",
                              own_dir, "/", kContainerInitCgroup,
                              ", as docker-in-docker's entry point moves them")};
    return plan;
  } else {
    reasons.push_back("no cgroup above it that zygo may manage holds no process");
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cgroup v2: no cgroup to put the sandboxes in: ", absl::StrJoin(reasons, "; "),
                   ". Fix: ", CgroupFixes()));
}

V2Placement::V2Placement(V2PlacementPlan plan, CgroupProbeOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {}

V2Placement::~V2Placement() { Undo(); }

absl::Status V2Placement::Prepare() {
  if (!prepared_.has_value()) prepared_ = Carry();
  return *prepared_;
}

absl::Status V2Placement::Carry() {
  switch (plan_.placement.kind) {
    case CgroupPlacementKind::kLeafOfOwnCgroup:
      return MoveIntoLeaf(plan_.own_dir);
    case CgroupPlacementKind::kSystemdScope:
      return JoinSystemdScope();
    case CgroupPlacementKind::kContainerRoot:
      return EmptyContainerRoot();
    default:
      return absl::OkStatus();
  }
}

absl::Status V2Placement::JoinSystemdScope() {
  const std::string unit = ScopeUnitName(options_.name_prefix);
  ZYGO_RETURN_IF_ERROR(RunSystemdScopeHelper(
      plan_.scope_helper, {.manager = *plan_.asks,
                           .unit = unit,
                           .description = absl::StrCat(options_.purpose, " (pid ", getpid(), ")"),
                           .pid = getpid()}));
  ZYGO_ASSIGN_OR_RETURN(const std::string scope_dir, OwnCgroupDir(options_));
  if (!absl::EndsWith(scope_dir, absl::StrCat("/", unit))) {
    return absl::InternalError(
        absl::StrCat("systemd started ", unit, ", but zygo is in ", scope_dir));
  }
  if (std::string missing = MissingControllersReason(scope_dir); !missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cgroup v2: the scope systemd's ", SystemdManagerName(*plan_.asks),
        " manager made: ", missing,
        " (a user manager gets only what user@.service's Delegate= lists). Fix: ", CgroupFixes()));
  }
  plan_.placement.parent_dir = scope_dir;
  return MoveIntoLeaf(scope_dir);
}

absl::Status V2Placement::MoveIntoLeaf(const std::string& dir) {
  ZYGO_ASSIGN_OR_RETURN(const std::string name, NewCgroupName(options_.name_prefix));
  const std::string leaf = absl::StrCat(dir, "/", name);
  ZYGO_RETURN_IF_ERROR(MakeCgroupDir(leaf));
  absl::Status moved = WriteControlFile(absl::StrCat(leaf, "/cgroup.procs"), absl::StrCat(getpid()),
                                        IfMissing::kCreate);
  if (!moved.ok()) {
    sys::RemoveDirectory(leaf).IgnoreError();
    return absl::Status(moved.code(), absl::StrCat("moving zygo into its leaf: ", moved.message()));
  }
  leaf_dir_ = leaf;
  left_dir_ = dir;
  absl::StatusOr<std::vector<std::string>> turned_on = EnableControllers(dir);
  if (!turned_on.ok()) {
    Undo();
    return turned_on.status();
  }
  turned_on_ = *std::move(turned_on);
  return absl::OkStatus();
}

// Every process of the container's root cgroup, zygo among them, into its init cgroup,
// until none is left (one may fork while the others move); then the controllers on. Both
// stay after zygo exits, as they would after docker-in-docker's entry point: the processes
// live on in init, and the next zygo finds the root empty (delegated_ancestor).
absl::Status V2Placement::EmptyContainerRoot() {
  const std::string& root = plan_.placement.parent_dir;
  const std::string init = absl::StrCat(root, "/", kContainerInitCgroup);
  if (!IsDirectory(init)) ZYGO_RETURN_IF_ERROR(MakeCgroupDir(init));
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    ZYGO_ASSIGN_OR_RETURN(const std::vector<pid_t> members, MemberProcesses(root));
    if (members.empty()) return EnableControllers(root).status();
    for (pid_t pid : members) {
      absl::Status moved = WriteControlFile(absl::StrCat(init, "/cgroup.procs"), absl::StrCat(pid),
                                            IfMissing::kCreate);
      // ESRCH: it exited meanwhile.
      if (!moved.ok() && sys::ErrnoOf(moved) != ESRCH) {
        return absl::Status(moved.code(), absl::StrCat("moving process ", pid, " of ", root,
                                                       " into ", init, ": ", moved.message()));
      }
    }
  }
  return absl::UnavailableError(absl::StrCat("cgroup v2: ", root, " still holds processes after ",
                                             kRounds, " rounds of moving them into ", init,
                                             " (something keeps starting new ones there)"));
}

// Best effort, on the way out: what cannot be undone is a leaf named like a sandbox's
// cgroup with no process in it once zygo has exited, which the next zygo's sweep (or
// systemd, for a scope) removes.
void V2Placement::Undo() {
  if (leaf_dir_.empty()) return;
  // A cgroup whose children use controllers may not take a process back.
  DisableControllers(left_dir_, turned_on_).IgnoreError();
  absl::Status back = WriteControlFile(absl::StrCat(left_dir_, "/cgroup.procs"),
                                       absl::StrCat(getpid()), IfMissing::kCreate);
  if (back.ok()) RemoveCgroupDir(leaf_dir_, "processes").IgnoreError();
  leaf_dir_.clear();
  turned_on_.clear();
}

}  // namespace zygo::core::internal

namespace zygo::core {

// Here rather than in cgroup_probe.cc: the placement's reasons end with it, and the
// drivers' library must not need the probe's.
std::string CgroupFixes() {
  return absl::StrCat("run zygo in a cgroup delegated to it (",
                      geteuid() == 0 ? "systemd-run --scope -p Delegate=yes zygo ..."
                                     : "systemd-run --user --scope -p Delegate=yes zygo ...",
                      ", or a Delegate=yes service), or pass --allow-unlimited to run without "
                      "limits");
}

}  // namespace zygo::core
