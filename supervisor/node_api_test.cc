// A Node function and a Node pool script through every front end of a real supervisor:
// `zygo up`/`exec`/`ls`/`scripts put`, HTTP and gRPC. And `zygo up` of a node function on
// an image without node: one line, exit 125, before anything starts.
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/api_connection.h"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"
#include "testing/test_dir.h"

extern char** environ;

namespace zygo::testing {
namespace {

constexpr char kHandler[] = R"(exports.greet = async (event) => {
  console.log("saying hello to " + event.name);
  return { greeting: "hello, " + event.name };
};
exports.fail = () => {
  throw new TypeError("no greeting today");
};
)";

constexpr char kScript[] = "function handler(event) { return { doubled: event * 2 }; }\n";

class NodeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = FreshTestDir("node-api-store-");
    SupervisorProcess::Options options;
    options.binary = Runfile("supervisor/supervisor");
    for (char** entry = environ; *entry != nullptr; ++entry) options.env.push_back(*entry);
    options.env.push_back("ZYGO_HOME=" + store_);
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> started = SupervisorProcess::Start(options);
    if (!started.ok() && absl::StrContains(started.status().message(), "cgroup")) {
      GTEST_SKIP() << started.status();
    }
    ASSERT_TRUE(started.ok()) << started.status();
    supervisor_ = *std::move(started);
    // Copies in the supervisor's own directory: code may not come from the runfiles.
    code_ = supervisor_->WorkDir();
    std::ofstream(code_ + "/handler.js") << kHandler;
    std::ofstream(code_ + "/script.js") << kScript;
  }

  // Writes NAME.toml in the code dir; returns its path.
  std::string Spec(const std::string& name, const std::string& body) {
    const std::string path = absl::StrCat(code_, "/", name, ".toml");
    std::ofstream(path) << "name = \"" << name << "\"\nruntime = \"node\"\n" << body;
    return path;
  }

  // `zygo COMMAND --socket ... ARGS...` (`zygo load` talks to no supervisor: no socket).
  RunResult Zygo(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZygoPath(), args[0]};
    if (args[0] != "load") argv.insert(argv.end(), {"--socket", supervisor_->http_socket()});
    argv.insert(argv.end(), args.begin() + 1, args.end());
    RunOptions options;
    options.env = {"ZYGO_HOME=" + store_};
    options.want_outcome = false;
    return RunOnHost(argv, options);
  }

  nlohmann::json Http(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    absl::StatusOr<sdk::ApiConnection> api =
        sdk::ApiConnection::Connect(supervisor_->http_socket());
    EXPECT_TRUE(api.ok()) << api.status();
    if (!api.ok()) return nullptr;
    absl::StatusOr<nlohmann::json> reply = api->CallJson(method, target, body);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : nullptr;
  }

  std::unique_ptr<::zygo::v1::Zygo::Stub> Grpc() {
    return ::zygo::v1::Zygo::NewStub(grpc::CreateChannel("unix:" + supervisor_->grpc_socket(),
                                                         grpc::InsecureChannelCredentials()));
  }

  std::string store_, code_;
  std::unique_ptr<SupervisorProcess> supervisor_;
};

TEST_F(NodeApiTest, ThroughTheCli) {
  RunResult up = Zygo({"up", Spec("greet", "entry = \"handler.js:greet\"\n")});
  ASSERT_EQ(up.exit_code, 0) << up.err << supervisor_->LogTail();
  EXPECT_EQ(up.out, "greet is up (runtime node, image host)\n");

  RunResult called = Zygo({"exec", "greet", "--data", R"({"name": "Ada"})"});
  EXPECT_EQ(called.exit_code, 0) << called.err;
  EXPECT_EQ(called.out, "saying hello to Ada\n{\"greeting\":\"hello, Ada\"}\n");

  RunResult listed = Zygo({"ls"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(
      std::regex_search(listed.out, std::regex("\ngreet +node +host +warm +1 +handler.js:greet\n")))
      << listed.out;

  ASSERT_EQ(Zygo({"up", Spec("fail", "entry = \"handler.js:fail\"\n")}).exit_code, 0);
  RunResult failed = Zygo({"exec", "fail"});
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_TRUE(absl::StrContains(failed.err, "error: TypeError: no greeting today")) << failed.err;
  EXPECT_TRUE(absl::StrContains(failed.err, "handler.js")) << "the stack" << failed.err;

  RunResult pool = Zygo({"up", Spec("jspool", "pool = true\n")});
  ASSERT_EQ(pool.exit_code, 0) << pool.err << supervisor_->LogTail();
  EXPECT_EQ(pool.out, "jspool is up (runtime node, image host, a runtime pool)\n");
  RunResult put = Zygo({"scripts", "put", code_ + "/script.js"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const std::string digest(absl::StripTrailingAsciiWhitespace(put.out));
  RunResult ran = Zygo({"exec", "jspool", "--script", digest, "--data", "21"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "{\"doubled\":42}\n");
}

TEST_F(NodeApiTest, ThroughHttp) {
  const std::string spec = "name = \"greet\"\nruntime = \"node\"\nentry = \"handler.js:greet\"\n";
  ASSERT_TRUE(supervisor_->Register("greet", spec, code_).ok());
  nlohmann::json reply = Http("POST", "/v1/functions/greet/exec", R"({"name": "Bo"})");
  EXPECT_EQ(reply["ok"], true) << reply;
  EXPECT_EQ(reply["result"], nlohmann::json::parse(R"({"greeting": "hello, Bo"})")) << reply;
  EXPECT_EQ(reply["stdout"], "saying hello to Bo\n") << reply;

  nlohmann::json listed = Http("GET", "/v1/functions");
  ASSERT_TRUE(listed["functions"].is_array()) << listed;
  EXPECT_EQ(listed["functions"][0]["runtime"], "node") << listed;

  ASSERT_TRUE(
      supervisor_->Register("jspool", "name = \"jspool\"\nruntime = \"node\"\npool = true\n", code_)
          .ok());
  nlohmann::json put = Http("PUT", "/v1/scripts", kScript);
  const std::string digest = put.value("digest", "");
  ASSERT_TRUE(absl::StartsWith(digest, "sha256:")) << put;
  nlohmann::json ran = Http("POST", absl::StrCat("/v1/functions/jspool/exec?script=", digest), "4");
  EXPECT_EQ(ran["ok"], true) << ran;
  EXPECT_EQ(ran["result"], nlohmann::json::parse(R"({"doubled": 8})")) << ran;
}

TEST_F(NodeApiTest, ThroughGrpc) {
  std::unique_ptr<::zygo::v1::Zygo::Stub> stub = Grpc();
  {
    grpc::ClientContext context;
    ::zygo::v1::UpRequest up;
    up.set_spec_toml("name = \"greet\"\nruntime = \"node\"\nentry = \"handler.js:greet\"\n");
    up.set_origin("greet.toml");
    up.set_base_dir(code_);
    ::zygo::v1::FunctionInfo info;
    grpc::Status status = stub->Up(&context, up, &info);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(info.runtime(), "node");
  }
  {
    grpc::ClientContext context;
    ::zygo::v1::ExecRequest exec;
    exec.set_function("greet");
    exec.set_event_json(R"({"name": "Cy"})");
    ::zygo::v1::ExecReply reply;
    grpc::Status status = stub->Exec(&context, exec, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(reply.ok()) << reply.error().type() << ": " << reply.error().message();
    EXPECT_EQ(nlohmann::json::parse(reply.result_json()),
              nlohmann::json::parse(R"({"greeting": "hello, Cy"})"));
    EXPECT_EQ(reply.stdout(), "saying hello to Cy\n");
  }
  ASSERT_TRUE(
      supervisor_->Register("jspool", "name = \"jspool\"\nruntime = \"node\"\npool = true\n", code_)
          .ok());
  std::string digest;
  {
    grpc::ClientContext context;
    ::zygo::v1::PutScriptRequest put;
    put.set_source(kScript);
    ::zygo::v1::PutScriptReply reply;
    grpc::Status status = stub->PutScript(&context, put, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    digest = reply.digest();
  }
  grpc::ClientContext context;
  ::zygo::v1::ExecRequest exec;
  exec.set_function("jspool");
  exec.set_script_digest(digest);
  exec.set_event_json("5");
  ::zygo::v1::ExecReply reply;
  grpc::Status status = stub->Exec(&context, exec, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(reply.ok()) << reply.error().type() << ": " << reply.error().message();
  EXPECT_EQ(nlohmann::json::parse(reply.result_json()),
            nlohmann::json::parse(R"({"doubled": 10})"));
}

// busybox has no node: `zygo up` says so in one line and exits 125; no sandbox started.
TEST_F(NodeApiTest, UpRefusesAnImageWithoutNode) {
  absl::StatusOr<TestImage> busybox = BuildTestImage("busybox");
  ASSERT_TRUE(busybox.ok()) << busybox.status();
  RunResult loaded = Zygo({"load", busybox->layout, "nonode:1"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  RunResult up = Zygo({"up", Spec("nonode",
                                  "entry = \"handler.js:greet\"\n"
                                  "image = \"nonode:1\"\npull = \"never\"\n")});
  EXPECT_EQ(up.exit_code, 125);
  EXPECT_EQ(up.err,
            "zygo: nonode is registered but cannot warm: nonode.toml: runtime \"node\": the image "
            "nonode:1 has no node on its PATH (/bin)\n");
  EXPECT_FALSE(absl::StrContains(supervisor_->Log(), "nonode is warm"));
}

}  // namespace
}  // namespace zygo::testing
