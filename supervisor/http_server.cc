// The HTTP server's I/O: the socket file, the libuv loop, one Connection per client
// (http_parser state, buffered input, ordered writes) and the queue that carries
// Service::Exec replies from supervisor threads back to the loop thread. An exec reply
// is written to the client by the supervisor thread that has it (ExecReplyWriter): waking
// the loop thread first cost ~0.1 ms per request on an idle machine.
#include "supervisor/http_server.h"

#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"
#include "supervisor/http_routes.h"
#include "supervisor/socket_file.h"

namespace zygo::supervisor {
namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;
// Past these, a connection stops reading (pipelined input) or stops answering (a client
// that does not read its replies) until the backlog drains, so memory stays bounded.
constexpr size_t kMaxBufferedInput = 1 << 20;
constexpr size_t kMaxQueuedOutput = 1 << 20;
constexpr size_t kMaxTargetBytes = 64 * 1024;
constexpr int kListenBacklog = 4096;

absl::Status UvStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", uv_strerror(err));
  if (err == UV_EADDRINUSE) return absl::AlreadyExistsError(message);
  if (err == UV_EACCES || err == UV_EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
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

// Exec replies, handed from supervisor threads to the loop thread. Shared with the
// callbacks, so a reply that arrives after the server is gone is dropped, not delivered
// to freed memory.
class HttpServer::ReplyQueue {
 public:
  struct Item {
    std::weak_ptr<Connection> connection;
    uint64_t seq;
    std::string response;  // the serialized HTTP response
    size_t written = 0;    // how much of it already went to the client
  };

  explicit ReplyQueue(uv_async_t* async) : async_(async) {}

  // Any thread.
  void Post(Item item) {
    std::lock_guard<std::mutex> lock(mu_);
    if (async_ == nullptr) return;
    items_.push_back(std::move(item));
    // Under the lock: Shut() cannot close the handle in between.
    uv_async_send(async_);
  }

  std::deque<Item> TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(items_, {});
  }

  // Loop thread, before it closes the async handle.
  void Shut() {
    std::deque<Item> dropped;
    std::lock_guard<std::mutex> lock(mu_);
    async_ = nullptr;
    dropped.swap(items_);
  }

 private:
  std::mutex mu_;
  uv_async_t* async_;
  std::deque<Item> items_;
};

// Writes one exec reply straight to the client's socket from the thread that has the
// reply. Made on the loop thread when the request starts, and only when nothing is
// waiting in libuv's write queue; until the loop thread takes the posted reply, it writes
// nothing to that connection (busy_), so the bytes stay in order. Its own dup of the
// socket keeps the fd number from being reused if the loop closes the connection.
class HttpServer::ExecReplyWriter {
 public:
  explicit ExecReplyWriter(base::UniqueFd socket) : socket_(std::move(socket)) {}

  // Any thread. Writes what the socket takes now without blocking; returns how much.
  size_t Write(const std::string& response) {
    size_t done = 0;
    while (!abandoned_.load() && done < response.size()) {
      ssize_t n = send(socket_.get(), response.data() + done, response.size() - done,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // full, or gone: the loop thread writes the rest or closes
      done += static_cast<size_t>(n);
    }
    return done;
  }

  // Loop thread: the connection closed; a reply arriving later goes nowhere.
  void Abandon() { abandoned_.store(true); }

 private:
  const base::UniqueFd socket_;
  std::atomic<bool> abandoned_{false};
};

// One client. Lives in the server's map until its handle's close callback; everything
// here runs on the loop thread.
class HttpServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(HttpServer* server) : server_(server) {
    uv_pipe_init(&server->loop_, &pipe_, 0);
    pipe_.data = this;
    http_parser_init(&parser_, HTTP_REQUEST);
    parser_.data = this;
  }

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&pipe_); }

  void Start() {
    reading_ = true;
    if (uv_read_start(stream(), &Connection::OnAlloc, &Connection::OnRead) != 0) Close();
  }

  // Cancels the request in flight, if any, and closes the socket.
  void Close() {
    if (closing_) return;
    closing_ = true;
    if (reply_writer_) reply_writer_->Abandon();
    if (std::shared_ptr<RequestHandle> handle = std::move(handle_)) handle->Cancel();
    uv_close(reinterpret_cast<uv_handle_t*>(&pipe_), &Connection::OnClosed);
  }

  // `response` from its first byte; `written` of it went to the client already.
  void OnExecReply(uint64_t seq, std::string response, size_t written) {
    if (closing_ || !busy_ || seq != exec_seq_) return;
    busy_ = false;
    handle_.reset();
    reply_writer_.reset();
    if (!keep_alive_) close_after_write_ = true;
    if (written < response.size()) {
      Write(response.substr(written));
    } else if (close_after_write_ && writes_in_flight_ == 0) {
      Close();
      return;
    }
    Pump();
  }

 private:
  static const http_parser_settings kSettings;

  static Connection* From(http_parser* parser) { return static_cast<Connection*>(parser->data); }
  static Connection* From(uv_handle_t* handle) { return static_cast<Connection*>(handle->data); }

  static void OnClosed(uv_handle_t* handle) {
    From(handle)->server_->connections_.erase(From(handle));
  }

  static void OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
    *buf = uv_buf_init(From(handle)->server_->read_buffer_.get(), kReadBufferBytes);
  }

  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    Connection* self = From(reinterpret_cast<uv_handle_t*>(stream));
    if (nread > 0) {
      self->pending_input_.append(buf->base, nread);
      self->Pump();
    } else if (nread < 0) {
      self->OnHangup(nread == UV_EOF);
    }
  }

  struct WriteRequest {
    uv_write_t req;
    std::string data;
  };

  static void OnWritten(uv_write_t* req, int status) {
    std::unique_ptr<WriteRequest> write(reinterpret_cast<WriteRequest*>(req));
    Connection* self = From(reinterpret_cast<uv_handle_t*>(req->handle));
    --self->writes_in_flight_;
    if (status < 0 || (self->close_after_write_ && self->writes_in_flight_ == 0)) {
      self->Close();
    } else {
      self->Pump();
    }
  }

  void Write(std::string data) {
    if (closing_) return;
    auto write = std::make_unique<WriteRequest>();
    write->data = std::move(data);
    uv_buf_t buf = uv_buf_init(write->data.data(), write->data.size());
    if (uv_write(&write->req, stream(), &buf, 1, &Connection::OnWritten) != 0) {
      Close();
      return;
    }
    write.release();  // OnWritten owns it now
    ++writes_in_flight_;
  }

  void Respond(const HttpResponse& response) {
    if (!keep_alive_) close_after_write_ = true;
    Write(SerializeResponse(response, keep_alive_, http10_));
  }

  // Answers a request the parser rejected, then closes: the stream's framing is lost.
  void Reject(const HttpResponse& response) {
    keep_alive_ = false;
    Respond(response);
  }

  void OnHangup(bool eof) {
    read_eof_ = true;
    // A reset leaves nobody to answer; a hang-up during exec means nobody wants it.
    if (!eof || busy_) {
      Close();
      return;
    }
    Pump();
  }

  // Parses buffered input and answers requests, one at a time, as far as it can.
  void Pump() {
    size_t pos = 0;  // erasing once at the end keeps many pipelined requests linear
    while (!closing_ && !busy_ && !close_after_write_ && pos < pending_input_.size() &&
           uv_stream_get_write_queue_size(stream()) < kMaxQueuedOutput) {
      pos += http_parser_execute(&parser_, &kSettings, pending_input_.data() + pos,
                                 pending_input_.size() - pos);
      if (message_ready_) {
        message_ready_ = false;
        http_parser_pause(&parser_, 0);
        Dispatch();
      } else if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
        Reject(rejection_.value_or(
            ErrorResponse(400, "invalid_argument",
                          absl::StrCat("malformed HTTP request: ",
                                       http_errno_description(HTTP_PARSER_ERRNO(&parser_))))));
        pos = pending_input_.size();
      }
    }
    pending_input_.erase(0, pos);
    UpdateReading();
    if (!closing_ && read_eof_ && !busy_ && (pending_input_.empty() || close_after_write_)) {
      if (writes_in_flight_ == 0) {
        Close();
      } else {
        close_after_write_ = true;
      }
    }
  }

  void UpdateReading() {
    if (closing_) return;  // uv_close stops reading by itself
    bool want =
        !closing_ && !read_eof_ && !close_after_write_ && pending_input_.size() < kMaxBufferedInput;
    if (want == reading_) return;
    reading_ = want;
    if (want) {
      uv_read_start(stream(), &Connection::OnAlloc, &Connection::OnRead);
    } else {
      uv_read_stop(stream());
    }
  }

  void Dispatch() {
    RouteResult result = Route(request_, *server_->service_);
    if (auto* response = std::get_if<HttpResponse>(&result)) {
      Respond(*response);
      return;
    }
    StartExec(std::get<ExecRequest>(std::move(result)));
  }

  // A writer for this request's reply, when the reply may go straight to the socket.
  std::shared_ptr<ExecReplyWriter> MakeReplyWriter() {
    if (uv_stream_get_write_queue_size(stream()) != 0) return nullptr;
    uv_os_fd_t fd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(&pipe_), &fd) != 0) return nullptr;
    base::UniqueFd copy(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return nullptr;
    return std::make_shared<ExecReplyWriter>(std::move(copy));
  }

  void StartExec(ExecRequest exec) {
    busy_ = true;
    const uint64_t seq = ++exec_seq_;
    std::weak_ptr<Connection> weak = weak_from_this();
    std::shared_ptr<ReplyQueue> queue = server_->replies_;
    reply_writer_ = MakeReplyWriter();
    const bool keep_alive = keep_alive_, http10 = http10_;
    try {
      handle_ = server_->service_->Exec(std::move(exec), [queue, weak, seq, writer = reply_writer_,
                                                          keep_alive, http10](ExecReply reply) {
        ReplyQueue::Item item{weak, seq,
                              SerializeResponse(ExecReplyResponse(reply), keep_alive, http10)};
        if (writer) item.written = writer->Write(item.response);
        queue->Post(std::move(item));
      });
    } catch (const std::exception& e) {
      busy_ = false;
      reply_writer_.reset();
      Respond(ErrorResponse(500, "internal", absl::StrCat("exec failed: ", e.what())));
    }
  }

  // http_parser callbacks. Only the Expect header matters here; the API reads no others.
  static int OnMessageBegin(http_parser* parser) {
    Connection* self = From(parser);
    self->request_ = HttpRequest();
    self->header_field_.clear();
    self->header_value_.clear();
    self->in_header_value_ = false;
    self->expect_continue_ = false;
    self->rejection_.reset();
    return 0;
  }

  static int OnUrl(http_parser* parser, const char* at, size_t length) {
    Connection* self = From(parser);
    if (self->request_.target.size() + length > kMaxTargetBytes) {
      self->rejection_ = ErrorResponse(400, "invalid_argument", "request target too long");
      return -1;
    }
    self->request_.target.append(at, length);
    return 0;
  }

  void FinishHeader() {
    if (in_header_value_ && absl::EqualsIgnoreCase(header_field_, "expect") &&
        absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(header_value_), "100-continue")) {
      expect_continue_ = true;
    }
    header_field_.clear();
    header_value_.clear();
    in_header_value_ = false;
  }

  static int OnHeaderField(http_parser* parser, const char* at, size_t length) {
    Connection* self = From(parser);
    if (self->in_header_value_) self->FinishHeader();
    self->header_field_.append(at, length);
    return 0;
  }

  static int OnHeaderValue(http_parser* parser, const char* at, size_t length) {
    Connection* self = From(parser);
    self->in_header_value_ = true;
    self->header_value_.append(at, length);
    return 0;
  }

  static int OnHeadersComplete(http_parser* parser) {
    Connection* self = From(parser);
    self->FinishHeader();
    self->request_.method = http_method_str(static_cast<http_method>(parser->method));
    // ULLONG_MAX: no Content-Length (chunked or no body); OnBody enforces the limit then.
    if (parser->content_length != ULLONG_MAX && parser->content_length > kMaxRequestBodyBytes) {
      self->rejection_ = BodyTooLargeResponse(self->request_.target, parser->content_length);
      return -1;
    }
    if (self->expect_continue_ && parser->http_major == 1 && parser->http_minor >= 1) {
      self->Write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    return 0;
  }

  static int OnBody(http_parser* parser, const char* at, size_t length) {
    Connection* self = From(parser);
    if (self->request_.body.size() + length > kMaxRequestBodyBytes) {
      self->rejection_ = BodyTooLargeResponse(self->request_.target, std::nullopt);
      return -1;
    }
    self->request_.body.append(at, length);
    return 0;
  }

  static int OnMessageComplete(http_parser* parser) {
    Connection* self = From(parser);
    // An Upgrade is not followed; answering in HTTP/1.1 and closing is always valid.
    self->keep_alive_ = http_should_keep_alive(parser) != 0 && !parser->upgrade;
    self->http10_ = parser->http_major == 1 && parser->http_minor == 0;
    self->message_ready_ = true;
    // Stops the parser right after this message: one request at a time.
    http_parser_pause(parser, 1);
    return 0;
  }

  static http_parser_settings MakeSettings() {
    http_parser_settings settings;
    http_parser_settings_init(&settings);
    settings.on_message_begin = &Connection::OnMessageBegin;
    settings.on_url = &Connection::OnUrl;
    settings.on_header_field = &Connection::OnHeaderField;
    settings.on_header_value = &Connection::OnHeaderValue;
    settings.on_headers_complete = &Connection::OnHeadersComplete;
    settings.on_body = &Connection::OnBody;
    settings.on_message_complete = &Connection::OnMessageComplete;
    return settings;
  }

  HttpServer* const server_;
  uv_pipe_t pipe_;
  http_parser parser_;
  HttpRequest request_;
  std::string header_field_;
  std::string header_value_;
  bool in_header_value_ = false;
  bool expect_continue_ = false;
  std::optional<HttpResponse> rejection_;  // why a callback stopped the parser
  std::string pending_input_;              // read but not yet parsed
  bool message_ready_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool reading_ = false;
  bool read_eof_ = false;
  bool close_after_write_ = false;
  bool closing_ = false;
  size_t writes_in_flight_ = 0;
  bool busy_ = false;  // an exec is in flight
  uint64_t exec_seq_ = 0;
  std::shared_ptr<RequestHandle> handle_;
  std::shared_ptr<ExecReplyWriter> reply_writer_;  // the request in flight's, if any
};

const http_parser_settings HttpServer::Connection::kSettings =
    HttpServer::Connection::MakeSettings();

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Listen(const std::string& socket_path,
                                                               Service* service) {
  // libuv 1.44 silently truncates a longer path; bind would then create another file.
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket path must be 1 to ", sizeof(sockaddr_un::sun_path) - 1, " bytes: ", socket_path));
  }
  IgnoreSigpipeIfDefault();
  std::unique_ptr<HttpServer> server(new HttpServer(socket_path, service));
  ZYGO_RETURN_IF_ERROR(server->Start());
  return server;
}

HttpServer::HttpServer(std::string socket_path, Service* service)
    : socket_path_(std::move(socket_path)),
      service_(service),
      read_buffer_(new char[kReadBufferBytes]) {}

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

void HttpServer::OnConnection(uv_stream_t* listener, int status) {
  auto* server = static_cast<HttpServer*>(listener->data);
  if (status < 0) return;  // e.g. EMFILE; the client stays in the backlog for later
  auto connection = std::make_shared<Connection>(server);
  server->connections_[connection.get()] = connection;
  if (uv_accept(listener, connection->stream()) != 0) {
    connection->Close();
    return;
  }
  connection->Start();
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
