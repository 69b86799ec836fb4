// Unit tests of the HTTP/JSON API's pure parts: routing onto Service calls, status and
// reply mapping, percent-decoding, and the JSON forms of replies and functions.
#include "supervisor/http_routes.h"

#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/service.h"

namespace zygo::supervisor {
namespace {

using nlohmann::json;

// Synchronous calls are recorded; each returns `next_status` when set.
class RecordingService : public Service {
 public:
  absl::StatusOr<FunctionInfo> Up(const std::string& spec, const std::string& origin,
                                  const std::string& base_dir) override {
    calls.push_back("Up");
    up_spec = spec;
    up_origin = origin;
    up_base_dir = base_dir;
    if (!next_status.ok()) return next_status;
    FunctionInfo info;
    info.name = "hello";
    info.runtime = Runtime::kPython;
    return info;
  }
  absl::Status Down(const std::string& name) override {
    calls.push_back("Down " + name);
    return next_status;
  }
  std::vector<FunctionInfo> List() override {
    calls.push_back("List");
    FunctionInfo a, b;
    a.name = "a";
    b.name = "b";
    b.pool = true;
    return {a, b};
  }
  absl::StatusOr<std::string> PutScript(const std::string& source) override {
    calls.push_back("PutScript " + source);
    if (!next_status.ok()) return next_status;
    return std::string("sha256:abc");
  }
  std::shared_ptr<RequestHandle> Exec(ExecRequest, ExecCallback) override {
    ADD_FAILURE() << "Route must leave Exec to its caller";
    return nullptr;
  }

  std::vector<std::string> calls;
  std::string up_spec, up_origin, up_base_dir;
  absl::Status next_status;
};

HttpResponse RouteToResponse(RecordingService& service, const std::string& method,
                             const std::string& target, const std::string& body = "") {
  RouteResult result = Route(HttpRequest{method, target, body}, service);
  EXPECT_TRUE(std::holds_alternative<HttpResponse>(result)) << method << " " << target;
  if (!std::holds_alternative<HttpResponse>(result)) return {};
  return std::get<HttpResponse>(result);
}

json ErrorOf(const HttpResponse& response) { return json::parse(response.body).at("error"); }

TEST(HttpRoutesTest, Health) {
  RecordingService service;
  HttpResponse response = RouteToResponse(service, "GET", "/v1/health");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(json::parse(response.body), json({{"ok", true}}));
  EXPECT_TRUE(service.calls.empty());
}

TEST(HttpRoutesTest, ListShowsEveryFunction) {
  RecordingService service;
  HttpResponse response = RouteToResponse(service, "GET", "/v1/functions");
  ASSERT_EQ(response.status, 200);
  json body = json::parse(response.body);
  ASSERT_EQ(body.at("functions").size(), 2u);
  EXPECT_EQ(body["functions"][0]["name"], "a");
  EXPECT_EQ(body["functions"][1]["pool"], true);
}

TEST(HttpRoutesTest, UpPassesBodyAndDecodedQuery) {
  RecordingService service;
  HttpResponse response = RouteToResponse(
      service, "POST", "/v1/functions?origin=my%20fn.toml&base_dir=%2Fsrv%2Fa+b", "name = 1");
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(json::parse(response.body).at("name"), "hello");
  EXPECT_EQ(service.up_spec, "name = 1");
  EXPECT_EQ(service.up_origin, "my fn.toml");
  EXPECT_EQ(service.up_base_dir, "/srv/a b");
}

TEST(HttpRoutesTest, UpDefaultsOriginAndBaseDir) {
  RecordingService service;
  RouteToResponse(service, "POST", "/v1/functions", "x");
  EXPECT_EQ(service.up_origin, "request");
  EXPECT_EQ(service.up_base_dir, "");
}

TEST(HttpRoutesTest, UpErrorUsesErrorForm) {
  RecordingService service;
  service.next_status = absl::InvalidArgumentError("hello.toml:3: bad field");
  HttpResponse response = RouteToResponse(service, "POST", "/v1/functions", "x");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(ErrorOf(response),
            json({{"code", "invalid_argument"}, {"message", "hello.toml:3: bad field"}}));
}

TEST(HttpRoutesTest, DownDecodesName) {
  RecordingService service;
  HttpResponse response = RouteToResponse(service, "DELETE", "/v1/functions/a%2Fb%20c");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(service.calls, std::vector<std::string>{"Down a/b c"});
  service.next_status = absl::NotFoundError("no function x");
  EXPECT_EQ(RouteToResponse(service, "DELETE", "/v1/functions/x").status, 404);
}

TEST(HttpRoutesTest, PutScriptReturnsDigest) {
  RecordingService service;
  HttpResponse response = RouteToResponse(service, "PUT", "/v1/scripts", "print(1)");
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(json::parse(response.body), json({{"digest", "sha256:abc"}}));
  EXPECT_EQ(service.calls, std::vector<std::string>{"PutScript print(1)"});
}

TEST(HttpRoutesTest, ExecBecomesAnExecRequest) {
  RecordingService service;
  RouteResult result = Route(
      HttpRequest{"POST", "/v1/functions/my%20fn/exec?script=sha256%3Aff", "{\"a\":1}"}, service);
  ASSERT_TRUE(std::holds_alternative<ExecRequest>(result));
  const ExecRequest& exec = std::get<ExecRequest>(result);
  EXPECT_EQ(exec.function, "my fn");
  EXPECT_EQ(exec.script_digest, "sha256:ff");
  EXPECT_EQ(exec.event_json, "{\"a\":1}");
  EXPECT_EQ(exec.stdin_data, "{\"a\":1}");
  EXPECT_TRUE(service.calls.empty());
}

TEST(HttpRoutesTest, UnknownRoutesAre404) {
  RecordingService service;
  for (const char* target :
       {"/", "/v1", "/v2/health", "/v1/health/", "/v1/functions//exec", "/v1/functions/a/b",
        "/v1/functions/a/exec/more", "/v1/nothing", "v1/health", ""}) {
    HttpResponse response = RouteToResponse(service, "GET", target);
    EXPECT_EQ(response.status, target[0] == '/' ? 404 : 400) << target;
    EXPECT_FALSE(ErrorOf(response).at("message").get<std::string>().empty());
  }
  EXPECT_EQ(ErrorOf(RouteToResponse(service, "GET", "/v2")).at("code"), "not_found");
  EXPECT_TRUE(service.calls.empty());
}

TEST(HttpRoutesTest, WrongMethodsAre405WithAllow) {
  RecordingService service;
  struct Case {
    const char* method;
    const char* target;
    const char* allow;
  };
  for (const Case& c :
       {Case{"POST", "/v1/health", "GET"}, Case{"DELETE", "/v1/functions", "GET, POST"},
        Case{"GET", "/v1/functions/a", "DELETE"}, Case{"GET", "/v1/functions/a/exec", "POST"},
        Case{"POST", "/v1/scripts", "PUT"}}) {
    HttpResponse response = RouteToResponse(service, c.method, c.target);
    EXPECT_EQ(response.status, 405) << c.method << " " << c.target;
    EXPECT_EQ(response.allow, c.allow);
    EXPECT_EQ(ErrorOf(response).at("code"), "method_not_allowed");
  }
  EXPECT_TRUE(service.calls.empty());
}

TEST(HttpRoutesTest, BadEscapesAre400) {
  RecordingService service;
  for (const char* target : {"/v1/functions/a%zz", "/v1/functions/a%2", "/v1/functions/%00",
                             "/v1/functions?origin=%", "/v1/functions/a/exec?script=%g0"}) {
    HttpResponse response = RouteToResponse(service, "POST", target);
    EXPECT_EQ(response.status, 400) << target;
    EXPECT_EQ(ErrorOf(response).at("code"), "invalid_argument");
  }
  EXPECT_TRUE(service.calls.empty());
}

TEST(HttpRoutesTest, StatusCodesMapToHttp) {
  struct Case {
    absl::StatusCode code;
    int http;
    const char* name;
  };
  for (const Case& c : {Case{absl::StatusCode::kInvalidArgument, 400, "invalid_argument"},
                        Case{absl::StatusCode::kNotFound, 404, "not_found"},
                        Case{absl::StatusCode::kAlreadyExists, 409, "already_exists"},
                        Case{absl::StatusCode::kFailedPrecondition, 412, "failed_precondition"},
                        Case{absl::StatusCode::kResourceExhausted, 429, "resource_exhausted"},
                        Case{absl::StatusCode::kCancelled, 499, "cancelled"},
                        Case{absl::StatusCode::kUnimplemented, 501, "unimplemented"},
                        Case{absl::StatusCode::kUnavailable, 503, "unavailable"},
                        Case{absl::StatusCode::kDeadlineExceeded, 504, "deadline_exceeded"},
                        Case{absl::StatusCode::kInternal, 500, "internal"},
                        Case{absl::StatusCode::kPermissionDenied, 500, "permission_denied"},
                        Case{absl::StatusCode::kDataLoss, 500, "data_loss"}}) {
    HttpResponse response = StatusResponse(absl::Status(c.code, "why"));
    EXPECT_EQ(response.status, c.http) << c.name;
    EXPECT_EQ(ErrorOf(response), json({{"code", c.name}, {"message", "why"}}));
  }
  EXPECT_EQ(StatusResponse(absl::OkStatus()).status, 500);
  EXPECT_EQ(ErrorCodeName(static_cast<absl::StatusCode>(99)), "unknown");
}

// The event limit's error is ResourceExhausted like being over capacity, but answered 413
// with its own words; a plain ResourceExhausted stays 429.
TEST(HttpRoutesTest, AnEventOverTheLimitIs413NotOverCapacity) {
  HttpResponse too_large = StatusResponse(EventTooLargeError(kMaxEventBytes + 1));
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(ErrorOf(too_large),
            json({{"code", "payload_too_large"},
                  {"message", "event is 16777217 bytes; the limit is 16777216 bytes"}}));
  EXPECT_TRUE(IsEventTooLarge(CheckEventSize(0, kMaxEventBytes + 1)));
  EXPECT_TRUE(CheckEventSize(kMaxEventBytes, kMaxEventBytes).ok());
  EXPECT_FALSE(IsEventTooLarge(absl::ResourceExhaustedError("over capacity")));
  EXPECT_EQ(StatusResponse(absl::ResourceExhaustedError("over capacity")).status, 429);
}

TEST(HttpRoutesTest, BodyTooLargeNamesTheEventOnlyForExec) {
  EXPECT_EQ(
      ErrorOf(BodyTooLargeResponse("/v1/functions/f%20g/exec?script=sha256%3Aab", 20))["message"],
      "event is 20 bytes; the limit is 16777216 bytes");
  EXPECT_EQ(ErrorOf(BodyTooLargeResponse("/v1/functions/f/exec", std::nullopt))["message"],
            "event is more than 16777216 bytes; the limit is 16777216 bytes");
  HttpResponse script = BodyTooLargeResponse("/v1/scripts", 20);
  EXPECT_EQ(script.status, 413);
  EXPECT_EQ(ErrorOf(script),
            json({{"code", "payload_too_large"},
                  {"message", "request body is 20 bytes; the limit is 16777216 bytes"}}));
  EXPECT_EQ(BodyTooLargeResponse("not a path", 20).status, 413);
}

TEST(HttpRoutesTest, SerializeResponse) {
  HttpResponse response{405, R"({"a":1})", "GET"};
  EXPECT_EQ(SerializeResponse(response, true, false),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\n"
            "Content-Length: 7\r\nAllow: GET\r\n\r\n{\"a\":1}");
  response = HttpResponse{201, "{}", ""};
  EXPECT_EQ(SerializeResponse(response, false, false),
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Connection: close\r\n\r\n{}");
  EXPECT_NE(SerializeResponse(response, true, true).find("\r\nConnection: keep-alive\r\n"),
            std::string::npos);
  EXPECT_EQ(SerializeResponse(response, true, false).find("Connection"), std::string::npos);
  EXPECT_EQ(SerializeResponse(response, true, false).find("Retry-After"), std::string::npos);
}

// Over capacity says when to come back, as RFC 9110 has it: whole seconds, at least 1.
// Only a 429 does; a 413 is also ResourceExhausted inside but will never fit.
TEST(HttpRoutesTest, OverCapacityCarriesRetryAfter) {
  HttpResponse response = StatusResponse(absl::ResourceExhaustedError("over capacity"));
  ASSERT_EQ(response.status, 429);
  EXPECT_EQ(response.retry_after_s, kRetryAfterSeconds);
  EXPECT_GE(kRetryAfterSeconds, 1);
  EXPECT_NE(SerializeResponse(response, true, false).find("\r\nRetry-After: 1\r\n"),
            std::string::npos);
  HttpResponse too_large = StatusResponse(EventTooLargeError(kMaxEventBytes + 1));
  EXPECT_EQ(too_large.retry_after_s, 0);
  EXPECT_EQ(SerializeResponse(too_large, false, false).find("Retry-After"), std::string::npos);
  EXPECT_EQ(ErrorResponse(503, "unavailable", "x").retry_after_s, 0);
}

TEST(HttpRoutesTest, PercentDecode) {
  EXPECT_EQ(*PercentDecode("a%20b%2Fc%2fd", false), "a b/c/d");
  EXPECT_EQ(*PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(*PercentDecode("a+b%2B", true), "a b+");
  EXPECT_EQ(*PercentDecode("%e2%82%ac", false), "\xe2\x82\xac");
  EXPECT_EQ(*PercentDecode("", false), "");
  for (const char* bad : {"%", "%4", "%zz", "%4g", "ab%", "%00"}) {
    EXPECT_FALSE(PercentDecode(bad, false).ok()) << bad;
  }
}

TEST(HttpRoutesTest, ParseQuery) {
  absl::StatusOr<QueryParams> params = ParseQuery("a=1&b=x%20y&flag&&a=2&c=d=e");
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(*params, (QueryParams{{"a", "2"}, {"b", "x y"}, {"flag", ""}, {"c", "d=e"}}));
  EXPECT_TRUE(ParseQuery("")->empty());
  EXPECT_FALSE(ParseQuery("a=%x1").ok());
}

TEST(HttpRoutesTest, ExecReplyResponseOkIsTheReplyJson) {
  ExecReply reply;
  reply.ok = true;
  reply.result_json = "[1,2]";
  HttpResponse response = ExecReplyResponse(reply);
  EXPECT_EQ(response.status, 200);
  json body = json::parse(response.body);
  EXPECT_EQ(body.at("result"), json::parse("[1,2]"));
  EXPECT_TRUE(body.at("error").is_null());
}

TEST(HttpRoutesTest, ExecReplyResponseFailureIsTheErrorForm) {
  ExecReply reply;
  reply.status = absl::ResourceExhaustedError("over capacity");
  reply.ok = true;  // ignored: the request never ran
  HttpResponse response = ExecReplyResponse(reply);
  EXPECT_EQ(response.status, 429);
  EXPECT_EQ(ErrorOf(response),
            json({{"code", "resource_exhausted"}, {"message", "over capacity"}}));
}

TEST(ServiceJsonTest, ExecReplyFieldByField) {
  ExecReply reply;
  reply.ok = false;
  reply.result_json = "";
  reply.error_type = "ValueError";
  reply.error_message = "bad";
  reply.traceback = "Traceback...";
  reply.stdout_data = "out";
  reply.stderr_data = "err";
  reply.stdout_truncated = true;
  reply.outcome = {core::OutcomeStatus::kHandlerError, 3, 9, true, true, 1234, 5.5};
  reply.timings = {1, 2, 3, 4, 10};
  json body = json::parse(ExecReplyToJson(reply));
  EXPECT_EQ(body, json::parse(R"({
    "ok": false, "result": null,
    "error": {"type": "ValueError", "message": "bad", "traceback": "Traceback..."},
    "stdout": "out", "stderr": "err", "stdout_truncated": true, "stderr_truncated": false,
    "outcome": {"status": "handler_error", "exit_code": 3, "signal": 9, "timed_out": true,
                "oom_killed": true, "peak_rss_kb": 1234, "wall_ms": 5.5, "limits_applied": false},
    "timings_us": {"fork": 1, "admit": 2, "run": 3, "reply": 4, "total": 10}})"));
}

TEST(ServiceJsonTest, ResultThatIsNotJsonBecomesAString) {
  ExecReply reply;
  reply.result_json = "not json {";
  EXPECT_EQ(json::parse(ExecReplyToJson(reply)).at("result"), "not json {");
  reply.result_json = R"({"k":[1,"two",null]})";
  EXPECT_EQ(json::parse(ExecReplyToJson(reply)).at("result"), json::parse(reply.result_json));
  // Embedded as sent: key order and numbers beyond 64 bits survive.
  reply.result_json = R"({"z":1,"a":123456789012345678901234567890})";
  EXPECT_NE(ExecReplyToJson(reply).find(reply.result_json), std::string::npos);
  // Deep nesting is only validated, never recursed into.
  reply.result_json = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_NE(ExecReplyToJson(reply).find(reply.result_json), std::string::npos);
}

TEST(ServiceJsonTest, FieldsComeInTheDocumentedOrder) {
  std::string text = ExecReplyToJson(ExecReply());
  EXPECT_EQ(text.rfind(R"({"ok":false,"result":null,"error":null,"stdout":"",)", 0), 0u) << text;
}

TEST(ServiceJsonTest, InvalidUtf8DoesNotThrow) {
  ExecReply reply;
  reply.stdout_data =
      "a\xff\xfe"
      "b";
  reply.error_message = "\xc3";
  reply.result_json = "\"\xff\"";
  std::string text;
  ASSERT_NO_THROW(text = ExecReplyToJson(reply));
  json body = json::parse(text);  // valid JSON, with U+FFFD for the bad bytes
  EXPECT_EQ(body.at("stdout"),
            "a\xef\xbf\xbd\xef\xbf\xbd"
            "b");
  EXPECT_TRUE(body.at("result").is_string());
  FunctionInfo info;
  info.name = "\xff";
  ASSERT_NO_THROW(text = FunctionInfoToJson(info));
  EXPECT_EQ(json::parse(text).at("name"), "\xef\xbf\xbd");
}

TEST(ServiceJsonTest, FunctionInfoHasEveryField) {
  FunctionInfo info{"fn", "host",  Runtime::kExec, "/bin/cat", false,          FunctionState::kWarm,
                    7,    1 << 20, 3000,           60000,      "/etc/fn.toml", "pulled x",
                    "",   2,       12.5,           true};
  EXPECT_EQ(json::parse(FunctionInfoToJson(info)), json::parse(R"({
    "name": "fn", "image": "host", "runtime": "exec", "entry": "/bin/cat", "pool": false,
    "state": "warm", "requests": 7, "memory_bytes": 1048576, "timeout_ms": 3000,
    "cold_after_ms": 60000, "spec_path": "/etc/fn.toml", "progress": "pulled x", "error": "",
    "warm_ups": 2, "warm_ms": 12.5, "forked": true})"));
}

}  // namespace
}  // namespace zygo::supervisor
