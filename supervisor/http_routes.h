// The HTTP/JSON API as pure functions: a parsed request becomes Service calls, and
// replies and Status become an HTTP status plus a JSON body. No sockets, so every route
// and mapping is unit-testable; HttpServer does the I/O.
#ifndef ZYGO_SUPERVISOR_HTTP_ROUTES_H_
#define ZYGO_SUPERVISOR_HTTP_ROUTES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "supervisor/event_limit.h"
#include "supervisor/service.h"

namespace zygo::supervisor {

// Larger bodies get 413 before they are read. Every body has the event's limit: an exec's
// body is its event, and a script or spec has no reason to be larger.
inline constexpr size_t kMaxRequestBodyBytes = kMaxEventBytes;

struct HttpRequest {
  std::string method;  // as http_parser names it: "GET", "POST", ...
  std::string target;  // the request target as sent: the path plus an optional "?query"
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string body;       // JSON text
  std::string allow;      // 405 only: the methods the path does accept, for the Allow header
  int retry_after_s = 0;  // 429 only: the Retry-After header when > 0
};

// InvalidArgument 400, NotFound 404, AlreadyExists 409, FailedPrecondition 412,
// ResourceExhausted 429 (StatusResponse answers an event over its limit 413), Cancelled 499,
// Unimplemented 501, Unavailable 503, DeadlineExceeded 504; every other code (OK included) 500.
int HttpStatusForCode(absl::StatusCode code);

// The absl code's name in snake_case ("not_found"), as error.code shows it.
std::string ErrorCodeName(absl::StatusCode code);

// "Not Found" for 404, and so on; "Unknown" for a status this API never sends.
const char* HttpReasonPhrase(int status);

// {"error":{"code":code,"message":message}} with the given HTTP status. The HTTP-level
// failures with no absl counterpart use "method_not_allowed" (405) and
// "payload_too_large" (413); the rest use absl code names. A 429 carries Retry-After:
// kRetryAfterSeconds.
HttpResponse ErrorResponse(int http_status, absl::string_view code, absl::string_view message);

// The error form of a non-OK status (an OK one becomes a 500: it is a caller's bug); an
// event over its limit (IsEventTooLarge) is 413 "payload_too_large".
HttpResponse StatusResponse(const absl::Status& status);

// 413 for a body over kMaxRequestBodyBytes, sent before it is read: for an exec target the
// event's words ("event is N bytes; the limit is M bytes"), else the same for a "request
// body". `size` is the declared Content-Length; nullopt for a chunked body.
HttpResponse BodyTooLargeResponse(absl::string_view target, std::optional<uint64_t> size);

// 200 with ExecReplyToJson when the request ran; otherwise the error form of its status.
HttpResponse ExecReplyResponse(const ExecReply& reply);

// The bytes of a response: status line, Content-Type, Content-Length, Allow and
// Retry-After when set,
// "Connection: close" unless `keep_alive` ("Connection: keep-alive" for a kept HTTP/1.0
// client, which would otherwise assume close), then the body.
std::string SerializeResponse(const HttpResponse& response, bool keep_alive, bool http10);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in query strings).
// InvalidArgument on a malformed escape or a decoded NUL byte.
absl::StatusOr<std::string> PercentDecode(absl::string_view text, bool plus_is_space);

// "a=1&b=x%20y" -> {a: "1", b: "x y"}. A key without '=' maps to ""; the last of repeated
// keys wins. Keys and values are percent-decoded with '+' as a space.
using QueryParams = std::map<std::string, std::string>;
absl::StatusOr<QueryParams> ParseQuery(absl::string_view query);

// Either the finished response, or the exec the caller must start with Service::Exec and
// answer, when its callback fires, with ExecReplyResponse.
using RouteResult = std::variant<HttpResponse, ExecRequest>;

// Maps one request onto the API (see service.h for what each call does):
//   GET    /v1/health                     200 {"ok":true}
//   GET    /v1/functions                  200 {"functions":[...]}
//   POST   /v1/functions?origin=&base_dir= Up(body, origin or "request", base_dir) -> 201
//   DELETE /v1/functions/NAME             Down -> 200 {"ok":true}
//   PUT    /v1/scripts                    PutScript(body) -> 201 {"digest":...}
//   POST   /v1/functions/NAME/exec[?script=DIGEST]  an ExecRequest (the body is both the
//                                         event and stdin; the function's runtime decides)
// Unknown paths get 404, known paths with another method 405. An exec's ExecRequest takes
// the body (moved, not copied). Calls `service` on the caller's thread; never throws.
RouteResult Route(HttpRequest&& request, Service& service);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_HTTP_ROUTES_H_
