// The MCP session against a fake set of tools: framing, errors, version negotiation.
#include "cli/mcp_session.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace zygo::cli::mcp {
namespace {

using nlohmann::json;

class FakeTools : public McpTools {
 public:
  json List(bool with_output_schema) const override {
    json tool = {{"name", "echo"}, {"inputSchema", {{"type", "object"}}}};
    if (with_output_schema) tool["outputSchema"] = {{"type", "object"}};
    return json::array({tool});
  }
  ToolResult Call(const std::string& name, const json& arguments) override {
    ToolResult result;
    if (name != "echo") {
      result.kind = ToolResult::Kind::kUnknownTool;
    } else if (arguments.contains("bad")) {
      result.kind = ToolResult::Kind::kBadArguments;
      result.message = "\"bad\" is bad";
    } else {
      result.structured = {{"echo", arguments}};
      result.is_error = arguments.contains("fail");
    }
    return result;
  }
};

class McpSessionTest : public ::testing::Test {
 protected:
  // The reply to `line`, run through its deferred call when it has one; null for none.
  json Reply(const std::string& line) {
    Step step = session_.HandleLine(line);
    EXPECT_FALSE(step.reply && step.deferred);
    if (step.deferred) return json::parse(step.deferred->run());
    if (step.reply) return json::parse(*step.reply);
    return nullptr;
  }
  json Initialize(const std::string& version) {
    return Reply(json{{"jsonrpc", "2.0"},
                      {"id", 1},
                      {"method", "initialize"},
                      {"params",
                       {{"protocolVersion", version},
                        {"capabilities", json::object()},
                        {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}
                     .dump());
  }
  json Call(const json& params, const json& meta = nullptr) {
    json request = {{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/call"}, {"params", params}};
    if (!meta.is_null()) request["params"]["_meta"] = meta;
    return Reply(request.dump());
  }

  FakeTools tools_;
  McpSession session_{tools_, ServerInfo{"zygo", "Zygo", "0.1.0", "hi"}};
};

TEST_F(McpSessionTest, MalformedLinesGetErrorsAndTheSessionGoesOn) {
  EXPECT_EQ(Reply("{not json")["error"]["code"], kParseError);
  EXPECT_EQ(Reply("{not json")["id"], nullptr);
  EXPECT_EQ(Reply(std::string(100000, '['))["error"]["code"], kParseError);
  EXPECT_EQ(Reply("[]")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Reply("42")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Reply(R"({"id":3,"method":"ping"})")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})")["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","id":4,"method":"ping","params":[1]})")["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","id":"a","method":"ping"})"),
            json::parse(R"({"jsonrpc":"2.0","id":"a","result":{}})"));
  EXPECT_EQ(Reply("   "), nullptr);
}

TEST_F(McpSessionTest, NotificationsAndRepliesGetNoAnswer) {
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), nullptr);
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","method":"no/such/notification"})"), nullptr);
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","id":9,"result":{}})"), nullptr);
}

TEST_F(McpSessionTest, UnknownMethodIsMethodNotFound) {
  json reply = Reply(R"({"jsonrpc":"2.0","id":5,"method":"resources/list"})");
  EXPECT_EQ(reply["id"], 5);
  EXPECT_EQ(reply["error"]["code"], kMethodNotFound);
}

TEST_F(McpSessionTest, InitializeAgreesOnAKnownVersionOrOffersTheNewest) {
  json reply = Initialize("2025-06-18");
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "zygo");
  EXPECT_EQ(reply["result"]["instructions"], "hi");
  EXPECT_EQ(Initialize("1999-01-01")["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpSessionTest, ToolsListLeavesOutOutputSchemasBefore20250618) {
  Initialize("2025-03-26");
  json reply = Reply(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  EXPECT_FALSE(reply["result"]["tools"][0].contains("outputSchema"));
  EXPECT_FALSE(Call({{"name", "echo"}})["result"].contains("structuredContent"));
  Initialize("2025-06-18");
  reply = Reply(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  EXPECT_TRUE(reply["result"]["tools"][0].contains("outputSchema"));
}

TEST_F(McpSessionTest, ToolResultsCarryStructuredContentAndItsText) {
  Initialize("2025-11-25");
  json result = Call({{"name", "echo"}, {"arguments", {{"a", 1}}}})["result"];
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"], json({{"echo", {{"a", 1}}}}));
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()),
            result["structuredContent"]);
  EXPECT_EQ(Call({{"name", "echo"}, {"arguments", {{"fail", 1}}}})["result"]["isError"], true);
}

TEST_F(McpSessionTest, UnknownToolAndMalformedCallsAreInvalidParams) {
  json reply = Call({{"name", "nope"}});
  EXPECT_EQ(reply["error"]["code"], kInvalidParams);
  EXPECT_EQ(reply["error"]["message"], "Unknown tool: nope");
  EXPECT_EQ(Call({{"arguments", json::object()}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call({{"name", "echo"}, {"arguments", "x"}})["error"]["code"], kInvalidParams);
}

TEST_F(McpSessionTest, BadArgumentsAreToolErrorsFrom20251125AndProtocolErrorsBefore) {
  Initialize("2025-11-25");
  json result = Call({{"name", "echo"}, {"arguments", {{"bad", 1}}}})["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"], "Invalid arguments for echo: \"bad\" is bad");
  Initialize("2025-06-18");
  EXPECT_EQ(Call({{"name", "echo"}, {"arguments", {{"bad", 1}}}})["error"]["code"],
            kInvalidParams);
}

TEST_F(McpSessionTest, ModernRequestsNeedNoInitializeAndSayTheirResultType) {
  json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}};
  json discover = Reply(json{{"jsonrpc", "2.0"},
                             {"id", 1},
                             {"method", "server/discover"},
                             {"params", {{"_meta", meta}}}}
                            .dump());
  EXPECT_EQ(discover["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(discover["result"]["resultType"], "complete");
  json list = Reply(json{{"jsonrpc", "2.0"},
                         {"id", 2},
                         {"method", "tools/list"},
                         {"params", {{"_meta", meta}}}}
                        .dump());
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_TRUE(list["result"].contains("ttlMs"));
  EXPECT_EQ(list["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "zygo");
  json result = Call({{"name", "echo"}}, meta)["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_TRUE(result.contains("structuredContent"));
}

TEST_F(McpSessionTest, AnUnknownModernVersionIsUnsupportedProtocolVersion) {
  json reply = Reply(json{{"jsonrpc", "2.0"},
                          {"id", 1},
                          {"method", "tools/list"},
                          {"params",
                           {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2099-01-01"}}}}}}
                         .dump());
  EXPECT_EQ(reply["error"]["code"], kUnsupportedProtocolVersion);
  EXPECT_EQ(reply["error"]["data"]["requested"], "2099-01-01");
  EXPECT_EQ(reply["error"]["data"]["supported"][0], "2026-07-28");
}

TEST_F(McpSessionTest, ACancelledCallsReplyIsHeldBack) {
  Step step = session_.HandleLine(
      R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"echo"}})");
  Step other = session_.HandleLine(
      R"({"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"echo"}})");
  ASSERT_TRUE(step.deferred && other.deferred);
  EXPECT_FALSE(session_
                   .HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled",)"
                               R"("params":{"requestId":"c1","reason":"user"}})")
                   .reply);
  step.deferred->run();
  EXPECT_FALSE(session_.Finish(step.deferred->id));
  EXPECT_TRUE(session_.Finish(other.deferred->id));
  // A cancel of a call that is not running marks nothing.
  session_.HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c3"}})");
  step = session_.HandleLine(
      R"({"jsonrpc":"2.0","id":"c3","method":"tools/call","params":{"name":"echo"}})");
  EXPECT_TRUE(session_.Finish(step.deferred->id));
}

// Valid messages with bytes flipped, dropped and added: whatever comes of them, the session
// neither throws nor answers with anything but one line of JSON.
TEST_F(McpSessionTest, MangledMessagesGetJsonRepliesAndNeverThrow) {
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":null}]}}})",
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
      R"({"jsonrpc":"2.0","id":3,"method":"ping"})",
  };
  const std::string alphabet = std::string("{}[]\",:0123456789aeu\\ -.") + '\0' + "\xff\xc3";
  std::mt19937 random(21);
  for (int i = 0; i < 20000; ++i) {
    std::string line = seeds[i % seeds.size()];
    for (int edit = 1 + random() % 4; edit > 0; --edit) {
      size_t at = random() % (line.size() + 1);
      char c = alphabet[random() % alphabet.size()];
      int kind = random() % 3;
      if (kind == 0 && at < line.size()) {
        line[at] = c;
      } else if (kind == 1 && at < line.size()) {
        line.erase(at, 1);
      } else {
        line.insert(at, 1, c);
      }
    }
    Step step;
    ASSERT_NO_THROW(step = session_.HandleLine(line)) << line;
    std::string reply;
    if (step.reply) reply = *step.reply;
    if (step.deferred) {
      ASSERT_NO_THROW(reply = step.deferred->run()) << line;
    }
    if (!reply.empty()) {
      ASSERT_NO_THROW(json::parse(reply)) << line;
      ASSERT_EQ(reply.find('\n'), std::string::npos) << line;
    }
  }
  EXPECT_EQ(Reply(R"({"jsonrpc":"2.0","id":9,"method":"ping"})")["result"], json::object());
}

}  // namespace
}  // namespace zygo::cli::mcp
