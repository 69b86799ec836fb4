// without_nftables ARGV...: runs ARGV on a kernel that, for it and everything it starts,
// looks as if it had no nfnetlink. socket(AF_NETLINK, *, NETLINK_NETFILTER) fails with
// EPROTONOSUPPORT, which is what a kernel built without CONFIG_NETFILTER_NETLINK answers
// (net/netlink/af_netlink.c: no registered protocol); every other syscall is allowed.
// Test-only: the filter is inherited across fork and exec (no_new_privs) and cannot be
// removed, so zygo, zygo-net and pasta all run under it.
#include <errno.h>
#include <linux/netlink.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

int Fail(const char* what, int err) {
  fprintf(stderr, "without_nftables: %s: %s\n", what, strerror(err));
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] != '/') {
    fprintf(stderr, "usage: without_nftables /ABSOLUTE/PROGRAM [ARG...]\n");
    return 125;
  }
  // Needed to install a filter without CAP_SYS_ADMIN, and it keeps setuid programs from
  // shedding the filter; zygo sets it for its sandboxes anyway.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Fail("prctl(PR_SET_NO_NEW_PRIVS)", errno);
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return Fail("seccomp_init(SCMP_ACT_ALLOW)", ENOMEM);
  // libseccomp returns -errno.
  int rc =
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
                       SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, NETLINK_NETFILTER));
  if (rc != 0) return Fail("seccomp_rule_add(socket, AF_NETLINK, NETLINK_NETFILTER)", -rc);
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return Fail("seccomp_load", -rc);
  execv(argv[1], argv + 1);
  return Fail(argv[1], errno);
}
