// A gtest fixture for suites in which this test process plays the machine of a
// FakeInternet (MachineSession): the suite joins it once, and everything a test forks
// (zygo, python, a supervisor) runs there. Tests skip without root, pasta or python3, and
// fail with the reason when the fake internet could not be set up.
#ifndef ZYGO_SECURITY_TESTS_MACHINE_SUITE_H_
#define ZYGO_SECURITY_TESTS_MACHINE_SUITE_H_

#include <string>

#include "gtest/gtest.h"
#include "testing/fake_internet.h"

namespace zygo::testing {

class MachineSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static inline FakeInternet* internet_ = nullptr;  // the session's, while it runs

 private:
  static bool CanRun();

  static inline MachineSession* session_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
};

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_MACHINE_SUITE_H_
