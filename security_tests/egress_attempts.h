// The one-shot egress attempts the root and the rootless network escape tests both make:
// the probe's targets (security_tests/network_probe.h) for a sandbox run with
// `--net egress --allow allowed.test:8080 --allow rebind.test:8080`, and the checks on its
// verdicts against the fake internet, each refusal after its control.
#ifndef ZYGO_SECURITY_TESTS_EGRESS_ATTEMPTS_H_
#define ZYGO_SECURITY_TESTS_EGRESS_ATTEMPTS_H_

#include <map>
#include <string>
#include <vector>

#include "testing/fake_internet.h"

namespace zygo::testing {

// The allowlist the targets are written for, as zygo run flags.
std::vector<std::string> EgressFlags();
std::vector<std::string> EgressTargets();

// What the fake DNS servers had seen before the run; call Drain() on the internet too.
struct EgressBaseline {
  int other_test_queries = 0;  // other.test at the upstream: must not grow
  int other_dns_queries = 0;   // anything at the DNS server the sandbox may not reach
};
EgressBaseline TakeEgressBaseline(FakeInternet& internet);

// TCP, DNS, UDP and ICMP: only the allowed name on its port gets through.
void ExpectOnlyAllowlistedEgress(std::map<std::string, std::string>& verdicts,
                                 FakeInternet& internet, const EgressBaseline& before);

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_EGRESS_ATTEMPTS_H_
