// The seccomp profiles, installed in forked children that then attempt the calls: a runtime
// zygote's allowlist lets exactly two more unshare values through than a sandbox's, and a
// function zygote's seal filter, stacked on it from its bytes as the agent installs it,
// makes the pair refuse exactly what a sandbox's allowlist refuses. Every refusal is
// beside an unshare made under the same filters.
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "core/base/errno_status.h"
#include "core/base/sys/seccomp.h"
#include "core/seccomp_compiled.h"
#include "core/seccomp_policy.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

constexpr unsigned long kFunctionZygote =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;

// A call a child attempts: 0, or the errno it failed with. Each is harmless if it works:
// it makes namespaces for the child alone, or names paths and fds that do not exist.
struct Attempt {
  std::string name;
  std::function<int()> call;
};

int Result(long rc) { return rc < 0 ? errno : 0; }

Attempt Unshare(const std::string& name, unsigned long flags) {
  return {"unshare(" + name + ")", [flags] { return Result(syscall(SYS_unshare, flags)); }};
}

// clone with namespace flags: the child, if one is made, exits at once.
Attempt CloneWith(const std::string& name, unsigned long flags) {
  return {"clone(" + name + ")", [flags] {
            const long pid = syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0);
            if (pid == 0) _exit(0);
            if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
            return Result(pid);
          }};
}

// Calls the profiles must refuse alike, then the controls: the function zygote's two
// unshares, and a spare's, allowed everywhere.
std::vector<Attempt> UnshareAttempts() {
  return {
      Unshare("NEWPID", CLONE_NEWPID),
      Unshare("NEWNET", CLONE_NEWNET),
      Unshare("NEWUSER", CLONE_NEWUSER),
      Unshare("NEWUSER|NEWNS|NEWPID", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID),
      Unshare("NEWUSER|NEWNS|NEWNET", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET),
      Unshare("function zygote's|NEWCGROUP", kFunctionZygote | CLONE_NEWCGROUP),
      Unshare("function zygote's|NEWTIME", kFunctionZygote | CLONE_NEWTIME),
      Unshare("NEWCGROUP|NEWUSER", CLONE_NEWCGROUP | CLONE_NEWUSER),
      CloneWith("NEWPID", CLONE_NEWPID),
      CloneWith("NEWUSER", CLONE_NEWUSER),
      {"mount(missing paths)",
       [] {
         return Result(mount("/zygo-missing-a", "/zygo-missing-b", nullptr, MS_BIND, nullptr));
       }},
      {"setns(-1)", [] { return Result(syscall(SYS_setns, -1, 0)); }},
      Unshare("function zygote's", kFunctionZygote),
      // In a user namespace of its own (a spare's unshare), for CAP_SYS_ADMIN without root.
      {"unshare(NEWCGROUP)",
       [] {
         const int spare = Result(syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS));
         return spare != 0 ? spare : Result(syscall(SYS_unshare, CLONE_NEWCGROUP));
       }},
      Unshare("NEWUSER|NEWNS", CLONE_NEWUSER | CLONE_NEWNS),
  };
}

// Installs the filters in a forked child (with no_new_privs) and makes each of `attempts`
// in a child of its own that inherits them (so no attempt sees namespaces an earlier one
// made); returns each one's result.
std::vector<int> AttemptInChild(const std::function<bool()>& install,
                                const std::vector<Attempt>& attempts) {
  int results[2];
  if (pipe(results) != 0) return {};
  const pid_t child = fork();
  if (child == 0) {
    close(results[0]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !install()) _exit(1);
    for (const Attempt& attempt : attempts) {
      const pid_t one = fork();
      if (one == 0) {
        const int err = attempt.call();
        _exit(write(results[1], &err, sizeof(err)) == sizeof(err) ? 0 : 2);
      }
      int status = 0;
      if (one < 0 || waitpid(one, &status, 0) != one || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        _exit(3);
      }
    }
    _exit(0);
  }
  close(results[1]);
  std::vector<int> errors;
  int err;
  while (read(results[0], &err, sizeof(err)) == sizeof(err)) errors.push_back(err);
  close(results[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return errors;
}

bool InstallAllowlist(SeccompProfile profile) {
  int listener = -1;
  return InstallSeccompInChild(CompiledSeccompPrograms(profile), /*explain=*/false, &listener).ok();
}

bool InstallBytes(const std::string& bytes) {
  struct sock_fprog program;
  program.len = static_cast<unsigned short>(bytes.size() / sizeof(struct sock_filter));
  program.filter = reinterpret_cast<struct sock_filter*>(const_cast<char*>(bytes.data()));
  return base::sys::RawSeccompSetFilter(&program) == 0;
}

std::string SealBytes() {
  absl::StatusOr<std::vector<struct sock_filter>> seal = BuildFunctionZygoteSealFilter();
  EXPECT_TRUE(seal.ok()) << seal.status();
  return seal.ok() ? SeccompProgramBytes(*seal) : "";
}

// "name: result" for each attempt, to compare and to read in a failure.
std::vector<std::string> Named(const std::vector<Attempt>& attempts, const std::vector<int>& errs) {
  std::vector<std::string> named;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const char* result = i >= errs.size() ? "(not made)"
                         : errs[i] == 0   ? "0"
                                          : base::ErrnoName(errs[i]);
    named.push_back(attempts[i].name + ": " + result);
  }
  return named;
}

std::vector<std::string> Expected(const std::vector<Attempt>& attempts,
                                  const std::vector<std::string>& allowed) {
  std::vector<int> errs;
  for (const Attempt& attempt : attempts) {
    bool is_allowed = false;
    for (const std::string& name : allowed) is_allowed |= attempt.name == name;
    errs.push_back(is_allowed ? 0 : EPERM);
  }
  return Named(attempts, errs);
}

class SeccompProfilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The allowed unshares need user namespaces the host lets this user make.
    const std::vector<int> host = AttemptInChild(
        [] { return true; }, {Unshare("NEWUSER|NEWNS", CLONE_NEWUSER | CLONE_NEWNS)});
    if (host != std::vector<int>{0}) GTEST_SKIP() << "this host refuses unshare(CLONE_NEWUSER)";
  }
  const std::vector<Attempt> attempts_ = UnshareAttempts();
};

TEST_F(SeccompProfilesTest, ASandboxAllowsOnlyASparesUnshare) {
  EXPECT_EQ(
      Named(attempts_,
            AttemptInChild([] { return InstallAllowlist(SeccompProfile::kSandbox); }, attempts_)),
      Expected(attempts_, {"unshare(NEWUSER|NEWNS)"}));
}

TEST_F(SeccompProfilesTest, ARuntimeZygoteAlsoAllowsAFunctionZygotesTwoUnshares) {
  EXPECT_EQ(Named(attempts_,
                  AttemptInChild([] { return InstallAllowlist(SeccompProfile::kRuntimeZygote); },
                                 attempts_)),
            Expected(attempts_, {"unshare(function zygote's)", "unshare(NEWCGROUP)",
                                 "unshare(NEWUSER|NEWNS)"}));
}

TEST_F(SeccompProfilesTest, TheSealFilterOverARuntimeZygotesIsASandboxsPolicyAgain) {
  const std::string seal = SealBytes();
  ASSERT_FALSE(seal.empty());
  EXPECT_EQ(Named(attempts_, AttemptInChild(
                                 [&seal] {
                                   return InstallAllowlist(SeccompProfile::kRuntimeZygote) &&
                                          InstallBytes(seal);
                                 },
                                 attempts_)),
            Expected(attempts_, {"unshare(NEWUSER|NEWNS)"}));
}

// Alone, the seal filter refuses only unshare, compared on all 64 bits, and lets foreign
// ABIs through to the filter below it (here none: the kernel answers).
TEST_F(SeccompProfilesTest, TheSealFilterRefusesOnlyUnshare) {
  const std::string seal = SealBytes();
  ASSERT_FALSE(seal.empty());
  const std::vector<Attempt> attempts = {
      Unshare("NEWPID", CLONE_NEWPID),
      Unshare("NEWUSER|NEWNS|NEWNET", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET),
      Unshare("NEWUSER|NEWNS, upper bits set", (1UL << 32) | CLONE_NEWUSER | CLONE_NEWNS),
      // In a user namespace of its own (a spare's unshare), for CAP_SYS_ADMIN without root.
      {"unshare(NEWCGROUP)",
       [] {
         const int spare = Result(syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS));
         return spare != 0 ? spare : Result(syscall(SYS_unshare, CLONE_NEWCGROUP));
       }},
      {"mount(missing paths)",
       [] {
         return Result(mount("/zygo-missing-a", "/zygo-missing-b", nullptr, MS_BIND, nullptr));
       }},
      {"x32 getpid", [] { return Result(syscall(base::sys::kX32SyscallBit | SYS_getpid)); }},
      Unshare("NEWUSER|NEWNS", CLONE_NEWUSER | CLONE_NEWNS),
  };
  const std::vector<int> host = AttemptInChild([] { return true; }, attempts);
  const std::vector<int> sealed = AttemptInChild([&seal] { return InstallBytes(seal); }, attempts);
  ASSERT_EQ(host.size(), attempts.size());
  ASSERT_EQ(sealed.size(), attempts.size());
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(sealed[i], EPERM) << attempts[i].name;
  // The kernel answers the rest as it does without the filter (ENOENT; ENOSYS without
  // CONFIG_X86_X32_ABI), and the spare's pair is made.
  for (size_t i = 4; i < attempts.size(); ++i) EXPECT_EQ(sealed[i], host[i]) << attempts[i].name;
  EXPECT_EQ(sealed.back(), 0);
}

// The bytes are the program: as many instructions as libseccomp built, in order.
TEST(SeccompProgramBytes, AreTheSockFilterArray) {
  absl::StatusOr<std::vector<struct sock_filter>> seal = BuildFunctionZygoteSealFilter();
  ASSERT_TRUE(seal.ok()) << seal.status();
  const std::string bytes = SeccompProgramBytes(*seal);
  ASSERT_EQ(bytes.size(), seal->size() * sizeof(struct sock_filter));
  EXPECT_EQ(memcmp(bytes.data(), seal->data(), bytes.size()), 0);
}

}  // namespace
}  // namespace zygo::core
