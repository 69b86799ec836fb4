// A minimal HTTP/1.1 keep-alive client of the supervisor's API over its unix socket, for
// `zygo up/down/ls/exec` and the warm-path benches: one connection, one request at a time,
// replies parsed with http-parser. No libcurl (it has no static archive), so the static
// `zygo` links it and a `zygo exec` costs no shared-library loading.
#ifndef ZYGO_SDK_CPP_ZYGO_API_CONNECTION_H_
#define ZYGO_SDK_CPP_ZYGO_API_CONNECTION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"
#include "nlohmann/json.hpp"

namespace zygo::sdk {

struct HttpReply {
  int status = 0;
  std::string body;
};

// One keep-alive connection. Move-only; use from one thread at a time.
class ApiConnection {
 public:
  // Connects to the socket. Unavailable when nothing listens there.
  static absl::StatusOr<ApiConnection> Connect(const std::string& socket_path);

  ApiConnection(ApiConnection&&) = default;
  ApiConnection& operator=(ApiConnection&&) = default;

  // Sends one request and reads its whole reply. When the server closed the connection
  // after the previous reply (no keep-alive), reconnects first; when it closed a
  // kept-alive one while it sat idle (found only on sending: EPIPE, ECONNRESET, or EOF
  // before any byte of a reply), reconnects and sends the request once more. Any status
  // is returned as it came; an error means no complete reply arrived. A reply the server
  // sent before it stopped reading the request (a 413, say) is returned like any other.
  absl::StatusOr<HttpReply> Call(absl::string_view method, absl::string_view target,
                                 absl::string_view body);

  // Call() plus the API's conventions: the parsed body of a 2xx reply, else the API's
  // error ({"error":{"code","message"}}) as an Internal error that quotes it.
  absl::StatusOr<nlohmann::json> CallJson(absl::string_view method, absl::string_view target,
                                          absl::string_view body);

  const std::string& socket_path() const { return socket_path_; }

 private:
  ApiConnection(std::string socket_path, base::UniqueFd fd)
      : socket_path_(std::move(socket_path)), fd_(std::move(fd)) {}

  // 0 when all of `data` went, else the errno of the send that failed.
  int SendAll(absl::string_view data);
  // Sends request_ on fd_ and reads the reply. On an error, fd_ is closed, and
  // `closed_unanswered` says whether the peer had closed before any byte of a reply.
  absl::StatusOr<HttpReply> Exchange(bool& closed_unanswered);
  absl::StatusOr<HttpReply> ReadReply(bool& closed_unanswered);

  std::string socket_path_;
  base::UniqueFd fd_;
  std::string request_;  // reused between calls: no allocation once it has grown
};

// A connected AF_UNIX stream socket. Unavailable when nothing listens at `path`;
// InvalidArgument when the path does not fit in sun_path.
absl::StatusOr<base::UniqueFd> ConnectUnixSocket(const std::string& path);

// Percent-escapes a query value ("sha256:ab" -> "sha256%3Aab").
std::string EscapeQueryValue(absl::string_view text);

}  // namespace zygo::sdk

#endif  // ZYGO_SDK_CPP_ZYGO_API_CONNECTION_H_
