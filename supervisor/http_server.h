// Serves a Service's HTTP/JSON API (the routes in http_routes.h) on a unix socket, so
// `curl --unix-socket` and the SDKs can reach it. One libuv loop thread does all I/O;
// Service::Exec replies come back to it through a uv_async_t.
#ifndef ZYGO_SUPERVISOR_HTTP_SERVER_H_
#define ZYGO_SUPERVISOR_HTTP_SERVER_H_

#include <sys/types.h>
#include <uv.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "supervisor/connection_limits.h"
#include "supervisor/service.h"

namespace zygo::supervisor {

// Behaviour per connection: HTTP/1.1 and 1.0, keep-alive, one request at a time
// (pipelined requests wait their turn). Malformed HTTP gets 400 and the connection closes;
// a body over kMaxRequestBodyBytes gets 413 and closes. A client that hangs up (EOF or
// reset, a half-close included) while its exec runs has that request cancelled. The
// limits (connection_limits.h): a request not read in full within request_timeout gets
// 408 and closes; a connection idle for idle_timeout closes; a client (the uid of its
// peer credentials) past max_connections_per_client, or anyone past max_connections, gets
// 503 at once and is closed.
class HttpServer {
 public:
  // Creates the socket's parent directories (0700) when missing, replaces a stale socket
  // file that nothing listens on, binds and chmods the socket 0600 before listening.
  // AlreadyExists when another server listens on `socket_path`; FailedPrecondition when
  // something other than a socket is there. Ignores SIGPIPE when its disposition is the
  // default, since a client that hangs up mid-reply must not kill the daemon.
  // `service` must outlive the server. Connections queue in the backlog until Run().
  static absl::StatusOr<std::unique_ptr<HttpServer>> Listen(const std::string& socket_path,
                                                            Service* service,
                                                            const HttpLimits& limits = {});

  // Unlinks the socket (when it is still the one this server bound). Must not run while
  // Run() is running: Stop() and join the thread first. Closes anything still open.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves on the calling thread until Stop(). Call at most once.
  void Run();

  // Makes Run() return: stops accepting, closes every connection and cancels their
  // requests in flight. Thread-safe; any number of times, before or during Run().
  void Stop();

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Connection;
  class ExecReplyWriter;
  class ReplyQueue;

  HttpServer(std::string socket_path, Service* service, const HttpLimits& limits);

  absl::Status Start();
  absl::Status Bind();
  void Shutdown();  // loop thread (or the destructor): closes every handle

  static void OnConnection(uv_stream_t* listener, int status);
  static void OnStopRequested(uv_async_t* async);
  static void OnRepliesReady(uv_async_t* async);

  const std::string socket_path_;
  Service* const service_;
  const HttpLimits limits_;
  ConnectionAdmission admission_;  // loop thread only
  uv_loop_t loop_;
  uv_pipe_t listener_;
  uv_async_t stop_async_;
  uv_async_t reply_async_;
  bool loop_init_ = false;
  bool listener_init_ = false;
  bool stop_async_init_ = false;
  bool reply_async_init_ = false;
  bool shut_down_ = false;
  // The socket this server bound, so the destructor never unlinks a successor's.
  bool bound_ = false;
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;

  std::shared_ptr<ReplyQueue> replies_;
  // Owned here until their uv_close callback; loop thread only.
  std::map<Connection*, std::shared_ptr<Connection>> connections_;
  // One read buffer for all connections: the loop copies each read out before the next.
  std::unique_ptr<char[]> read_buffer_;

  std::mutex stop_mu_;
  bool stop_async_open_ = false;  // guarded by stop_mu_
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_HTTP_SERVER_H_
