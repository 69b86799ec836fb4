// The HTTP server's I/O: the socket file, the libuv loop, accepting clients (each counted
// against the connection caps by its peer credentials' uid) and the queue that carries
// Service::Exec replies from supervisor threads back to the loop thread. One client's
// connection is http_connection.cc.
#include "supervisor/http_server.h"

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "supervisor/http_connection.h"
#include "supervisor/http_routes.h"
#include "supervisor/socket_file.h"

namespace zygo::supervisor {
namespace {

constexpr int kListenBacklog = 4096;

absl::Status UvStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", uv_strerror(err));
  if (err == UV_EADDRINUSE) return absl::AlreadyExistsError(message);
  if (err == UV_EACCES || err == UV_EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// The connecting process's uid, as the kernel recorded it at connect().
absl::StatusOr<uid_t> PeerUid(uv_stream_t* stream) {
  uv_os_fd_t fd;
  if (int err = uv_fileno(reinterpret_cast<uv_handle_t*>(stream), &fd); err != 0) {
    return UvStatus(err, "uv_fileno(client)");
  }
  struct ucred peer = {};
  socklen_t length = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("getsockopt(", fd, ", SO_PEERCRED)"));
  }
  return peer.uid;
}

void IgnoreSigpipeIfDefault() {
  struct sigaction current = {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if (current.sa_handler != SIG_DFL) return;  // the program chose; respect it
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Listen(const std::string& socket_path,
                                                               Service* service,
                                                               const HttpLimits& limits) {
  // libuv 1.44 silently truncates a longer path; bind would then create another file.
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket path must be 1 to ", sizeof(sockaddr_un::sun_path) - 1, " bytes: ", socket_path));
  }
  IgnoreSigpipeIfDefault();
  std::unique_ptr<HttpServer> server(new HttpServer(socket_path, service, limits));
  ZYGO_RETURN_IF_ERROR(server->Start());
  return server;
}

HttpServer::HttpServer(std::string socket_path, Service* service, const HttpLimits& limits)
    : socket_path_(std::move(socket_path)),
      service_(service),
      limits_(limits),
      admission_(limits),
      read_buffer_(new char[kHttpReadBufferBytes]) {}

absl::Status HttpServer::Start() {
  int err = uv_loop_init(&loop_);
  if (err != 0) return UvStatus(err, "uv_loop_init");
  loop_init_ = true;
  loop_.data = this;
  if ((err = uv_async_init(&loop_, &stop_async_, &HttpServer::OnStopRequested)) != 0) {
    return UvStatus(err, "uv_async_init");
  }
  stop_async_.data = this;
  stop_async_init_ = true;
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_async_open_ = true;
  }
  if ((err = uv_async_init(&loop_, &reply_async_, &HttpServer::OnRepliesReady)) != 0) {
    return UvStatus(err, "uv_async_init");
  }
  reply_async_.data = this;
  reply_async_init_ = true;
  replies_ = std::make_shared<ReplyQueue>(&reply_async_);
  return Bind();
}

absl::Status HttpServer::Bind() {
  ZYGO_RETURN_IF_ERROR(PrepareSocketPath(socket_path_));
  int err = uv_pipe_init(&loop_, &listener_, 0);
  if (err != 0) return UvStatus(err, "uv_pipe_init");
  listener_.data = this;
  listener_init_ = true;
  if ((err = uv_pipe_bind(&listener_, socket_path_.c_str())) != 0) {
    return UvStatus(err, absl::StrCat("bind(", socket_path_, ")"));
  }
  struct stat st;
  if (stat(socket_path_.c_str(), &st) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("stat(", socket_path_, ")"));
  }
  bound_ = true;
  socket_dev_ = st.st_dev;
  socket_ino_ = st.st_ino;
  // Before listen(): until then connect() is refused, so no client can get in while the
  // mode still comes from the umask.
  if (chmod(socket_path_.c_str(), 0600) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("chmod(", socket_path_, ", 0600)"));
  }
  if ((err = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), kListenBacklog,
                       &HttpServer::OnConnection)) != 0) {
    return UvStatus(err, absl::StrCat("listen(", socket_path_, ")"));
  }
  return absl::OkStatus();
}

HttpServer::~HttpServer() {
  if (loop_init_) {
    Shutdown();
    uv_run(&loop_, UV_RUN_DEFAULT);  // runs the close callbacks
    uv_loop_close(&loop_);
  }
  struct stat st;
  if (bound_ && lstat(socket_path_.c_str(), &st) == 0 && st.st_dev == socket_dev_ &&
      st.st_ino == socket_ino_) {
    unlink(socket_path_.c_str());
  }
}

void HttpServer::Run() { uv_run(&loop_, UV_RUN_DEFAULT); }

void HttpServer::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  // Closed means Shutdown already ran: there is nothing left to stop.
  if (stop_async_open_) uv_async_send(&stop_async_);
}

void HttpServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (stop_async_init_) {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stop_async_open_ = false;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&stop_async_), nullptr);
  }
  if (listener_init_) uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  // Close() erases nothing until its callback, but copy: callbacks are not re-entrant here.
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [ptr, connection] : connections_) open.push_back(connection);
  for (auto& connection : open) connection->Close();
  if (reply_async_init_) {
    replies_->Shut();
    uv_close(reinterpret_cast<uv_handle_t*>(&reply_async_), nullptr);
  }
}

// Every pending client is accepted at once, and one over a cap is answered 503 and closed
// then and there: the listen backlog never fills with clients nobody serves, so one that
// is within its caps is served however many connections another client holds open.
void HttpServer::OnConnection(uv_stream_t* listener, int status) {
  auto* server = static_cast<HttpServer*>(listener->data);
  if (status < 0) return;  // e.g. EMFILE: libuv accepts and closes pending clients itself
  auto connection = std::make_shared<Connection>(server);
  server->connections_[connection.get()] = connection;
  if (uv_accept(listener, connection->stream()) != 0) {
    connection->Close();
    return;
  }
  absl::StatusOr<uid_t> uid = PeerUid(connection->stream());
  absl::Status admitted = uid.ok() ? server->admission_.Admit(*uid) : uid.status();
  if (!admitted.ok()) {
    connection->Refuse(ErrorResponse(503, "unavailable", admitted.message()));
    return;
  }
  connection->Start(*uid);
}

void HttpServer::OnStopRequested(uv_async_t* async) {
  static_cast<HttpServer*>(async->data)->Shutdown();
}

void HttpServer::OnRepliesReady(uv_async_t* async) {
  auto* server = static_cast<HttpServer*>(async->data);
  for (ReplyQueue::Item& item : server->replies_->TakeAll()) {
    if (std::shared_ptr<Connection> connection = item.connection.lock()) {
      connection->OnExecReply(item.seq, std::move(item.response), item.written);
    }
  }
}

}  // namespace zygo::supervisor
