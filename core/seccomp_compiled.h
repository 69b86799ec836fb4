// The seccomp programs, compiled to BPF at build time. libseccomp takes over a
// millisecond to build the allowlist; the programs never change for a given
// architecture and libseccomp, so Bazel runs BuildSeccompPrograms() once per profile
// (core/tools/seccomp_compile.cc) and every sandbox reuses the result.
#ifndef ZYGO_CORE_SECCOMP_COMPILED_H_
#define ZYGO_CORE_SECCOMP_COMPILED_H_

#include "core/seccomp_policy.h"

namespace zygo::core {

// The same programs BuildSeccompPrograms(profile) returns, without running libseccomp.
SeccompPrograms CompiledSeccompPrograms(SeccompProfile profile = SeccompProfile::kSandbox);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SECCOMP_COMPILED_H_
