// How a security test starts its supervisor (testing/supervisor_process.h): the one built
// with the test, with an environment of PATH and the fake internet's DNS server
// (testing/fake_internet.h) only, so nothing of the test runner's reaches it.
#ifndef ZYGO_SECURITY_TESTS_SUPERVISOR_OPTIONS_H_
#define ZYGO_SECURITY_TESTS_SUPERVISOR_OPTIONS_H_

#include "testing/supervisor_process.h"

namespace zygo::testing {

SupervisorProcess::Options SecurityTestSupervisor();

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_SUPERVISOR_OPTIONS_H_
