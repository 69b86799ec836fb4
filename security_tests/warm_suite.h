// The gtest fixture for attempts against a real supervisor (//supervisor, driven through
// its HTTP API by SupervisorProcess) on this machine: a short directory of the test's own
// for its sockets, state and the functions' code, removed afterwards.
#ifndef ZYGO_SECURITY_TESTS_WARM_SUITE_H_
#define ZYGO_SECURITY_TESTS_WARM_SUITE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "security_tests/supervisor_options.h"

namespace zygo::testing {

// 16 random hex digits: a secret or a name no other run of a test shares.
std::string RandomHex();

class WarmSuite : public ::testing::Test {
 protected:
  // Skips without root or /usr/bin/python3; makes dir_ (/tmp/warm-XXXXXX) and dir_/code.
  void SetUp() override;
  void TearDown() override;

  // Starts the supervisor (stopping one already running) with `options`, whose dir is
  // set to dir_; skips the test where no cgroups can be made.
  void StartSupervisor(SupervisorProcess::Options options = SecurityTestSupervisor());

  // Registers `spec` (TOML) as NAME.toml, its code relative to `base_dir` (dir_/code when
  // empty): what the supervisor answered.
  absl::Status Up(const std::string& name, const std::string& spec,
                  const std::string& base_dir = "");

  // Writes `content` to dir_/RELATIVE.
  void WriteFile(const std::string& relative, const std::string& content) const;

  // One request of `function` over HTTP: the reply (a failure to get one fails the test).
  nlohmann::json OverHttp(const std::string& function, const nlohmann::json& event);
  // The same over gRPC, `event` as both the event's JSON and the stdin.
  zygo::v1::ExecReply OverGrpc(const std::string& function, const std::string& event);

  std::string dir_;
  std::unique_ptr<SupervisorProcess> supervisor_;
  // StartSupervisor's --zygote-tree: Python functions fork from a runtime zygote (on, as
  // zygo serve's default).
  bool zygote_tree_ = true;

 private:
  std::unique_ptr<zygo::v1::Zygo::Stub> grpc_;  // made on first use, for supervisor_
};

// A WarmSuite run twice: with every function in a sandbox of its own, and with the zygote
// tree, Python functions forked from a runtime zygote (INSTANTIATE_WARM_SUITE).
class WarmSuiteBothLayouts : public WarmSuite, public ::testing::WithParamInterface<bool> {
 protected:
  WarmSuiteBothLayouts() { zygote_tree_ = GetParam(); }
  bool tree() const { return zygote_tree_; }
};

// "OwnSandbox" and "ZygoteTree" instances of a WarmSuiteBothLayouts fixture.
#define INSTANTIATE_WARM_SUITE(fixture)                                        \
  INSTANTIATE_TEST_SUITE_P(OwnSandboxAndTree, fixture, ::testing::Bool(),      \
                           [](const ::testing::TestParamInfo<bool>& param) {   \
                             return param.param ? "ZygoteTree" : "OwnSandbox"; \
                           })

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_WARM_SUITE_H_
