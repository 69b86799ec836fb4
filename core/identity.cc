#include "core/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/capabilities.h"

namespace zygo::core {
namespace {

absl::Status WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  std::string path = absl::StrCat("/proc/", pid, "/", name);
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
  ssize_t n = write(fd, content.data(), content.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(content.size())) {
    return base::ErrnoStatus(err, absl::StrCat("write(", path, ", \"", content, "\")"));
  }
  return absl::OkStatus();
}

// "INSIDE OUTSIDE 1", and "0 0 1" first when root is mapped too (lines may not overlap,
// and they never do: the second is only written for an id other than 0).
std::string IdMap(uint32_t inside, uint32_t outside, bool map_root_too) {
  std::string map = absl::StrCat(inside, " ", outside, " 1\n");
  if (map_root_too && inside != 0) map = absl::StrCat("0 0 1\n", map);
  return map;
}

}  // namespace

IdentityPlan BuildIdentityPlan(uint32_t uid, uint32_t gid) {
  IdentityPlan plan;
  plan.uid = uid;
  plan.gid = gid;
  const bool root = geteuid() == 0;
  plan.host_uid = root ? uid : geteuid();
  plan.host_gid = root ? gid : getegid();
  plan.map_root_too = root && (uid != 0 || gid != 0);
  plan.can_setgroups = root;
  return plan;
}

absl::Status WriteIdMapsFromParent(pid_t pid, const IdentityPlan& plan) {
  absl::Status status =
      WriteProcFile(pid, "uid_map", IdMap(plan.uid, plan.host_uid, plan.map_root_too));
  if (!status.ok()) return status;
  if (!plan.can_setgroups) {
    // user_namespaces(7): an unprivileged gid_map needs setgroups denied first.
    status = WriteProcFile(pid, "setgroups", "deny");
    if (!status.ok()) return status;
  }
  return WriteProcFile(pid, "gid_map", IdMap(plan.gid, plan.host_gid, plan.map_root_too));
}

ChildFailure SetIdsInChild(const IdentityPlan& plan) {
  if (plan.can_setgroups && syscall(SYS_setgroups, 0, nullptr) != 0) {
    return {LaunchStep::kSetGroups, errno};
  }
  if (syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0 ||
      syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) {
    return {LaunchStep::kSetIds, errno};
  }
  return ChildFailure::Ok();
}

ChildFailure DropBoundingSetInChild() {
  int cap = 0;
  if (const int rc = base::sys::RawDropBoundingSet(&cap); rc < 0) {
    return {LaunchStep::kDropCapabilities, -rc, cap};
  }
  return ChildFailure::Ok();
}

ChildFailure DropPrivilegesInChild() {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return {LaunchStep::kDropCapabilities, errno};
  }
  if (const int rc = base::sys::RawClearCapabilities(); rc < 0) {
    return {LaunchStep::kDropCapabilities, -rc};
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return {LaunchStep::kNoNewPrivs, errno};
  return ChildFailure::Ok();
}

}  // namespace zygo::core
