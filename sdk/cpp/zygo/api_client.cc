// One request over the supervisor's unix socket (api_connection.h: http-parser,
// no libcurl), its reply parsed as JSON, and the API's typed errors turned into absl::Status.
#include "sdk/cpp/zygo/api_client.h"

#include <ctype.h>
#include <errno.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace zygo::sdk {
namespace {

constexpr size_t kMaxQuotedBody = 200;

std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

absl::Status Unreachable(const std::string& socket_path, const absl::Status& why) {
  if (absl::StrContains(why.message(), "ermission denied")) {
    return absl::UnavailableError(absl::StrCat("cannot reach the supervisor at ", socket_path,
                                               ": permission denied on the socket"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot reach the supervisor at ", socket_path, ": is `zygo serve` running?"));
}

// A non-2xx reply: the API's error object when there is one, else the start of the body.
absl::Status ErrorFromReply(const ApiRequest& request, long http_status, const std::string& body) {
  nlohmann::json reply = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object() && reply.contains("error") && reply["error"].is_object()) {
    const nlohmann::json& error = reply["error"];
    std::string code = StringField(error, "code");
    std::string message = StringField(error, "message");
    if (message.empty()) message = absl::StrCat("the supervisor answered ", code);
    return absl::Status(ApiErrorCode(code, http_status), message);
  }
  return absl::Status(
      ApiErrorCode("", http_status),
      absl::StrCat(request.method, " ", request.path, ": the supervisor answered HTTP ",
                   http_status, ": ", body.substr(0, kMaxQuotedBody)));
}

}  // namespace

absl::StatusCode ApiErrorCode(absl::string_view code, long http_status) {
  static constexpr std::pair<const char*, absl::StatusCode> kCodes[] = {
      {"invalid_argument", absl::StatusCode::kInvalidArgument},
      {"not_found", absl::StatusCode::kNotFound},
      {"already_exists", absl::StatusCode::kAlreadyExists},
      {"failed_precondition", absl::StatusCode::kFailedPrecondition},
      {"resource_exhausted", absl::StatusCode::kResourceExhausted},
      {"payload_too_large", absl::StatusCode::kResourceExhausted},
      {"unavailable", absl::StatusCode::kUnavailable},
      {"cancelled", absl::StatusCode::kCancelled},
      {"deadline_exceeded", absl::StatusCode::kDeadlineExceeded},
      {"permission_denied", absl::StatusCode::kPermissionDenied},
      {"unimplemented", absl::StatusCode::kUnimplemented},
      {"internal", absl::StatusCode::kInternal},
  };
  for (const auto& [name, status_code] : kCodes) {
    if (code == name) return status_code;
  }
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAlreadyExists;
    case 413:
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

ApiClient::ApiClient(std::string socket_path) : socket_path_(std::move(socket_path)) {}

ApiClient::~ApiClient() = default;

std::string ApiClient::Escape(absl::string_view text) {
  std::string escaped;
  for (unsigned char c : text) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      escaped.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      escaped.push_back('%');
      escaped.push_back(kHex[c >> 4]);
      escaped.push_back(kHex[c & 15]);
    }
  }
  return escaped;
}

absl::StatusOr<nlohmann::json> ApiClient::Call(const ApiRequest& request) {
  if (!connection_.has_value()) {
    absl::StatusOr<ApiConnection> connected = ApiConnection::Connect(socket_path_);
    if (!connected.ok()) return Unreachable(socket_path_, connected.status());
    connection_ = *std::move(connected);
  }
  const bool with_body = request.method == "POST" || request.method == "PUT";
  absl::StatusOr<HttpReply> reply =
      connection_->Call(request.method, request.path, with_body ? request.body : "");
  if (!reply.ok()) {
    connection_.reset();
    return absl::UnavailableError(absl::StrCat("the supervisor at ", socket_path_,
                                               " did not answer: ", reply.status().message()));
  }
  if (reply->status < 200 || reply->status > 299) {
    return ErrorFromReply(request, reply->status, reply->body);
  }
  nlohmann::json parsed = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InternalError(absl::StrCat(
        request.method, " ", request.path,
        ": the supervisor's reply is not JSON: ", reply->body.substr(0, kMaxQuotedBody)));
  }
  return parsed;
}

}  // namespace zygo::sdk
