// The contract between the sandbox's setup child and zygo-init, the program it becomes:
// which fds the init starts with and what its argv holds. Both sides include this.
//
//   fds:  0, 1, 2             the command's stdio
//         3 .. 3+N-1          the fds the command inherits as 3, 4, ...
//         3+N                 the report pipe to Launch (ChildRecords)
//         4+N                 the seccomp listener, when the filter has one (else closed)
//   argv: "zygo-init" N K CANDIDATE_1 .. CANDIDATE_K ARGV_0 ARGV_1 ...
//         (N inherited fds, K exec paths for ARGV_0); the environment is the command's.
#ifndef ZYGO_CORE_INIT_INIT_LAYOUT_H_
#define ZYGO_CORE_INIT_INIT_LAYOUT_H_

#include <signal.h>

namespace zygo::core::init {

inline constexpr char kInitName[] = "zygo-init";
inline constexpr int kFirstInheritedFd = 3;
inline constexpr int kMaxInheritedFds = 8;
inline constexpr int kMaxCandidates = 64;
inline constexpr int kArgInheritedCount = 1;
inline constexpr int kArgCandidateCount = 2;
inline constexpr int kArgFirstCandidate = 3;

// The signals forwarded to the command: Launch blocks them before clone (so none is lost
// before zygo-init's loop runs), and zygo-init passes them on.
inline constexpr int kForwardedSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                            SIGUSR1, SIGUSR2, SIGWINCH};

inline constexpr int ReportFd(int inherited) { return kFirstInheritedFd + inherited; }
inline constexpr int ListenerFd(int inherited) { return kFirstInheritedFd + inherited + 1; }

// The steps zygo-init itself can fail at, reported on the report fd as a failed setup
// step. core::LaunchStep gives them these numbers and their names.
enum class InitStep : int {
  kForkCommand = 100,
  kExecPipe,
  kInitSignals,  // zygo-init's signalfd
};

}  // namespace zygo::core::init

#endif  // ZYGO_CORE_INIT_INIT_LAYOUT_H_
