// core:forked_zygote_test's runtime sandbox and agent, made of real processes. The test
// stands for the supervisor. Runtime makes a user namespace R and, in it, a pid namespace
// whose pid 1 (the runtime) lives in a private tmpfs root (/code, /tmp, /proc with a mask
// and a read-only /proc/sys, /dev/null, /dev/shm) in a mount namespace of its own, so that
// nothing can reach the host even if a check fails. On request the runtime forks a child
// that unshares as a runtime's agent does and forks Z, which sends its pid, waits, and when
// told to go on runs the check the test gave and reports it. Test only.
#ifndef ZYGO_CORE_INTERNAL_FORKED_ZYGOTE_FIXTURE_H_
#define ZYGO_CORE_INTERNAL_FORKED_ZYGOTE_FIXTURE_H_

#include <sched.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/unique_fd.h"
#include "core/forked_zygote.h"

namespace zygo::core::testing {

// What a runtime's agent unshares before it forks a function zygote.
inline constexpr unsigned long kZygoteNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
inline constexpr char kCodeFile[] = "handler.py";
inline constexpr char kCodeText[] = "print('hello from /code')\n";

// Who the runtime's processes are: R maps `uid`/`gid` one to one (and 0 to the test's own
// ids); the runtime's agent forks as them, so Z is them.
struct Ids {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// What Z saw before it was sealed.
struct ZygoteBefore {
  dev_t tmp = 0;
  dev_t shm = 0;
  bool lo_up = false;
};

// What Z checks once told to go on: "ok", or what it found wrong first. Runs in Z.
using ZygoteCheck = std::string (*)(const ZygoteBefore& before, const Ids& ids);

// What the runtime's forked child unshares, and whether Z forks once more (the one that
// reports then is pid 2 of the new pid namespace; pid 1 waits).
struct ForkRequest {
  unsigned long flags = kZygoteNamespaces;
  bool second_child = false;
};

// A function zygote the runtime forked, waiting to be told to go on.
struct Zygote {
  base::UniqueFd channel;
  pid_t pid = 0;  // in the test's pid namespace
  base::UniqueFd pidfd;

  // Lets it run its check; its report.
  std::string Go();
};

class Runtime {
 public:
  // Starts R's first process and, inside, the runtime, whose zygotes will run `check`.
  // `error()` says why it could not.
  Runtime(const Ids& ids, ZygoteCheck check);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const std::string& error() const { return error_; }

  // Asks the runtime to fork a zygote; nullopt if it did not say hello.
  std::optional<Zygote> Fork(const ForkRequest& request = {});

  // What SealForkedZygote needs: the runtime (pid 1 of R's pid namespace) and `zygote`.
  ForkedZygoteTarget Target(const Zygote& zygote) const;

  // The runtime's (R's) mount table.
  std::string Mounts() const;

 private:
  bool WriteMaps(const Ids& ids) const;

  pid_t init_ = -1;     // R's first process, in the test's pid namespace
  pid_t runtime_ = -1;  // pid 1 of R's pid namespace
  base::UniqueFd control_, runtime_pidfd_;
  std::string error_;
};

// The function's code (kCodeFile), in a directory of its own under the host's /tmp that
// any user can reach; removed with this.
class CodeDir {
 public:
  CodeDir();
  ~CodeDir();
  CodeDir(const CodeDir&) = delete;
  CodeDir& operator=(const CodeDir&) = delete;

  const std::string& path() const { return path_; }
  const std::string& base() const { return base_; }  // path()'s parent, the test's own

  // Options for `path()` as it is now, 1 MiB tmpfs, `ids.gid`, DefaultUsernsLimits(0).
  ForkedZygoteOptions Options(const Ids& ids) const;

 private:
  std::string base_, path_;
};

std::string ReadFile(const std::string& path);

// Entries of a directory but "." and "..".
std::vector<std::string> List(const char* path);

bool LoopbackUp();

}  // namespace zygo::core::testing

#endif  // ZYGO_CORE_INTERNAL_FORKED_ZYGOTE_FIXTURE_H_
