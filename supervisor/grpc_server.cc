// Serves a Service over gRPC: message conversion, the Exec reactor that ties a gRPC call to
// a RequestHandle, and preparing the unix socket path.
#include "supervisor/grpc_server.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"
#include "grpcpp/grpcpp.h"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "supervisor/socket_file.h"

namespace zygo::supervisor {
namespace {

namespace v1 = ::zygo::v1;

// absl and gRPC number their canonical codes alike (0..16); anything else is UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  int code = static_cast<int>(status.code());
  if (code < 0 || code > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    code = static_cast<int>(grpc::StatusCode::UNKNOWN);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

void ToProto(const FunctionInfo& info, v1::FunctionInfo* out) {
  out->set_name(info.name);
  out->set_image(info.image);
  out->set_runtime(RuntimeName(info.runtime));
  out->set_entry(info.entry);
  out->set_pool(info.pool);
  out->set_state(FunctionStateName(info.state));
  out->set_requests(info.requests);
  out->set_memory_bytes(info.memory_bytes);
  out->set_timeout_ms(info.timeout_ms);
  out->set_cold_after_ms(info.cold_after_ms);
  out->set_spec_path(info.spec_path);
}

void ToProto(const RequestOutcome& outcome, v1::Outcome* out) {
  out->set_status(core::OutcomeStatusName(outcome.status));
  out->set_exit_code(outcome.exit_code);
  out->set_signal(outcome.signal);
  out->set_timed_out(outcome.timed_out);
  out->set_oom_killed(outcome.oom_killed);
  out->set_peak_rss_kb(outcome.peak_rss_kb);
  out->set_wall_ms(outcome.wall_ms);
  out->set_seccomp_syscall(outcome.seccomp_syscall);
  out->set_seccomp_arch(outcome.seccomp_arch);
  out->set_limits_applied(outcome.limits_applied);
}

void ToProto(const PhaseTimings& timings, v1::Timings* out) {
  out->set_fork(timings.fork_us);
  out->set_admit(timings.admit_us);
  out->set_run(timings.run_us);
  out->set_reply(timings.reply_us);
  out->set_total(timings.total_us);
}

// Moves the reply's (possibly large) buffers into the message.
void ToProto(ExecReply reply, v1::ExecReply* out) {
  out->set_ok(reply.ok);
  out->set_result_json(std::move(reply.result_json));
  // Absent rather than empty when the handler returned, so clients can test has_error().
  if (!reply.error_type.empty() || !reply.error_message.empty() || !reply.traceback.empty()) {
    v1::Error* error = out->mutable_error();
    error->set_type(std::move(reply.error_type));
    error->set_message(std::move(reply.error_message));
    error->set_traceback(std::move(reply.traceback));
  }
  out->set_stdout(std::move(reply.stdout_data));
  out->set_stderr(std::move(reply.stderr_data));
  out->set_stdout_truncated(reply.stdout_truncated);
  out->set_stderr_truncated(reply.stderr_truncated);
  ToProto(reply.outcome, out->mutable_outcome());
  ToProto(reply.timings, out->mutable_timings_us());
}

ExecRequest FromProto(const v1::ExecRequest& request) {
  ExecRequest out;
  out.function = request.function();
  out.script_digest = request.script_digest();
  out.event_json = request.event_json();
  out.stdin_data = request.stdin_data();
  return out;
}

// One Exec call. The Service's callback finishes it, so no gRPC thread waits for the
// request; a client that cancels (or whose deadline passes) cancels the request, whose
// callback then finishes the call with CANCELLED. gRPC deletes the reactor (OnDone) only
// after Finish, so the callback's `this` stays valid.
class ExecReactor final : public grpc::ServerUnaryReactor {
 public:
  ExecReactor(Service* service, grpc::CallbackServerContext* context,
              const v1::ExecRequest& request, v1::ExecReply* reply) {
    // Finish may run on the supervisor's thread before this constructor returns; gRPC
    // holds it until the reactor is bound, and OnCancel comes only after that binding.
    // An event over the limit is refused here, in the words HTTP uses, before it is copied.
    if (absl::Status size =
            CheckEventSize(request.event_json().size(), request.stdin_data().size());
        !size.ok()) {
      Finish(ToGrpcStatus(size));
      return;
    }
    handle_ = service->Exec(FromProto(request), [this, context, reply](ExecReply result) {
      grpc::Status status = ToGrpcStatus(result.status);
      if (status.ok()) ToProto(std::move(result), reply);
      // A full queue: when to try again, as HTTP's 429 says it in Retry-After (an event
      // over the limit, the other RESOURCE_EXHAUSTED, never gets here).
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        context->AddTrailingMetadata("retry-after", std::to_string(kRetryAfterSeconds));
      }
      Finish(std::move(status));
    });
  }

  void OnCancel() override {
    if (handle_ != nullptr) handle_->Cancel();
  }

  void OnDone() override { delete this; }

 private:
  std::shared_ptr<RequestHandle> handle_;
};

}  // namespace

namespace internal {

// Exec uses the callback API (see ExecReactor); the other methods return promptly and run
// on gRPC's synchronous thread pool.
class GrpcZygoService final : public v1::Zygo::WithCallbackMethod_Exec<v1::Zygo::Service> {
 public:
  // `Service` alone would name the generated base class here.
  explicit GrpcZygoService(supervisor::Service* service) : service_(service) {}

  grpc::Status Up(grpc::ServerContext*, const v1::UpRequest* request,
                  v1::FunctionInfo* reply) override {
    absl::StatusOr<FunctionInfo> info =
        service_->Up(request->spec_toml(), request->origin(), request->base_dir());
    if (!info.ok()) return ToGrpcStatus(info.status());
    ToProto(*info, reply);
    return grpc::Status::OK;
  }

  grpc::Status Down(grpc::ServerContext*, const v1::DownRequest* request, v1::DownReply*) override {
    return ToGrpcStatus(service_->Down(request->name()));
  }

  grpc::Status List(grpc::ServerContext*, const v1::ListRequest*, v1::ListReply* reply) override {
    for (const FunctionInfo& info : service_->List()) ToProto(info, reply->add_functions());
    return grpc::Status::OK;
  }

  grpc::Status PutScript(grpc::ServerContext*, const v1::PutScriptRequest* request,
                         v1::PutScriptReply* reply) override {
    absl::StatusOr<std::string> digest = service_->PutScript(request->source());
    if (!digest.ok()) return ToGrpcStatus(digest.status());
    reply->set_digest(*std::move(digest));
    return grpc::Status::OK;
  }

  grpc::ServerUnaryReactor* Exec(grpc::CallbackServerContext* context,
                                 const v1::ExecRequest* request, v1::ExecReply* reply) override {
    return new ExecReactor(service_, context, *request, reply);
  }

  grpc::Status Health(grpc::ServerContext*, const v1::HealthRequest*,
                      v1::HealthReply* reply) override {
    reply->set_ok(true);
    return grpc::Status::OK;
  }

 private:
  supervisor::Service* const service_;
};

}  // namespace internal

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Listen(const std::string& socket_path,
                                                               Service* service) {
  ZYGO_RETURN_IF_ERROR(PrepareSocketPath(socket_path));
  auto grpc_service = std::make_unique<internal::GrpcZygoService>(service);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(grpc_service.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxGrpcRequestBytes));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    // gRPC reports why only in its log.
    return absl::UnavailableError(
        absl::StrCat("gRPC could not listen on unix:", socket_path, " (see its log above)"));
  }
  auto result =
      absl::WrapUnique(new GrpcServer(socket_path, std::move(grpc_service), std::move(server)));
  if (::chmod(socket_path.c_str(), 0600) != 0) {
    absl::Status status = base::ErrnoStatus(errno, absl::StrCat("chmod(", socket_path, ", 0600)"));
    result->Shutdown();
    return status;
  }
  return result;
}

GrpcServer::GrpcServer(std::string socket_path, std::unique_ptr<internal::GrpcZygoService> service,
                       std::unique_ptr<grpc::Server> server)
    : socket_path_(std::move(socket_path)),
      service_(std::move(service)),
      server_(std::move(server)) {}

GrpcServer::~GrpcServer() {
  Shutdown();
  server_->Wait();
}

void GrpcServer::Wait() { server_->Wait(); }

void GrpcServer::Shutdown() {
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(kGrpcShutdownGrace));
}

}  // namespace zygo::supervisor
