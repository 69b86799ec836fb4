// Request isolation inside the sandbox, for every agent's spares: each spare gets its own
// /tmp (a fresh tmpfs in a mount namespace of its own, which the supervisor mounts:
// core/nested_tmp.h) and its own Landlock domain (writes only there and to /dev; on ABI >= 6
// no signals or abstract unix sockets out of the domain), so one request cannot touch a
// sibling's files, signal or ptrace a sibling or the zygote (ptrace access covers
// /proc/PID/mem and environ). Complements, never replaces, the sandbox around the zygote.
#ifndef ZYGO_AGENTS_ISOLATION_ISOLATION_H_
#define ZYGO_AGENTS_ISOLATION_ISOLATION_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::isolation {

// Where a request's own tmpfs is mounted, and its TMPDIR.
inline constexpr char kRequestTmp[] = "/tmp";

// unshare(CLONE_NEWUSER | CLONE_NEWNS): a user namespace and a mount namespace of the
// spare's own, so the supervisor can mount a /tmp that only this spare sees; then drops
// every capability the new user namespace gave (bounding set included), so nothing the
// spare runs holds one. Child side, right after DieWithParent and before AnnounceSpare
// (the supervisor mounts once it has the spare's Forked).
absl::Status EnterOwnNamespaces();

// Empties the bounding set, then the effective, permitted and inheritable sets: nothing the
// caller runs afterwards holds a capability, not even by exec'ing as root. Child side.
absl::Status DropAllCapabilities();

// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
int LandlockAbi();

// The rules every request's Landlock domain starts from: read and execute on each entry of
// "/" but /tmp (the request's own tmpfs gets its own rule) and symlinks (their targets are entries
// of their own, such as /usr/lib); read/write (no create) of /dev's nodes. Listed once by the
// zygote, which holds an O_PATH fd per entry; its spares inherit them, so a spare stacks its domain
// without listing "/" again (about 26 syscalls a spare: the listing, a stat and an open per entry).
struct LandlockBase {
  struct Entry {
    std::string path;
    base::UniqueFd fd;  // O_PATH
    uint64_t access = 0;
  };
  int abi = 0;  // 0: the kernel has no Landlock, and nothing is restricted
  std::vector<Entry> entries;
};
absl::StatusOr<LandlockBase> PrepareLandlockBase();

// Stacks a new Landlock domain on the calling process: `base`'s rules, and every access
// beneath `tmp_dir`; on ABI >= 6 also scopes signals and abstract unix sockets to the
// domain. Sets no_new_privs first (landlock_restrict_self requires it without
// CAP_SYS_ADMIN). Then closes `base`'s fds in this process, so that no request inherits
// them. Returns the ABI applied; 0 means the kernel has no Landlock and nothing was
// restricted. Child side; needs no privileges.
absl::StatusOr<int> RestrictToRequest(LandlockBase& base, const std::string& tmp_dir);

// PR_SET_PDEATHSIG SIGKILL, then checks the zygote `parent` is still the parent (it may
// have died before the prctl): a spare never outlives its zygote. Child side.
absl::Status DieWithParent(pid_t parent);

// The isolation every agent's spare applies to itself before its request, once the
// supervisor has mounted its own /tmp and sent Isolate: its own Landlock domain stacked
// from the zygote's `landlock` with every access beneath kRequestTmp (RestrictToRequest, at
// landlock->abi; the zygote's failure to prepare it fails this). The zygote's fds of "/"
// are closed in this process whatever fails, so no request inherits them. A spare that
// gets an error must not run its request (zygote::ServeChildChannel refuses it). Child
// side; needs no privileges.
absl::Status IsolateSpare(absl::StatusOr<LandlockBase>& landlock);

// IsolateSpare, then TMPDIR=/tmp in the environment, for an agent whose request is a
// process the spare starts (the exec agent's command, the Node agent's worker): it
// inherits TMPDIR, and one from the function's env would name a directory outside the
// request's own /tmp, which the Landlock domain no longer lets it write.
absl::Status IsolateSpareForChildren(absl::StatusOr<LandlockBase>& landlock);

}  // namespace zygo::agents::isolation

#endif  // ZYGO_AGENTS_ISOLATION_ISOLATION_H_
