// What core/nested_tmp.cc and core/forked_zygote.cc share: a short-lived helper child that
// acts in another process's namespaces for a multithreaded caller, the steps it takes
// there, and the caller's checks of that process's namespaces before it starts one.
#ifndef ZYGO_CORE_INTERNAL_NAMESPACE_HELPER_H_
#define ZYGO_CORE_INTERNAL_NAMESPACE_HELPER_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::core::internal {

// ---- Child side. A helper shares its caller's memory (CLONE_VM | CLONE_VFORK): raw
// syscalls only, no allocation, no lock, no glibc call that acts on the caller's other
// threads (glibc's setresuid does).

// The step a helper (or a child of its own) failed at, written before it exits, read by
// the caller once it has.
struct HelperFailure {
  const char* step = nullptr;    // a string literal
  const char* detail = nullptr;  // what the step acted on (a path), or null
  int err = 0;
};

// Records `step` and `err` (an errno value) and returns 1, the helper's exit status.
int Fail(HelperFailure* failure, const char* step, int err);
// The same, naming what the step acted on ("STEP DETAIL: strerror").
int Fail(HelperFailure* failure, const char* step, const char* detail, int err);

// Makes the calling helper the owner of user namespace `user`, from `user`'s parent
// namespace, where the helper must have CAP_SETUID: reads the owner (NS_GET_OWNER_UID)
// and, if its euid differs, takes it with setresuid under PR_SET_KEEPCAPS and raises its
// effective set again. A process of the parent namespace whose euid owns `user` has every
// capability in `user` and the namespaces it owns. Sets `*owner`; returns 0, or records
// the failed step and returns 1.
int BecomeOwnerOf(HelperFailure* failure, int user, uid_t* owner);

// Writes one-to-one maps of `uid` and `gid` (as the writer's user namespace sees them)
// into /proc/PID/uid_map and gid_map under `proc` (an O_PATH fd of /proc/PID). The writer
// needs CAP_SETUID and CAP_SETGID in the parent of PID's user namespace, and to be in that
// namespace. Returns 0, or records the failed step and returns 1.
int WriteIdentityMaps(HelperFailure* failure, int proc, uint32_t uid, uint32_t gid);

// Writes `text` to `name` under directory fd `dir`. False (errno set) unless all of it
// was written.
bool WriteFileAt(int dir, const char* name, const char* text);

// A tmpfs's size and nr_inodes as fsconfig takes them, formatted by the caller.
struct TmpfsSize {
  char size[32] = {};
  char inodes[32] = {};
};

// Makes a detached tmpfs (mode 1777, nosuid, nodev) of `size` and returns its mount fd
// (close-on-exec), or records the failed step and returns -1. Its superblock belongs to the
// helper's user namespace; its root to the helper's fsuid.
int MakeTmpfs(HelperFailure* failure, const TmpfsSize& size);

// Runs `body(args)` in a child of the helper (CLONE_VM | CLONE_VFORK, exit signal 0) on
// the stack whose top is `stack_top`, and waits for it. Returns 0 when it exited 0;
// otherwise records a failure (its own, or what ended it) and returns 1.
int RunNested(HelperFailure* failure, int (*body)(void*), void* args, char* stack_top);

// ---- Parent side.

// A helper's stack: mapped by the caller, unmapped when this goes.
class HelperStack {
 public:
  static absl::StatusOr<HelperStack> Map();
  HelperStack(HelperStack&& other) noexcept;
  HelperStack& operator=(HelperStack&&) = delete;
  HelperStack(const HelperStack&) = delete;
  ~HelperStack();
  char* top() const;

 private:
  explicit HelperStack(void* base) : base_(base) {}
  void* base_ = nullptr;
};

// Runs `body(args)` in a helper child on a stack of its own with every signal blocked
// (no handler of the caller's may run on it), waits for it (__WALL: its exit signal is 0,
// so no other waiter of the caller's reaps it), and turns what it recorded in `failure`
// into "STEP [DETAIL]: strerror" (ErrnoStatus's code). `name` names the helper if it died without
// a record.
absl::Status RunHelper(int (*body)(void*), void* args, const HelperFailure& failure,
                       absl::string_view name);

// The size (at least 4 KiB) and an inode per 4 KiB page allowed, at least 1024: each
// inode costs kernel memory outside the size limit, and the kernel's own default is one
// per page of RAM.
TmpfsSize TmpfsSizeFor(int64_t bytes);

// fstat, naming `what` on failure.
absl::StatusOr<struct stat> StatOf(int fd, absl::string_view what);

bool SameFile(const struct stat& a, const struct stat& b);

// Whether the caller's own user namespace is `user_ns` (a stat of its nsfs file).
absl::StatusOr<bool> CallerIsIn(const struct stat& user_ns);

// FailedPrecondition(`refusal`) unless user or pid namespace `ns` was made directly in
// `parent` (NS_GET_PARENT; EPERM from it means a namespace not below the caller's).
absl::Status CheckMadeIn(int ns, const struct stat& parent, absl::string_view refusal);

// FailedPrecondition(`refusal`) unless namespace `ns` is owned by user namespace `owner`
// (NS_GET_USERNS).
absl::Status CheckOwnedBy(int ns, const struct stat& owner, absl::string_view refusal);

// FailedPrecondition("WHO is gone") unless the process of `pidfd` is alive. Called after
// files were opened by its pid, so a pid reused before then is refused.
absl::Status CheckAlive(int pidfd, absl::string_view who);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_NAMESPACE_HELPER_H_
