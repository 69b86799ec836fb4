#include "security_tests/machine_suite.h"

#include <unistd.h>

#include <memory>

namespace zygo::testing {

bool MachineSuite::CanRun() {
  return geteuid() == 0 && access("/usr/bin/pasta", X_OK) == 0 &&
         access("/usr/bin/python3", X_OK) == 0;
}

void MachineSuite::SetUpTestSuite() {
  if (!CanRun()) return;
  absl::StatusOr<std::unique_ptr<MachineSession>> session = MachineSession::Start();
  if (!session.ok()) {
    setup_error_ = new std::string(session.status().ToString());
    return;
  }
  session_ = session->release();
  internet_ = &session_->internet();
}

void MachineSuite::TearDownTestSuite() {
  delete session_;  // the thread back in its own namespace first, then the internet gone
  session_ = nullptr;
  internet_ = nullptr;
  delete setup_error_;
  setup_error_ = nullptr;
}

void MachineSuite::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, nftables)";
  if (access("/usr/bin/pasta", X_OK) != 0) GTEST_SKIP() << "needs pasta (passt package)";
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
  ASSERT_NE(internet_, nullptr);
}

}  // namespace zygo::testing
