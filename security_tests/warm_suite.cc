// Setting up and tearing down a warm suite's directory and supervisor.
#include "security_tests/warm_suite.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace zygo::testing {

std::string RandomHex() {
  std::random_device random;
  return absl::StrCat(absl::Hex(random(), absl::kZeroPad8), absl::Hex(random(), absl::kZeroPad8));
}

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
  grpc_.reset();
  supervisor_.reset();
  options.dir = dir_;
  options.args.insert(options.args.end(), {"--zygote-tree", zygote_tree_ ? "on" : "off"});
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

nlohmann::json WarmSuite::OverHttp(const std::string& function, const nlohmann::json& event) {
  absl::StatusOr<nlohmann::json> reply = supervisor_->Exec(function, event);
  EXPECT_TRUE(reply.ok()) << reply.status() << supervisor_->Log();
  return reply.ok() ? *reply : nlohmann::json::object();
}

zygo::v1::ExecReply WarmSuite::OverGrpc(const std::string& function, const std::string& event) {
  if (!grpc_) {
    grpc_ = zygo::v1::Zygo::NewStub(grpc::CreateChannel(
        absl::StrCat("unix:", supervisor_->grpc_socket()), grpc::InsecureChannelCredentials()));
  }
  zygo::v1::ExecRequest request;
  request.set_function(function);
  request.set_event_json(event);
  request.set_stdin_data(event);
  zygo::v1::ExecReply reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status status = grpc_->Exec(&context, request, &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return reply;
}

}  // namespace zygo::testing
