// `zygo exec`'s verdicts and output for each way a warm request can end, from replies in
// the API's exec JSON.
#include "cli/exec_output.h"

#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace zygo::cli {
namespace {

using nlohmann::json;

json Reply(const std::string& text) { return json::parse(text); }

struct Printed {
  int exit_code;
  std::string out;
  std::string err;
};

// PrintExecReply into memory streams.
Printed Print(const json& reply, bool whole_json = false) {
  char* out_data = nullptr;
  char* err_data = nullptr;
  size_t out_size = 0;
  size_t err_size = 0;
  FILE* out = open_memstream(&out_data, &out_size);
  FILE* err = open_memstream(&err_data, &err_size);
  int code = PrintExecReply(reply, "hello", whole_json, out, err);
  fclose(out);
  fclose(err);
  Printed printed{code, std::string(out_data, out_size), std::string(err_data, err_size)};
  free(out_data);
  free(err_data);
  return printed;
}

TEST(ExecOutputTest, OkPrintsCapturedOutputThenResult) {
  Printed printed = Print(Reply(R"({"ok":true,"result":{"n":1},"error":null,
      "stdout":"hi\n","stderr":"warn\n","outcome":{"status":"ok"}})"));
  EXPECT_EQ(printed.exit_code, 0);
  EXPECT_EQ(printed.out, "hi\n{\"n\":1}\n");
  EXPECT_EQ(printed.err, "warn\n");
}

TEST(ExecOutputTest, NullResultPrintsNothing) {
  Printed printed = Print(Reply(R"({"ok":true,"result":null,"stdout":"raw","stderr":""})"));
  EXPECT_EQ(printed.exit_code, 0);
  EXPECT_EQ(printed.out, "raw");
}

TEST(ExecOutputTest, HandlerRaisedExitsOneWithTraceback) {
  Printed printed = Print(Reply(R"({"ok":false,"result":null,
      "error":{"type":"ValueError","message":"bad","traceback":"Traceback ...\nValueError: bad"},
      "stdout":"","stderr":"","outcome":{"status":"handler_error"}})"));
  EXPECT_EQ(printed.exit_code, 1);
  EXPECT_EQ(printed.out, "");
  EXPECT_EQ(printed.err, "Traceback ...\nValueError: bad\nerror: ValueError: bad\n");
}

TEST(ExecOutputTest, NonzeroExitIsTheRequestsOwnCode) {
  Printed printed = Print(Reply(R"({"ok":false,"error":{"type":"nonzero_exit","message":"",
      "traceback":""},"stdout":"","stderr":"boom\n","outcome":{"status":"nonzero_exit",
      "exit_code":3}})"));
  EXPECT_EQ(printed.exit_code, 3);
  EXPECT_EQ(printed.err, "boom\n");
}

TEST(ExecOutputTest, TimeoutAndOomAre137AndSayWhich) {
  Printed timeout = Print(Reply(R"({"ok":false,"error":{"type":"timeout"},
      "outcome":{"status":"timeout","timed_out":true,"wall_ms":1000.4}})"));
  EXPECT_EQ(timeout.exit_code, 137);
  EXPECT_EQ(timeout.err, "zygo: hello was killed: it timed out after 1000 ms\n");
  Printed oom = Print(Reply(R"({"ok":false,"error":{"type":"oom"},
      "outcome":{"status":"oom","oom_killed":true,"peak_rss_kb":65536}})"));
  EXPECT_EQ(oom.exit_code, 137);
  EXPECT_EQ(oom.err, "zygo: hello was killed: out of memory (peak RSS 65536 kB)\n");
}

TEST(ExecOutputTest, OtherSignalIs128PlusSignal) {
  Printed printed = Print(Reply(R"({"ok":false,"error":{"type":"crashed"},
      "outcome":{"status":"signaled","signal":11}})"));
  EXPECT_EQ(printed.exit_code, 139);
  EXPECT_EQ(printed.err, "zygo: hello was killed by signal 11\n");
}

TEST(ExecOutputTest, WholeJsonPrintsOnlyTheReplyButKeepsTheExitCode) {
  json reply = Reply(R"({"ok":false,"stdout":"x","error":{"type":"KeyError","message":"k"},
      "outcome":{"status":"handler_error"}})");
  Printed printed = Print(reply, /*whole_json=*/true);
  EXPECT_EQ(printed.exit_code, 1);
  EXPECT_EQ(json::parse(printed.out), reply);
  EXPECT_EQ(printed.err, "");
}

TEST(ExecOutputTest, TruncationIsReported) {
  Printed printed = Print(Reply(R"({"ok":true,"stdout":"a","stdout_truncated":true})"));
  EXPECT_EQ(printed.exit_code, 0);
  EXPECT_NE(printed.err.find("stdout was cut short"), std::string::npos);
}

}  // namespace
}  // namespace zygo::cli
