// The escape probe's subcommands, one table per facility (each in its *_probes.cc), for
// escape_probe.cc's entry point to list and run.
#ifndef ZYGO_SECURITY_TESTS_TESTCASES_ESCAPE_PROBES_H_
#define ZYGO_SECURITY_TESTS_TESTCASES_ESCAPE_PROBES_H_

#include <span>

#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {

std::span<const ProbeSpec> FilesystemProbes();  // the filesystem
std::span<const ProbeSpec> NamespaceProbes();   // new namespaces and joining others
std::span<const ProbeSpec>
KernelProbes();  // kernel attack surface a sandbox should not reach at all
std::span<const ProbeSpec> IdentityProbes();  // terminal injection
std::span<const ProbeSpec> ResourceProbes();  // resource limits (never run these outside a sandbox)
std::span<const ProbeSpec> InheritedProbes();  // inherited state
std::span<const ProbeSpec> NetworkProbes();    // the network

}  // namespace zygo::security_tests

#endif  // ZYGO_SECURITY_TESTS_TESTCASES_ESCAPE_PROBES_H_
