// Events up to the one event limit (event_limit.h) reach real agents through the service
// core whole, inline or in a sealed memfd; one byte more is refused before it is queued.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"
#include "supervisor/event_limit.h"
#include "supervisor/service_fixture.h"

namespace zygo::supervisor {
namespace {

constexpr char kHandlers[] = R"(import hashlib, os

def measure(event):
    blob = event if isinstance(event, str) else event["blob"]
    return {"length": len(blob), "sha256": hashlib.sha256(blob.encode()).hexdigest(),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd"))}
)";

constexpr char kPoolScript[] = R"(import hashlib

def handler(event):
    return {"length": len(event), "sha256": hashlib.sha256(event.encode()).hexdigest()}
)";

// Printable, no quote or backslash, so `"` + Blob(n) + `"` is a JSON string of n + 2 bytes.
std::string Blob(size_t size) {
  std::string blob(size, '\0');
  for (size_t i = 0; i < size; ++i) blob[i] = static_cast<char>('a' + (i * 7 + i / 4099) % 26);
  return blob;
}

std::string Hex(const std::string& bytes) { return images::DigestHex(images::Sha256Digest(bytes)); }

class WarmEventSizeTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteCode("handlers.py", kHandlers);
  }

  // The event's JSON text is exactly `bytes` long; the handler says what it received.
  nlohmann::json Measure(const std::string& function, size_t bytes,
                         const std::string& script = "") {
    const std::string blob = Blob(bytes - 2);
    ExecReply reply = Call(function, absl::StrCat("\"", blob, "\""), script);
    EXPECT_TRUE(reply.status.ok()) << reply.status;
    EXPECT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
    nlohmann::json result =
        nlohmann::json::parse(reply.result_json.empty() ? "null" : reply.result_json);
    EXPECT_EQ(result["length"], blob.size()) << bytes;
    EXPECT_EQ(result["sha256"], Hex(blob)) << bytes;
    return result;
  }
};

TEST_F(WarmEventSizeTest, APythonHandlerGetsEveryEventUpToTheLimitWhole) {
  Up("name = \"measure\"\nentry = \"handlers.py:measure\"\n[limits]\nmemory = \"256M\"\n");
  // A small event travels in the Run frame, a large one in a memfd: the handler sees no
  // difference, not even an extra fd.
  const nlohmann::json inline_event = Measure("measure", 100);
  const nlohmann::json at_limit = Measure("measure", kMaxEventBytes);
  EXPECT_EQ(at_limit["fds"], inline_event["fds"]);
  Measure("measure", kMaxEventBytes - 1);
  Measure("measure", 200 * 1024);  // just past a frame

  ExecReply over = Call("measure", absl::StrCat("\"", Blob(kMaxEventBytes - 1), "\""));
  EXPECT_TRUE(IsEventTooLarge(over.status)) << over.status;
  EXPECT_EQ(over.status.message(), "event is 16777217 bytes; the limit is 16777216 bytes");
}

// A pool's Run also carries the script: a large event moves to the memfd beside it.
TEST_F(WarmEventSizeTest, APoolScriptAndALargeEventGoTogether) {
  Up("name = \"pool\"\npool = true\n[limits]\nmemory = \"256M\"\n");
  absl::StatusOr<std::string> digest = service_->PutScript(kPoolScript);
  ASSERT_TRUE(digest.ok()) << digest.status();
  Measure("pool", 100, *digest);
  Measure("pool", kMaxEventBytes, *digest);
  Measure("pool", 100, *digest);  // the script's bytecode, cached by now, beside a small one
}

// Warm-exec's event is its stdin (a memfd already): the limit is the same.
TEST_F(WarmEventSizeTest, AWarmExecCommandGetsStdinUpToTheLimitWhole) {
  Up("name = \"sum\"\nruntime = \"exec\"\nentry = \"/usr/bin/sha256sum\"\ncode = \".\"\n");
  const std::string input = Blob(kMaxEventBytes);
  ExecReply reply = Call("sum", input);
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_TRUE(reply.ok) << reply.stderr_data;
  EXPECT_EQ(reply.stdout_data, absl::StrCat(Hex(input), "  -\n"));

  ExecReply over = Call("sum", Blob(kMaxEventBytes + 1));
  EXPECT_TRUE(IsEventTooLarge(over.status)) << over.status;
  EXPECT_EQ(over.status.message(), "event is 16777217 bytes; the limit is 16777216 bytes");
}

}  // namespace
}  // namespace zygo::supervisor
