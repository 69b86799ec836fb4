// Routing and status mapping for the HTTP/JSON API (see http_routes.h for the table).
#include "supervisor/http_routes.h"

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace zygo::supervisor {
namespace {

// ordered_json keeps fields in the documented order, which reads better in a terminal.
using json = nlohmann::ordered_json;

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse OkResponse() { return JsonResponse(200, R"({"ok":true})"); }

HttpResponse MethodNotAllowed(const HttpRequest& request, absl::string_view allow) {
  HttpResponse response = ErrorResponse(
      405, "method_not_allowed", absl::StrCat(request.method, " is not allowed here; use ", allow));
  response.allow = std::string(allow);
  return response;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path's segments after the leading '/', each percent-decoded ("/v1/a%20b" ->
// ["v1", "a b"]). Decoding after splitting keeps an encoded '/' inside its segment.
absl::StatusOr<std::vector<std::string>> DecodePath(absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("request path must start with '/': ", path));
  }
  std::vector<std::string> segments;
  for (absl::string_view raw : absl::StrSplit(path.substr(1), '/')) {
    absl::StatusOr<std::string> segment = PercentDecode(raw, /*plus_is_space=*/false);
    if (!segment.ok()) return segment.status();
    segments.push_back(*std::move(segment));
  }
  return segments;
}

std::string Param(const QueryParams& params, const std::string& key, const std::string& fallback) {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

HttpResponse ListFunctions(Service& service) {
  std::string body = R"({"functions":[)";
  bool first = true;
  for (const FunctionInfo& info : service.List()) {
    absl::StrAppend(&body, first ? "" : ",", FunctionInfoToJson(info));
    first = false;
  }
  body += "]}";
  return JsonResponse(200, std::move(body));
}

HttpResponse UpFunction(const HttpRequest& request, const QueryParams& params, Service& service) {
  absl::StatusOr<FunctionInfo> info =
      service.Up(request.body, Param(params, "origin", "request"), Param(params, "base_dir", ""));
  if (!info.ok()) return StatusResponse(info.status());
  return JsonResponse(201, FunctionInfoToJson(*info));
}

HttpResponse PutScript(const HttpRequest& request, Service& service) {
  absl::StatusOr<std::string> digest = service.PutScript(request.body);
  if (!digest.ok()) return StatusResponse(digest.status());
  return JsonResponse(201, DumpJson(json{{"digest", *digest}}));
}

// /v1/functions/NAME/exec: the one path whose body is an event.
bool IsExecPath(const std::vector<std::string>& segments) {
  return segments.size() == 4 && segments[0] == "v1" && segments[1] == "functions" &&
         !segments[2].empty() && segments[3] == "exec";
}

HttpResponse DownFunction(const HttpRequest& request, const std::string& name, Service& service) {
  if (request.method != "DELETE") return MethodNotAllowed(request, "DELETE");
  absl::Status status = service.Down(name);
  return status.ok() ? OkResponse() : StatusResponse(status);
}

// Takes the request's body.
RouteResult ExecFunction(HttpRequest&& request, const std::string& name,
                         const QueryParams& params) {
  if (request.method != "POST") return MethodNotAllowed(request, "POST");
  ExecRequest exec;
  exec.function = name;
  exec.script_digest = Param(params, "script", "");
  // The API cannot know the function's runtime; the core reads whichever it needs.
  exec.stdin_data = request.body;
  exec.event_json = std::move(request.body);
  return exec;
}

// Empty when no route matches the path.
std::optional<RouteResult> RouteDecoded(HttpRequest&& request,
                                        const std::vector<std::string>& segments,
                                        const QueryParams& params, Service& service) {
  const size_t n = segments.size();
  if (n < 2 || segments[0] != "v1") return std::nullopt;
  if (n == 2 && segments[1] == "health") {
    if (request.method != "GET") return MethodNotAllowed(request, "GET");
    return OkResponse();
  }
  if (n == 2 && segments[1] == "scripts") {
    if (request.method != "PUT") return MethodNotAllowed(request, "PUT");
    return PutScript(request, service);
  }
  if (segments[1] != "functions") return std::nullopt;
  if (n == 2) {
    if (request.method == "GET") return ListFunctions(service);
    if (request.method == "POST") return UpFunction(request, params, service);
    return MethodNotAllowed(request, "GET, POST");
  }
  if (n == 3 && !segments[2].empty()) return DownFunction(request, segments[2], service);
  if (IsExecPath(segments)) return ExecFunction(std::move(request), segments[2], params);
  return std::nullopt;
}

}  // namespace

int HttpStatusForCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kFailedPrecondition:
      return 412;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ErrorCodeName(absl::StatusCode code) {
  // absl names codes in SCREAMING_SNAKE_CASE ("NOT_FOUND"); unknown integers come out
  // as "" and get a name here so the field is never empty.
  std::string name = absl::AsciiStrToLower(absl::StatusCodeToString(code));
  return name.empty() ? "unknown" : name;
}

const char* HttpReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

HttpResponse ErrorResponse(int http_status, absl::string_view code, absl::string_view message) {
  json body = {{"error", {{"code", std::string(code)}, {"message", std::string(message)}}}};
  HttpResponse response = JsonResponse(http_status, DumpJson(body));
  if (http_status == 429) response.retry_after_s = kRetryAfterSeconds;
  return response;
}

HttpResponse StatusResponse(const absl::Status& status) {
  if (status.ok()) {
    return ErrorResponse(500, "internal", "an error reply carried an OK status");
  }
  if (IsEventTooLarge(status)) return ErrorResponse(413, "payload_too_large", status.message());
  return ErrorResponse(HttpStatusForCode(status.code()), ErrorCodeName(status.code()),
                       status.message());
}

HttpResponse BodyTooLargeResponse(absl::string_view target, std::optional<uint64_t> size) {
  absl::StatusOr<std::vector<std::string>> segments =
      DecodePath(target.substr(0, target.find('?')));
  if (segments.ok() && IsExecPath(*segments)) return StatusResponse(EventTooLargeError(size));
  const std::string limit = absl::StrCat("; the limit is ", kMaxRequestBodyBytes, " bytes");
  return ErrorResponse(413, "payload_too_large",
                       size.has_value() ? absl::StrCat("request body is ", *size, " bytes", limit)
                                        : absl::StrCat("request body is more than ",
                                                       kMaxRequestBodyBytes, " bytes", limit));
}

HttpResponse ExecReplyResponse(const ExecReply& reply) {
  if (!reply.status.ok()) return StatusResponse(reply.status);
  return JsonResponse(200, ExecReplyToJson(reply));
}

std::string SerializeResponse(const HttpResponse& response, bool keep_alive, bool http10) {
  std::string out = absl::StrCat(
      "HTTP/1.1 ", response.status, " ", HttpReasonPhrase(response.status),
      "\r\nContent-Type: application/json\r\nContent-Length: ", response.body.size(), "\r\n");
  if (!response.allow.empty()) absl::StrAppend(&out, "Allow: ", response.allow, "\r\n");
  if (response.retry_after_s > 0) {
    absl::StrAppend(&out, "Retry-After: ", response.retry_after_s, "\r\n");
  }
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (http10) {
    out += "Connection: keep-alive\r\n";
  }
  absl::StrAppend(&out, "\r\n", response.body);
  return out;
}

absl::StatusOr<std::string> PercentDecode(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
      continue;
    }
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    int high = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
    int low = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed percent-escape in \"", text, "\" at offset ", i));
    }
    if (high == 0 && low == 0) {
      return absl::InvalidArgumentError(absl::StrCat("%00 is not allowed in \"", text, "\""));
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

absl::StatusOr<QueryParams> ParseQuery(absl::string_view query) {
  QueryParams params;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    absl::StatusOr<std::string> key = PercentDecode(kv.first, /*plus_is_space=*/true);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value = PercentDecode(kv.second, /*plus_is_space=*/true);
    if (!value.ok()) return value.status();
    params[*std::move(key)] = *std::move(value);
  }
  return params;
}

RouteResult Route(HttpRequest&& request, Service& service) {
  try {
    absl::string_view target = request.target;
    size_t question = target.find('?');
    absl::string_view path = target.substr(0, question);
    absl::string_view query =
        question == absl::string_view::npos ? absl::string_view() : target.substr(question + 1);
    absl::StatusOr<std::vector<std::string>> segments = DecodePath(path);
    if (!segments.ok()) return ErrorResponse(400, "invalid_argument", segments.status().message());
    absl::StatusOr<QueryParams> params = ParseQuery(query);
    if (!params.ok()) return ErrorResponse(400, "invalid_argument", params.status().message());
    std::optional<RouteResult> result =
        RouteDecoded(std::move(request), *segments, *params, service);
    if (!result.has_value()) {
      return ErrorResponse(404, "not_found",
                           absl::StrCat("no route for ", request.method, " ", path));
    }
    return *std::move(result);
  } catch (const std::exception& e) {
    // The Service contract has no exceptions, but one must never reach the event loop.
    return ErrorResponse(500, "internal", absl::StrCat("request failed: ", e.what()));
  }
}

}  // namespace zygo::supervisor
