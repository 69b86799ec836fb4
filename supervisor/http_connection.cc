// One HTTP client of the supervisor: parsing with http_parser, one request at a time,
// ordered writes, the request and idle timers; and the exec reply hand-off (see the header).
#include "supervisor/http_connection.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <exception>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace zygo::supervisor {
namespace {

// Past these, a connection stops reading (pipelined input) or stops answering (a client
// that does not read its replies) until the backlog drains, so memory stays bounded.
constexpr size_t kMaxBufferedInput = 1 << 20;
constexpr size_t kMaxQueuedOutput = 1 << 20;
constexpr size_t kMaxTargetBytes = 64 * 1024;

uint64_t Millis(absl::Duration duration) {
  return static_cast<uint64_t>(std::max<int64_t>(1, absl::ToInt64Milliseconds(duration)));
}

}  // namespace

void HttpServer::ReplyQueue::Post(Item item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (async_ == nullptr) return;
  items_.push_back(std::move(item));
  // Under the lock: Shut() cannot close the handle in between.
  uv_async_send(async_);
}

std::deque<HttpServer::ReplyQueue::Item> HttpServer::ReplyQueue::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(items_, {});
}

void HttpServer::ReplyQueue::Shut() {
  std::deque<Item> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  async_ = nullptr;
  dropped.swap(items_);
}

size_t HttpServer::ExecReplyWriter::Write(const std::string& response) {
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

const http_parser_settings HttpServer::Connection::kSettings =
    HttpServer::Connection::MakeSettings();

HttpServer::Connection::Connection(HttpServer* server) : server_(server) {
  uv_pipe_init(&server->loop_, &pipe_, 0);
  pipe_.data = this;
  uv_timer_init(&server->loop_, &timer_);
  timer_.data = this;
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
}

void HttpServer::Connection::Start(uid_t uid) {
  uid_ = uid;
  StartTimer(Timer::kRequest);  // the first request's time runs from the accept
  reading_ = true;
  if (uv_read_start(stream(), &Connection::OnAlloc, &Connection::OnRead) != 0) Close();
}

void HttpServer::Connection::Refuse(const HttpResponse& response) {
  WriteNow(SerializeResponse(response, /*keep_alive=*/false, /*http10=*/false));
  Close();
}

void HttpServer::Connection::Close() {
  if (closing_) return;
  closing_ = true;
  if (uid_.has_value()) server_->admission_.Release(*uid_);
  uid_.reset();
  if (reply_writer_) reply_writer_->Abandon();
  if (std::shared_ptr<RequestHandle> handle = std::move(handle_)) handle->Cancel();
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), &Connection::OnClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&pipe_), &Connection::OnClosed);
}

void HttpServer::Connection::OnExecReply(uint64_t seq, std::string response, size_t written) {
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

void HttpServer::Connection::OnClosed(uv_handle_t* handle) {
  Connection* self = From(handle);
  if (--self->open_handles_ == 0) self->server_->connections_.erase(self);
}

void HttpServer::Connection::OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(From(handle)->server_->read_buffer_.get(), kHttpReadBufferBytes);
}

void HttpServer::Connection::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  Connection* self = From(reinterpret_cast<uv_handle_t*>(stream));
  if (nread > 0) {
    self->pending_input_.append(buf->base, nread);
    self->Pump();
  } else if (nread < 0) {
    self->OnHangup(nread == UV_EOF);
  }
}

void HttpServer::Connection::OnWritten(uv_write_t* req, int status) {
  std::unique_ptr<WriteRequest> write(reinterpret_cast<WriteRequest*>(req));
  Connection* self = From(reinterpret_cast<uv_handle_t*>(req->handle));
  --self->writes_in_flight_;
  if (status < 0 || (self->close_after_write_ && self->writes_in_flight_ == 0)) {
    self->Close();
  } else {
    self->Pump();
  }
}

void HttpServer::Connection::OnTimer(uv_timer_t* timer) {
  From(reinterpret_cast<uv_handle_t*>(timer))->OnTimeout();
}

void HttpServer::Connection::Write(std::string data) {
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

void HttpServer::Connection::WriteNow(const std::string& data) {
  // Never behind queued bytes: they would come first and this would cut into them.
  if (closing_ || uv_stream_get_write_queue_size(stream()) != 0) return;
  uv_buf_t buf = uv_buf_init(const_cast<char*>(data.data()), data.size());
  (void)uv_try_write(stream(), &buf, 1);
}

void HttpServer::Connection::Respond(const HttpResponse& response) {
  if (!keep_alive_) close_after_write_ = true;
  Write(SerializeResponse(response, keep_alive_, http10_));
}

// Answers a request the parser rejected, then closes: the stream's framing is lost.
void HttpServer::Connection::Reject(const HttpResponse& response) {
  keep_alive_ = false;
  Respond(response);
}

void HttpServer::Connection::OnHangup(bool eof) {
  read_eof_ = true;
  // A reset leaves nobody to answer; a hang-up during exec means nobody wants it.
  if (!eof || busy_) {
    Close();
    return;
  }
  Pump();
}

// Parses buffered input and answers requests, one at a time, as far as it can.
void HttpServer::Connection::Pump() {
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
  UpdateTimer();
  if (!closing_ && read_eof_ && !busy_ && (pending_input_.empty() || close_after_write_)) {
    if (writes_in_flight_ == 0) {
      Close();
    } else {
      close_after_write_ = true;
    }
  }
}

void HttpServer::Connection::UpdateReading() {
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

// No timer while an exec runs (the function's own deadline bounds it); the request timer
// while a request is being read, started when it began; else the idle timer, which also
// bounds how long a client that does not read its reply keeps the connection.
void HttpServer::Connection::UpdateTimer() {
  if (closing_) return;
  const Timer want = busy_                                    ? Timer::kNone
                     : in_message_ || !pending_input_.empty() ? Timer::kRequest
                                                              : Timer::kIdle;
  if (want == timer_running_) return;
  if (want == Timer::kNone) {
    uv_timer_stop(&timer_);
    timer_running_ = Timer::kNone;
    return;
  }
  StartTimer(want);
}

void HttpServer::Connection::StartTimer(Timer which) {
  const HttpLimits& limits = server_->limits_;
  timer_running_ = which;
  uv_timer_start(&timer_, &Connection::OnTimer,
                 Millis(which == Timer::kRequest ? limits.request_timeout : limits.idle_timeout),
                 0);
}

// A request that did not arrive in time is answered 408 (unless a reply is still being
// written: it would cut into it); an idle connection just closes, as nginx's do.
void HttpServer::Connection::OnTimeout() {
  if (closing_) return;
  if (timer_running_ == Timer::kRequest && writes_in_flight_ == 0 && !close_after_write_) {
    WriteNow(SerializeResponse(
        ErrorResponse(408, "request_timeout",
                      absl::StrCat("the request did not arrive in full within ",
                                   absl::FormatDuration(server_->limits_.request_timeout))),
        /*keep_alive=*/false, http10_));
  }
  Close();
}

void HttpServer::Connection::Dispatch() {
  // The request is in: its timer stops, and the idle time counts from its answer on.
  uv_timer_stop(&timer_);
  timer_running_ = Timer::kNone;
  RouteResult result = Route(std::move(request_), *server_->service_);
  if (auto* response = std::get_if<HttpResponse>(&result)) {
    Respond(*response);
    return;
  }
  StartExec(std::get<ExecRequest>(std::move(result)));
}

// A writer for this request's reply, when the reply may go straight to the socket.
std::shared_ptr<HttpServer::ExecReplyWriter> HttpServer::Connection::MakeReplyWriter() {
  if (uv_stream_get_write_queue_size(stream()) != 0) return nullptr;
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(&pipe_), &fd) != 0) return nullptr;
  base::UniqueFd copy(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) return nullptr;
  return std::make_shared<ExecReplyWriter>(std::move(copy));
}

void HttpServer::Connection::StartExec(ExecRequest exec) {
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

int HttpServer::Connection::OnMessageBegin(http_parser* parser) {
  Connection* self = From(parser);
  self->request_ = HttpRequest();
  self->header_field_.clear();
  self->header_value_.clear();
  self->in_header_value_ = false;
  self->expect_continue_ = false;
  self->in_message_ = true;
  self->rejection_.reset();
  return 0;
}

int HttpServer::Connection::OnUrl(http_parser* parser, const char* at, size_t length) {
  Connection* self = From(parser);
  if (self->request_.target.size() + length > kMaxTargetBytes) {
    self->rejection_ = ErrorResponse(400, "invalid_argument", "request target too long");
    return -1;
  }
  self->request_.target.append(at, length);
  return 0;
}

void HttpServer::Connection::FinishHeader() {
  if (in_header_value_ && absl::EqualsIgnoreCase(header_field_, "expect") &&
      absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(header_value_), "100-continue")) {
    expect_continue_ = true;
  }
  header_field_.clear();
  header_value_.clear();
  in_header_value_ = false;
}

int HttpServer::Connection::OnHeaderField(http_parser* parser, const char* at, size_t length) {
  Connection* self = From(parser);
  if (self->in_header_value_) self->FinishHeader();
  self->header_field_.append(at, length);
  return 0;
}

int HttpServer::Connection::OnHeaderValue(http_parser* parser, const char* at, size_t length) {
  Connection* self = From(parser);
  self->in_header_value_ = true;
  self->header_value_.append(at, length);
  return 0;
}

int HttpServer::Connection::OnHeadersComplete(http_parser* parser) {
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

int HttpServer::Connection::OnBody(http_parser* parser, const char* at, size_t length) {
  Connection* self = From(parser);
  if (self->request_.body.size() + length > kMaxRequestBodyBytes) {
    self->rejection_ = BodyTooLargeResponse(self->request_.target, std::nullopt);
    return -1;
  }
  self->request_.body.append(at, length);
  return 0;
}

int HttpServer::Connection::OnMessageComplete(http_parser* parser) {
  Connection* self = From(parser);
  // An Upgrade is not followed; answering in HTTP/1.1 and closing is always valid.
  self->keep_alive_ = http_should_keep_alive(parser) != 0 && !parser->upgrade;
  self->http10_ = parser->http_major == 1 && parser->http_minor == 0;
  self->message_ready_ = true;
  self->in_message_ = false;
  // Stops the parser right after this message: one request at a time.
  http_parser_pause(parser, 1);
  return 0;
}

http_parser_settings HttpServer::Connection::MakeSettings() {
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

}  // namespace zygo::supervisor
