// The benches' HTTP/1.1 client: requests written by hand, replies parsed by http-parser.
#include "sdk/cpp/zygo/api_connection.h"

#include <errno.h>
#include <http_parser.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::sdk {
namespace {

// What the parser callbacks fill in for one reply.
struct ReplyState {
  HttpReply reply;
  bool complete = false;
  bool keep_alive = true;
};

int OnBody(http_parser* parser, const char* at, size_t length) {
  static_cast<ReplyState*>(parser->data)->reply.body.append(at, length);
  return 0;
}

int OnMessageComplete(http_parser* parser) {
  auto* state = static_cast<ReplyState*>(parser->data);
  state->reply.status = static_cast<int>(parser->status_code);
  state->keep_alive = http_should_keep_alive(parser) != 0;
  state->complete = true;
  return 0;
}

const http_parser_settings& Settings() {
  static const http_parser_settings settings = [] {
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_body = &OnBody;
    s.on_message_complete = &OnMessageComplete;
    return s;
  }();
  return settings;
}

}  // namespace

absl::StatusOr<base::UniqueFd> ConnectUnixSocket(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path is ", path.size(),
                                                   " bytes, over the limit of ",
                                                   sizeof(address.sun_path) - 1, ": ", path));
  }
  memcpy(address.sun_path, path.c_str(), path.size() + 1);
  base::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return base::ErrnoStatus(errno, "socket(AF_UNIX)");
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    absl::Status status = base::ErrnoStatus(errno, absl::StrCat("connect(", path, ")"));
    return absl::UnavailableError(absl::StrCat("cannot reach the supervisor: ", status.message()));
  }
  return fd;
}

absl::StatusOr<ApiConnection> ApiConnection::Connect(const std::string& socket_path) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd, ConnectUnixSocket(socket_path));
  return ApiConnection(socket_path, std::move(fd));
}

int ApiConnection::SendAll(absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

absl::StatusOr<HttpReply> ApiConnection::ReadReply(bool& closed_unanswered) {
  ReplyState state;
  http_parser parser;
  http_parser_init(&parser, HTTP_RESPONSE);
  parser.data = &state;
  char buffer[64 * 1024];
  bool received = false;
  while (!state.complete) {
    ssize_t n = recv(fd_.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      fd_.Reset();
      closed_unanswered = !received && err == ECONNRESET;
      return base::ErrnoStatus(err, absl::StrCat("recv(", socket_path_, ")"));
    }
    closed_unanswered = !received && n == 0;
    received = true;
    // A zero-length execute tells the parser the stream ended (a reply framed by EOF).
    size_t parsed = http_parser_execute(&parser, &Settings(), buffer, static_cast<size_t>(n));
    if (HTTP_PARSER_ERRNO(&parser) != HPE_OK || parsed != static_cast<size_t>(n)) {
      fd_.Reset();
      return absl::InternalError(absl::StrCat(
          "malformed HTTP reply from ", socket_path_, ": ",
          http_errno_description(static_cast<http_errno>(HTTP_PARSER_ERRNO(&parser)))));
    }
    if (n == 0 && !state.complete) {
      fd_.Reset();
      return absl::UnavailableError(absl::StrCat(
          "the supervisor closed the connection before replying (", socket_path_, ")"));
    }
  }
  if (!state.keep_alive) fd_.Reset();
  return std::move(state.reply);
}

absl::StatusOr<HttpReply> ApiConnection::Exchange(bool& closed_unanswered) {
  closed_unanswered = false;
  if (const int err = SendAll(request_); err != 0) {
    // A server may answer before it has read the whole request and then close (a 413 for
    // an event over its limit): the rest of the send then fails, but the answer already
    // waits in this socket's receive queue, and it is what the caller needs to see.
    if (err == EPIPE || err == ECONNRESET) {
      absl::StatusOr<HttpReply> early = ReadReply(closed_unanswered);
      if (early.ok()) {
        fd_.Reset();
        return early;
      }
    }
    fd_.Reset();
    return base::ErrnoStatus(err, absl::StrCat("send(", socket_path_, ")"));
  }
  return ReadReply(closed_unanswered);
}

absl::StatusOr<HttpReply> ApiConnection::Call(absl::string_view method, absl::string_view target,
                                              absl::string_view body) {
  // A kept-alive connection may have been closed by the server while it sat idle (its
  // idle timeout, 75 s by default) without this side knowing: the request then meets
  // EPIPE or ECONNRESET, or EOF before any byte of a reply. The server read none of it,
  // so it goes again, once, on a new connection. A fresh connection gets no second try.
  const bool reused = fd_.valid();
  if (!reused) {
    ZYGO_ASSIGN_OR_RETURN(fd_, ConnectUnixSocket(socket_path_));
  }
  request_.clear();
  absl::StrAppend(&request_, method, " ", target, " HTTP/1.1\r\nHost: zygo\r\n");
  if (method == "POST" || method == "PUT") {
    absl::StrAppend(&request_, "Content-Length: ", body.size(), "\r\n");
  }
  absl::StrAppend(&request_, "\r\n", body);
  bool closed_unanswered = false;
  absl::StatusOr<HttpReply> reply = Exchange(closed_unanswered);
  if (reply.ok() || !reused || !closed_unanswered) return reply;
  ZYGO_ASSIGN_OR_RETURN(fd_, ConnectUnixSocket(socket_path_));
  return Exchange(closed_unanswered);
}

absl::StatusOr<nlohmann::json> ApiConnection::CallJson(absl::string_view method,
                                                       absl::string_view target,
                                                       absl::string_view body) {
  ZYGO_ASSIGN_OR_RETURN(HttpReply reply, Call(method, target, body));
  nlohmann::json json = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (reply.status < 200 || reply.status > 299) {
    return absl::InternalError(absl::StrCat(method, " ", target, ": HTTP ", reply.status, ": ",
                                            reply.body.substr(0, 2000)));
  }
  if (json.is_discarded()) {
    return absl::InternalError(
        absl::StrCat(method, " ", target, ": the reply is not JSON: ", reply.body.substr(0, 200)));
  }
  return json;
}

std::string EscapeQueryValue(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace zygo::sdk
