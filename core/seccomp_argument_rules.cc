#include "core/seccomp_argument_rules.h"

#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdint>
#include <initializer_list>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::core {
namespace {

constexpr uint64_t kNamespaceCloneFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWTIME;
constexpr uint64_t kFunctionZygoteNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
// The kernel reads these arguments as 32-bit ints (or a umode_t): compare the low 32 bits
// only, so a caller cannot slip past with the upper bits set.
constexpr uint64_t kLow32 = 0xffffffffULL;
// fchmodat2 (Linux 6.6) has the same number on every architecture; libseccomp 2.5 and
// Debian 12's headers predate it.
constexpr int kFchmodat2 = 452;

absl::Status Check(int rc, absl::string_view what) {
  return rc < 0 ? base::ErrnoStatus(-rc, absl::StrCat("libseccomp rule for ", what))
                : absl::OkStatus();
}

absl::Status AllowModesWithoutSetId(scmp_filter_ctx ctx, int* allowed) {
  struct ModeCall {
    const char* name;
    int nr;
    unsigned mode_arg;
  };
  const ModeCall calls[] = {{"chmod", SCMP_SYS(chmod), 1},
                            {"fchmod", SCMP_SYS(fchmod), 1},
                            {"fchmodat", SCMP_SYS(fchmodat), 2},
                            {"fchmodat2", kFchmodat2, 2}};
  for (const ModeCall& call : calls) {
    struct scmp_arg_cmp no_set_id = {call.mode_arg, SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, 0};
    ZYGO_RETURN_IF_ERROR(
        Check(seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, call.nr, 1, &no_set_id), call.name));
    ++*allowed;
  }
  return absl::OkStatus();
}

absl::Status AllowNodesThatAreNotDevices(scmp_filter_ctx ctx, int* allowed) {
  for (auto [name, nr, mode_arg] :
       {std::tuple{"mknod", SCMP_SYS(mknod), 1u}, std::tuple{"mknodat", SCMP_SYS(mknodat), 2u}}) {
    // A zero type means a regular file (mknod(2)).
    for (uint64_t type : {0u, static_cast<unsigned>(S_IFREG), static_cast<unsigned>(S_IFIFO),
                          static_cast<unsigned>(S_IFSOCK)}) {
      struct scmp_arg_cmp of_type = {mode_arg, SCMP_CMP_MASKED_EQ, S_IFMT, type};
      ZYGO_RETURN_IF_ERROR(
          Check(seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, 1, &of_type), name));
    }
    ++*allowed;
  }
  return absl::OkStatus();
}

absl::Status AllowSocketFamilies(scmp_filter_ctx ctx, int* allowed) {
  for (uint64_t family : {AF_UNIX, AF_INET, AF_INET6}) {
    ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                                SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, family)),
                               "socket"));
  }
  ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
                                              SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, AF_NETLINK),
                                              SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, NETLINK_ROUTE)),
                             "socket(AF_NETLINK)"));
  ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
                                              SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, AF_UNIX)),
                             "socketpair"));
  *allowed += 2;
  return absl::OkStatus();
}

}  // namespace

absl::Status AddArgumentCheckedRules(scmp_filter_ctx ctx, SeccompProfile profile, int* allowed) {
  ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                              SCMP_A0(SCMP_CMP_MASKED_EQ, kNamespaceCloneFlags, 0)),
                             "clone"));
  ++*allowed;
  // A warm spare's own user and mount namespace, for its own /tmp (core/nested_tmp.h): only
  // both flags together, and only as many as the sandbox's max_user_namespaces allows
  // (0 outside a warm zygote, so ENOSPC there).
  ZYGO_RETURN_IF_ERROR(
      Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, CLONE_NEWUSER | CLONE_NEWNS)),
            "unshare"));
  ++*allowed;
  if (profile == SeccompProfile::kRuntimeZygote) {
    // A function zygote's own namespaces (core/forked_zygote.h), made by the runtime's
    // forked child, and its cgroup namespace once it is in its cgroup. Bounded by the
    // runtime's max_user_namespaces (RuntimeUsernsLimits).
    for (uint64_t flags : {kFunctionZygoteNamespaces, static_cast<uint64_t>(CLONE_NEWCGROUP)}) {
      ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1,
                                                  SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, flags)),
                                 "unshare(a function zygote's namespaces)"));
    }
  }
  for (int nr : {SCMP_SYS(clone3), SCMP_SYS(io_setup), SCMP_SYS(io_destroy), SCMP_SYS(io_submit),
                 SCMP_SYS(io_cancel), SCMP_SYS(io_getevents), SCMP_SYS(io_pgetevents)}) {
    ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0), "ENOSYS"));
  }
  ZYGO_RETURN_IF_ERROR(AllowModesWithoutSetId(ctx, allowed));
  ZYGO_RETURN_IF_ERROR(AllowNodesThatAreNotDevices(ctx, allowed));
  return AllowSocketFamilies(ctx, allowed);
}

}  // namespace zygo::core
