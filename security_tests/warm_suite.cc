// Setting up and tearing down a warm suite's directory and supervisor.
#include "security_tests/warm_suite.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"

namespace zygo::testing {

void WarmSuite::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (cgroups, namespaces)";
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  // Short: the sockets' paths must fit in sun_path.
  char dir[] = "/tmp/warm-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr) << strerror(errno);
  dir_ = dir;
  ASSERT_EQ(mkdir((dir_ + "/code").c_str(), 0755), 0) << strerror(errno);
}

void WarmSuite::TearDown() {
  supervisor_.reset();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

void WarmSuite::StartSupervisor(SupervisorProcess::Options options) {
  supervisor_.reset();
  options.dir = dir_;
  absl::StatusOr<std::unique_ptr<SupervisorProcess>> started = SupervisorProcess::Start(options);
  if (!started.ok() && absl::StrContains(started.status().message(), "no usable cgroups")) {
    GTEST_SKIP() << started.status();
  }
  ASSERT_TRUE(started.ok()) << started.status();
  supervisor_ = *std::move(started);
}

absl::Status WarmSuite::Up(const std::string& name, const std::string& spec,
                           const std::string& base_dir) {
  return supervisor_->Register(name, spec, base_dir.empty() ? dir_ + "/code" : base_dir);
}

void WarmSuite::WriteFile(const std::string& relative, const std::string& content) const {
  std::ofstream(dir_ + "/" + relative) << content;
}

}  // namespace zygo::testing
