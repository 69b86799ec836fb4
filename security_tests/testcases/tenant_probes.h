// Escape probe subcommands that act as another tenant would: read what pid 1 and other
// processes hold, forge zygo's report records, open socket families, make setuid files
// and device nodes, and hold the kernel's per-user and host-wide counters.
#ifndef ZYGO_SECURITY_TESTS_TESTCASES_TENANT_PROBES_H_
#define ZYGO_SECURITY_TESTS_TESTCASES_TENANT_PROBES_H_

#include <span>

#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {

std::span<const ProbeSpec> TenantProbes();

}  // namespace zygo::security_tests

#endif  // ZYGO_SECURITY_TESTS_TESTCASES_TENANT_PROBES_H_
