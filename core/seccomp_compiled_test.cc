#include "core/seccomp_compiled.h"

#include <cstring>

#include "gtest/gtest.h"

namespace zygo::core {
namespace {

bool SameProgram(const std::vector<struct sock_filter>& a,
                 const std::vector<struct sock_filter>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(struct sock_filter)) == 0;
}

// The build-time programs are exactly what libseccomp builds from the policy now.
TEST(CompiledSeccompPrograms, MatchTheLibseccompBuild) {
  for (SeccompProfile profile : {SeccompProfile::kSandbox, SeccompProfile::kRuntimeZygote}) {
    absl::StatusOr<SeccompPrograms> built = BuildSeccompPrograms(profile);
    ASSERT_TRUE(built.ok()) << built.status();
    SeccompPrograms compiled = CompiledSeccompPrograms(profile);
    EXPECT_TRUE(SameProgram(compiled.allowlist, built->allowlist));
    EXPECT_TRUE(
        SameProgram(compiled.allowlist_without_listener, built->allowlist_without_listener));
    EXPECT_TRUE(SameProgram(compiled.explaining_allowlist, built->explaining_allowlist));
    EXPECT_TRUE(SameProgram(compiled.argument_denials, built->argument_denials));
    EXPECT_EQ(compiled.allowed_syscalls, built->allowed_syscalls);
    EXPECT_EQ(compiled.denied_examples, built->denied_examples);
    EXPECT_GT(compiled.allowlist.size(), 100u);
  }
  EXPECT_FALSE(SameProgram(CompiledSeccompPrograms(SeccompProfile::kRuntimeZygote).allowlist,
                           CompiledSeccompPrograms().allowlist));
}

}  // namespace
}  // namespace zygo::core
