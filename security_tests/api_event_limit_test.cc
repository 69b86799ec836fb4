// The one event limit, attacked through every way an event reaches a function of a real
// supervisor: HTTP, gRPC and `zygo exec`. An event one byte under the limit, and one at
// it, reach a Python handler and a warm-exec command whole (their sha256 says so); one
// byte over is refused by each front end in the same words, before any of it runs.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/api_connection.h"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "security_tests/supervisor_options.h"
#include "supervisor/event_limit.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

using supervisor::kMaxEventBytes;

constexpr char kHandler[] = R"(import hashlib

def measure(event):
    return {"length": len(event), "sha256": hashlib.sha256(event.encode()).hexdigest()}
)";

// "event is N bytes; the limit is 16777216 bytes", as every front end words it.
std::string OverLimitWords(size_t size) {
  return absl::StrCat("event is ", size, " bytes; the limit is ", kMaxEventBytes, " bytes");
}

// Printable, no quote or backslash: `"` + Blob(n) + `"` is a JSON string of n + 2 bytes.
std::string Blob(size_t size) {
  std::string blob(size, '\0');
  for (size_t i = 0; i < size; ++i) blob[i] = static_cast<char>('a' + (i * 7 + i / 4099) % 26);
  return blob;
}

std::string Sha256Hex(const std::string& bytes) {
  return images::DigestHex(images::Sha256Digest(bytes));
}

// The Python event whose JSON text is `size` bytes, and what the handler must answer.
struct Event {
  std::string json;
  nlohmann::json expected;
};
Event PythonEvent(size_t size) {
  const std::string blob = Blob(size - 2);
  return {absl::StrCat("\"", blob, "\""),
          nlohmann::json{{"length", blob.size()}, {"sha256", Sha256Hex(blob)}}};
}

class ApiEventLimitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/zygo-evl-XXXXXX";  // short: the sockets must fit in sun_path
    if (mkdtemp(dir) == nullptr) {
      setup_error_ = new std::string(absl::StrCat("mkdtemp: ", strerror(errno)));
      return;
    }
    dir_ = new std::string(dir);
    std::filesystem::create_directory(*dir_ + "/code");
    std::ofstream(*dir_ + "/code/handler.py") << kHandler;
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.dir = *dir_;
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> started = SupervisorProcess::Start(options);
    if (!started.ok()) {
      setup_error_ = new std::string(started.status().ToString());
      return;
    }
    supervisor_ = started->release();
    for (const auto& [name, spec] :
         {std::pair<std::string, std::string>{
              "measure",
              "name = \"measure\"\nruntime = \"python\"\nentry = \"handler.py:measure\"\n"
              "[limits]\nmemory = \"256M\"\ntimeout = \"30s\"\n"},
          {"sum",
           "name = \"sum\"\nruntime = \"exec\"\nentry = \"/usr/bin/sha256sum\"\n"
           "[limits]\ntimeout = \"30s\"\n"}}) {
      absl::Status up = supervisor_->Register(name, spec, *dir_ + "/code");
      if (!up.ok()) setup_error_ = new std::string(up.ToString());
    }
  }

  static void TearDownTestSuite() {
    delete supervisor_;
    supervisor_ = nullptr;
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
  }

  void SetUp() override {
    if (setup_error_ != nullptr && setup_error_->find("no usable cgroups") != std::string::npos) {
      GTEST_SKIP() << *setup_error_;
    }
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
  }

  // One POST .../exec over HTTP: the status and the body.
  static sdk::HttpReply PostExec(const std::string& function, const std::string& body) {
    absl::StatusOr<sdk::ApiConnection> api =
        sdk::ApiConnection::Connect(supervisor_->http_socket());
    EXPECT_TRUE(api.ok()) << api.status();
    if (!api.ok()) return {};
    absl::StatusOr<sdk::HttpReply> reply =
        api->Call("POST", absl::StrCat("/v1/functions/", function, "/exec"), body);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : sdk::HttpReply{};
  }

  static grpc::Status GrpcExec(const std::string& function, const std::string& event,
                               ::zygo::v1::ExecReply* reply) {
    auto stub = ::zygo::v1::Zygo::NewStub(grpc::CreateChannel("unix:" + supervisor_->grpc_socket(),
                                                              grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    ::zygo::v1::ExecRequest request;
    request.set_function(function);
    request.set_event_json(event);
    return stub->Exec(&context, request, reply);
  }

  // `zygo exec FUNCTION -` with `input` on its stdin.
  static RunResult CliExec(const std::string& function, const std::string& input) {
    const std::string path = *dir_ + "/cli-input";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    RunOptions options;
    options.stdin_fd = fd;
    options.want_outcome = false;
    RunResult result = RunOnHost(
        {ZygoPath(), "exec", "--socket", supervisor_->http_socket(), function, "-"}, options);
    close(fd);
    return result;
  }

  static inline SupervisorProcess* supervisor_ = nullptr;
  static inline std::string* dir_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
};

TEST_F(ApiEventLimitTest, HttpTakesEventsUpToTheLimitWholeAndAnswers413Past) {
  for (size_t size : {kMaxEventBytes - 1, kMaxEventBytes}) {
    const Event event = PythonEvent(size);
    sdk::HttpReply reply = PostExec("measure", event.json);
    ASSERT_EQ(reply.status, 200) << size << ": " << reply.body.substr(0, 500);
    EXPECT_EQ(nlohmann::json::parse(reply.body)["result"], event.expected) << size;
  }
  const std::string input = Blob(kMaxEventBytes - 1);
  sdk::HttpReply summed = PostExec("sum", input);
  ASSERT_EQ(summed.status, 200) << summed.body.substr(0, 500);
  EXPECT_EQ(nlohmann::json::parse(summed.body)["stdout"], absl::StrCat(Sha256Hex(input), "  -\n"));

  for (const char* function : {"measure", "sum"}) {
    sdk::HttpReply refused = PostExec(function, PythonEvent(kMaxEventBytes + 1).json);
    EXPECT_EQ(refused.status, 413) << function;
    EXPECT_EQ(nlohmann::json::parse(refused.body),
              (nlohmann::json{{"error",
                               {{"code", "payload_too_large"},
                                {"message", OverLimitWords(kMaxEventBytes + 1)}}}}))
        << function;
  }
}

TEST_F(ApiEventLimitTest, GrpcTakesEventsUpToTheLimitWholeAndIsResourceExhaustedPast) {
  const Event event = PythonEvent(kMaxEventBytes - 1);
  ::zygo::v1::ExecReply reply;
  grpc::Status status = GrpcExec("measure", event.json, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(reply.ok()) << reply.error().type() << ": " << reply.error().message();
  EXPECT_EQ(nlohmann::json::parse(reply.result_json()), event.expected);

  ::zygo::v1::ExecReply refused;
  status = GrpcExec("measure", PythonEvent(kMaxEventBytes + 1).json, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(status.error_message(), OverLimitWords(kMaxEventBytes + 1));
}

// zygo used to report "Broken pipe": the server answers 413 and closes while it still
// writes the body. It must show the server's answer and exit 125.
TEST_F(ApiEventLimitTest, ZygoExecTakesEventsUpToTheLimitAndSaysWhyItRefusesPast) {
  const Event event = PythonEvent(kMaxEventBytes - 1);
  RunResult ran = CliExec("measure", event.json);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(nlohmann::json::parse(ran.out, nullptr, false), event.expected) << ran.out;

  RunResult refused = CliExec("measure", PythonEvent(kMaxEventBytes + 1).json);
  EXPECT_EQ(refused.exit_code, 125) << refused.err;
  EXPECT_EQ(refused.err, absl::StrCat("zygo: ", OverLimitWords(kMaxEventBytes + 1), "\n"));
  EXPECT_EQ(refused.out, "");
}

}  // namespace
}  // namespace zygo::testing
