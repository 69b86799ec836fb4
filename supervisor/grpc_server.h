// The supervisor's gRPC front end: serves one Service as zygo.v1.Zygo
// (sdk/proto/zygo/v1/zygo.proto) on a unix socket, next to the HTTP/JSON API.
#ifndef ZYGO_SUPERVISOR_GRPC_SERVER_H_
#define ZYGO_SUPERVISOR_GRPC_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "supervisor/event_limit.h"
#include "supervisor/service.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace zygo::supervisor {

namespace internal {
class GrpcZygoService;
}  // namespace internal

// Largest request message the server accepts: an Exec with both its event and its stdin at
// kMaxEventBytes, plus room for the names. The event limit itself is checked on those
// fields (event_limit.h), so a caller past it gets the same RESOURCE_EXHAUSTED words as
// over HTTP; only a message past this is refused by gRPC itself (same code, its words).
inline constexpr size_t kMaxGrpcRequestBytes = 2 * kMaxEventBytes + (size_t{1} << 20);

// How long Shutdown() lets in-flight calls finish before it cancels them.
inline constexpr absl::Duration kGrpcShutdownGrace = absl::Seconds(2);

class GrpcServer {
 public:
  // Starts serving `service` (not owned; it must outlive the server) on the unix socket at
  // `socket_path`, with mode 0600. A socket file that nothing listens on is replaced; a live
  // one (AlreadyExists) or any other kind of file (FailedPrecondition) is left alone.
  // The socket's directory must not be writable by others: the file is made 0600 only
  // after gRPC binds it.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Listen(const std::string& socket_path,
                                                            Service* service);

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  // Shuts down (if nobody did) and waits.
  ~GrpcServer();

  // Blocks until Shutdown() has been called and every RPC has finished.
  void Wait();

  // Stops accepting calls, gives in-flight ones kGrpcShutdownGrace to finish, then cancels the
  // rest (cancelling their requests) and returns once all have replied. Removes the socket
  // file. Safe to call more than once and from any thread.
  void Shutdown();

  const std::string& socket_path() const { return socket_path_; }

 private:
  GrpcServer(std::string socket_path, std::unique_ptr<internal::GrpcZygoService> service,
             std::unique_ptr<grpc::Server> server);

  std::string socket_path_;
  // Declared before server_ so that it is destroyed after it: gRPC calls into it until then.
  std::unique_ptr<internal::GrpcZygoService> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_GRPC_SERVER_H_
