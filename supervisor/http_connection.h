// HttpServer's per-client half, private to the server: one Connection per accepted client
// (http_parser state, buffered input, ordered writes, its request and idle timers), and how
// Service::Exec replies get back to it from supervisor threads (ReplyQueue). An exec reply
// is written to the client by the supervisor thread that has it (ExecReplyWriter): waking
// the loop thread first cost ~0.1 ms per request on an idle machine.
#ifndef ZYGO_SUPERVISOR_HTTP_CONNECTION_H_
#define ZYGO_SUPERVISOR_HTTP_CONNECTION_H_

#include <http_parser.h>
#include <sys/types.h>
#include <uv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/base/unique_fd.h"
#include "supervisor/http_routes.h"
#include "supervisor/http_server.h"
#include "supervisor/service.h"

namespace zygo::supervisor {

// One read buffer for all connections: the loop copies each read out before the next.
inline constexpr size_t kHttpReadBufferBytes = 64 * 1024;

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
  void Post(Item item);
  std::deque<Item> TakeAll();
  // Loop thread, before it closes the async handle.
  void Shut();

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
  size_t Write(const std::string& response);

  // Loop thread: the connection closed; a reply arriving later goes nowhere.
  void Abandon() { abandoned_.store(true); }

 private:
  const base::UniqueFd socket_;
  std::atomic<bool> abandoned_{false};
};

// One client. Lives in the server's map until the close callbacks of both its handles
// (the socket and its timer); everything here runs on the loop thread. While it reads a
// request, the request timer runs (from accept for the first, from the first byte for the
// next); between requests the idle timer; during an exec, none.
class HttpServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(HttpServer* server);

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&pipe_); }

  // Starts reading a client that HttpServer's admission counted as `uid`'s.
  void Start(uid_t uid);
  // Answers `response` without waiting (as much as the socket takes now) and closes: for
  // a client that is not admitted, before it has read a byte of it.
  void Refuse(const HttpResponse& response);
  // Cancels the request in flight, if any, and closes the socket.
  void Close();
  // `response` from its first byte; `written` of it went to the client already.
  void OnExecReply(uint64_t seq, std::string response, size_t written);

 private:
  enum class Timer { kNone, kRequest, kIdle };
  struct WriteRequest {
    uv_write_t req;
    std::string data;
  };

  static const http_parser_settings kSettings;
  static http_parser_settings MakeSettings();

  static Connection* From(http_parser* parser) { return static_cast<Connection*>(parser->data); }
  static Connection* From(uv_handle_t* handle) { return static_cast<Connection*>(handle->data); }

  static void OnClosed(uv_handle_t* handle);
  static void OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void OnWritten(uv_write_t* req, int status);
  static void OnTimer(uv_timer_t* timer);

  void Write(std::string data);
  // Whatever of `data` the socket takes now, never queued: for the last words before a close.
  void WriteNow(const std::string& data);
  void Respond(const HttpResponse& response);
  void Reject(const HttpResponse& response);
  void OnHangup(bool eof);
  void Pump();
  void UpdateReading();
  void UpdateTimer();
  void StartTimer(Timer which);
  void OnTimeout();
  void Dispatch();
  std::shared_ptr<ExecReplyWriter> MakeReplyWriter();
  void StartExec(ExecRequest exec);

  // http_parser callbacks. Only the Expect header matters here; the API reads no others.
  static int OnMessageBegin(http_parser* parser);
  static int OnUrl(http_parser* parser, const char* at, size_t length);
  static int OnHeaderField(http_parser* parser, const char* at, size_t length);
  static int OnHeaderValue(http_parser* parser, const char* at, size_t length);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, size_t length);
  static int OnMessageComplete(http_parser* parser);
  void FinishHeader();

  HttpServer* const server_;
  uv_pipe_t pipe_;
  uv_timer_t timer_;
  int open_handles_ = 2;  // pipe_ and timer_, until their close callbacks
  Timer timer_running_ = Timer::kNone;
  std::optional<uid_t> uid_;  // set once admitted: the count to give back on close
  http_parser parser_;
  HttpRequest request_;
  std::string header_field_;
  std::string header_value_;
  bool in_header_value_ = false;
  bool expect_continue_ = false;
  bool in_message_ = false;                // the parser is inside a request
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

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_HTTP_CONNECTION_H_
