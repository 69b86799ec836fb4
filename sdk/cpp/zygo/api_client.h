// The HTTP/JSON client of the supervisor's API, over its unix socket, as `zygo up/down/ls/
// exec/scripts` use it: the API's conventions (JSON bodies, typed errors) on top of
// api_connection.h.
#ifndef ZYGO_SDK_CPP_ZYGO_API_CLIENT_H_
#define ZYGO_SDK_CPP_ZYGO_API_CLIENT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/api_connection.h"

namespace zygo::sdk {

// One request, as sent. POST and PUT always send `body`, even empty; GET and DELETE never.
struct ApiRequest {
  std::string method = "GET";
  std::string path;  // "/v1/functions?origin=..."; escape parts with ApiClient::Escape
  std::string body;
  std::string content_type;  // "" sends none
};

// One client is one keep-alive connection, made on first use: one thread at a time.
class ApiClient {
 public:
  explicit ApiClient(std::string socket_path);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // Sends `request` and returns the parsed JSON body of a 2xx reply. Errors:
  // Unavailable "cannot reach the supervisor at SOCK: ..." when nothing answers on the
  // socket; an API error ({"error":{"code","message"}}) as the matching absl code with the
  // API's message; Internal when the reply is not the API's JSON.
  absl::StatusOr<nlohmann::json> Call(const ApiRequest& request);

  // Percent-escapes a path segment or a query value.
  static std::string Escape(absl::string_view text);

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::optional<ApiConnection> connection_;
};

// The absl code for an API error code ("not_found"), falling back on the HTTP status.
absl::StatusCode ApiErrorCode(absl::string_view code, long http_status);

}  // namespace zygo::sdk

#endif  // ZYGO_SDK_CPP_ZYGO_API_CLIENT_H_
