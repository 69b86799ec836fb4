// libcurl over the supervisor's unix socket: one request, its reply parsed as JSON, and the
// API's typed errors turned into absl::Status.
#include "cli/api_client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zygo::cli {
namespace {

// Connecting to a local socket is immediate or never: a short timeout turns a wedged
// listener (backlog full) into an error instead of a hang. The request itself has no
// timeout: a function's own timeout bounds an exec, and Ctrl-C cancels it.
constexpr long kConnectTimeoutSeconds = 5;
constexpr size_t kMaxQuotedBody = 200;

CURLcode GlobalInit() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return result;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

absl::Status Unreachable(const std::string& socket_path, long os_errno) {
  if (os_errno == EACCES || os_errno == EPERM) {
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
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

ApiClient::ApiClient(std::string socket_path) : socket_path_(std::move(socket_path)) {
  if (GlobalInit() == CURLE_OK) curl_ = curl_easy_init();
}

ApiClient::~ApiClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

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
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return absl::InternalError("libcurl failed to initialise");
  curl_easy_reset(curl);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr,
                                                                      &curl_slist_free_all);
  // No "Expect: 100-continue" round trip: the server is local and reads every body.
  std::vector<std::string> header_lines = {"Expect:", "Accept: application/json"};
  // An empty value removes the form-encoding type libcurl would give a POST.
  header_lines.push_back(
      absl::StrCat("Content-Type:", request.content_type.empty() ? "" : " ", request.content_type));
  for (const std::string& line : header_lines) {
    curl_slist* appended = curl_slist_append(headers.get(), line.c_str());
    if (appended == nullptr) return absl::ResourceExhaustedError("curl_slist_append");
    headers.release();
    headers.reset(appended);
  }
  std::string url = absl::StrCat("http://localhost", request.path);
  std::string body;
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path_.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "POST" || request.method == "PUT") {
    // Even an empty body is sent, so the request carries "Content-Length: 0".
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `error` goes out of scope
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT) {
    long os_errno = 0;
    curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
    return Unreachable(socket_path_, os_errno);
  }
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(request.method, " ", request.path, " on ",
                                               socket_path_, ": ",
                                               error[0] != '\0' ? error : curl_easy_strerror(rc)));
  }
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  if (http_status < 200 || http_status >= 300) return ErrorFromReply(request, http_status, body);
  nlohmann::json reply = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    return absl::InternalError(
        absl::StrCat(request.method, " ", request.path,
                     ": the supervisor's reply is not JSON: ", body.substr(0, kMaxQuotedBody)));
  }
  return reply;
}

}  // namespace zygo::cli
