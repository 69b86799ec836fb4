#include "core/internal/namespace_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/capabilities.h"
#include "core/base/sys/mount_api.h"
#include "core/base/sys/namespaces.h"
#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"

namespace zygo::core::internal {
namespace {

constexpr size_t kStackBytes = 64 * 1024;
constexpr int64_t kMinInodes = 1024;

// Formats "ID ID 1\n" (a one-to-one id map line) without stdio.
void FormatIdentityMap(uint32_t id, char* out, size_t size) {
  char digits[16];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + id % 10);
    id /= 10;
  } while (id != 0);
  size_t at = 0;
  for (int copy = 0; copy < 2; ++copy) {
    for (size_t i = n; i > 0 && at + 1 < size; --i) out[at++] = digits[i - 1];
    if (at + 1 < size) out[at++] = ' ';
  }
  if (at + 2 < size) {
    out[at++] = '1';
    out[at++] = '\n';
  }
  out[at] = '\0';
}

}  // namespace

int Fail(HelperFailure* failure, const char* step, int err) {
  return Fail(failure, step, nullptr, err);
}

int Fail(HelperFailure* failure, const char* step, const char* detail, int err) {
  failure->step = step;
  failure->detail = detail;
  failure->err = err;
  return 1;
}

int BecomeOwnerOf(HelperFailure* failure, int user, uid_t* owner) {
  if (const int rc = base::sys::RawNamespaceOwnerUid(user, owner); rc < 0) {
    return Fail(failure, "ioctl(NS_GET_OWNER_UID)", -rc);
  }
  if (static_cast<uid_t>(::syscall(SYS_geteuid)) == *owner) return 0;
  if (::syscall(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
    return Fail(failure, "PR_SET_KEEPCAPS", errno);
  }
  if (::syscall(SYS_setresuid, *owner, *owner, *owner) != 0) {
    return Fail(failure, "setresuid(the namespace's owner)", errno);
  }
  if (const int rc = base::sys::RawRaiseEffectiveToPermitted(); rc < 0) {
    return Fail(failure, "capset(effective = permitted)", -rc);
  }
  return 0;
}

bool WriteFileAt(int dir, const char* name, const char* text) {
  const int fd = static_cast<int>(::syscall(SYS_openat, dir, name, O_WRONLY | O_CLOEXEC));
  if (fd < 0) return false;
  const size_t length = strlen(text);
  const bool written = ::syscall(SYS_write, fd, text, length) == static_cast<long>(length);
  const int saved = errno;
  ::syscall(SYS_close, fd);
  errno = saved;
  return written;
}

int WriteIdentityMaps(HelperFailure* failure, int proc, uint32_t uid, uint32_t gid) {
  char map[48];
  FormatIdentityMap(uid, map, sizeof(map));
  if (!WriteFileAt(proc, "uid_map", map)) return Fail(failure, "write(uid_map)", errno);
  FormatIdentityMap(gid, map, sizeof(map));
  if (!WriteFileAt(proc, "gid_map", map)) return Fail(failure, "write(gid_map)", errno);
  return 0;
}

int MakeTmpfs(HelperFailure* failure, const TmpfsSize& size) {
  namespace sys = base::sys;
  const int context = sys::RawFsopen("tmpfs");
  if (context < 0) {
    Fail(failure, "fsopen(tmpfs)", -context);
    return -1;
  }
  int rc = sys::RawFsconfigString(context, "size", size.size);
  if (rc < 0) Fail(failure, "fsconfig(tmpfs size)", -rc);
  if (rc == 0 && (rc = sys::RawFsconfigString(context, "nr_inodes", size.inodes)) < 0) {
    Fail(failure, "fsconfig(tmpfs nr_inodes)", -rc);
  }
  if (rc == 0 && (rc = sys::RawFsconfigString(context, "mode", "1777")) < 0) {
    Fail(failure, "fsconfig(tmpfs mode)", -rc);
  }
  if (rc == 0 && (rc = sys::RawFsconfigCreate(context)) < 0) {
    Fail(failure, "fsconfig(tmpfs create)", -rc);
  }
  if (rc == 0 && (rc = sys::RawFsmount(context, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
    Fail(failure, "fsmount(tmpfs)", -rc);
  }
  ::syscall(SYS_close, context);
  return rc < 0 ? -1 : rc;
}

int RunNested(HelperFailure* failure, int (*body)(void*), void* args, char* stack_top) {
  const pid_t child = ::clone(body, stack_top, CLONE_VM | CLONE_VFORK, args);
  if (child < 0) return Fail(failure, "clone(a helper's child)", errno);
  int status = 0;
  while (::syscall(SYS_wait4, child, &status, __WALL, nullptr) < 0) {
    if (errno != EINTR) return Fail(failure, "wait4(a helper's child)", errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  // Killed without a record: its pid namespace's init died under it (SIGKILL).
  if (failure->step == nullptr) Fail(failure, "a helper's child was killed", ESRCH);
  return 1;
}

absl::StatusOr<HelperStack> HelperStack::Map() {
  void* base = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) return base::ErrnoStatus(errno, "mmap(helper stack)");
  return HelperStack(base);
}

HelperStack::HelperStack(HelperStack&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)) {}

HelperStack::~HelperStack() {
  if (base_ != nullptr) ::munmap(base_, kStackBytes);
}

char* HelperStack::top() const { return static_cast<char*>(base_) + kStackBytes; }

absl::Status RunHelper(int (*body)(void*), void* args, const HelperFailure& failure,
                       absl::string_view name) {
  ZYGO_ASSIGN_OR_RETURN(HelperStack stack, HelperStack::Map());
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t child = ::clone(body, stack.top(), CLONE_VM | CLONE_VFORK, args);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (child < 0) return base::ErrnoStatus(clone_errno, absl::StrCat("clone(", name, ")"));
  int status = 0;
  while (::waitpid(child, &status, __WALL) < 0 && errno == EINTR) {
  }
  if (failure.step != nullptr) {
    return base::ErrnoStatus(failure.err, failure.detail == nullptr
                                              ? std::string(failure.step)
                                              : absl::StrCat(failure.step, " ", failure.detail));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(name, " did not finish"));
  }
  return absl::OkStatus();
}

TmpfsSize TmpfsSizeFor(int64_t bytes) {
  TmpfsSize text;
  const int64_t size = std::max<int64_t>(bytes, 4096);
  snprintf(text.size, sizeof(text.size), "%lld", static_cast<long long>(size));
  snprintf(text.inodes, sizeof(text.inodes), "%lld",
           static_cast<long long>(std::max(kMinInodes, size / 4096)));
  return text;
}

absl::StatusOr<struct stat> StatOf(int fd, absl::string_view what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return base::ErrnoStatus(errno, absl::StrCat("fstat(", what, ")"));
  return st;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

absl::StatusOr<bool> CallerIsIn(const struct stat& user_ns) {
  base::UniqueFd own(::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) return base::ErrnoStatus(errno, "open(/proc/self/ns/user)");
  ZYGO_ASSIGN_OR_RETURN(struct stat own_ns, StatOf(own.get(), "own ns/user"));
  return SameFile(own_ns, user_ns);
}

namespace {

// The namespace `request` (NS_GET_PARENT, NS_GET_USERNS) names of `ns`, as a stat.
absl::StatusOr<struct stat> RelatedNamespace(int ns, unsigned long request, const char* what) {
  base::UniqueFd related(::ioctl(ns, request));
  if (!related.valid()) return base::ErrnoStatus(errno, absl::StrCat("ioctl(", what, ")"));
  return StatOf(related.get(), what);
}

}  // namespace

absl::Status CheckMadeIn(int ns, const struct stat& parent, absl::string_view refusal) {
  absl::StatusOr<struct stat> made_in = RelatedNamespace(ns, NS_GET_PARENT, "NS_GET_PARENT");
  if (!made_in.ok() && !absl::IsPermissionDenied(made_in.status())) return made_in.status();
  if (!made_in.ok() || !SameFile(*made_in, parent)) {
    return absl::FailedPreconditionError(refusal);
  }
  return absl::OkStatus();
}

absl::Status CheckOwnedBy(int ns, const struct stat& owner, absl::string_view refusal) {
  ZYGO_ASSIGN_OR_RETURN(struct stat owned_by, RelatedNamespace(ns, NS_GET_USERNS, "NS_GET_USERNS"));
  if (!SameFile(owned_by, owner)) return absl::FailedPreconditionError(refusal);
  return absl::OkStatus();
}

absl::Status CheckAlive(int pidfd, absl::string_view who) {
  if (const int rc = base::sys::RawPidfdSendSignal(pidfd, 0); rc < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " is gone (", base::ErrnoName(-rc), ")"));
  }
  return absl::OkStatus();
}

}  // namespace zygo::core::internal
