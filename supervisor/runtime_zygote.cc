// The runtime zygote's life: its sandbox, its Hello, the forks it makes, its death.
#include "supervisor/runtime_zygote.h"

#include <signal.h>
#include <sys/wait.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "supervisor/log.h"

namespace zygo::supervisor {
namespace {

// What a runtime zygote calls itself in Hello (agents/python/main.cc).
constexpr char kRuntimeKind[] = "python-runtime";

// The runtime's own child reports how far it got (agents/zygote/function_fork.h).
std::string ForkFailure(const wire::DoneMessage& done) {
  if (done.exit_kind == wire::ExitKind::kSignalled) {
    return absl::StrCat("its fork was killed by signal ", done.exit_code);
  }
  switch (done.exit_code) {
    case 70:
      return "unshare of the function zygote's namespaces failed (the host must allow nested "
             "user namespaces)";
    case 71:
      return "the fork into the function zygote's own pid namespace failed";
    case 72:
      return "the function zygote died before it announced itself";
    default:
      return absl::StrCat("its fork exited with code ", done.exit_code);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<RuntimeZygote>> RuntimeZygote::Start(RuntimeZygoteConfig config) {
  std::shared_ptr<RuntimeZygote> runtime(new RuntimeZygote(std::move(config)));
  if (absl::Status launched = runtime->Launch(); !launched.ok()) {
    runtime->Stop();
    return launched;
  }
  std::unique_lock<std::mutex> lock(runtime->mu_);
  runtime->cv_.wait_for(lock, absl::ToChronoMilliseconds(runtime->config_.warm_timeout),
                        [&] { return runtime->hello_ || runtime->dead_.load(); });
  if (!runtime->hello_) {
    std::string why = runtime->dead_.load() ? runtime->death_ : "it did not become warm in time";
    lock.unlock();
    runtime->Stop();
    const std::string tail = runtime->sandbox_ ? runtime->sandbox_->LogTail() : "";
    return absl::FailedPreconditionError(
        absl::StrCat("the runtime zygote ", runtime->config_.name, " could not be warmed: ", why,
                     tail.empty() ? "" : "; the agent printed:\n", tail));
  }
  return runtime;
}

RuntimeZygote::~RuntimeZygote() {
  Stop();
  if (cgroup_) {
    if (absl::Status gone = cgroup_->Destroy(); !gone.ok()) {
      LogFor(config_.name, LogLevel::kWarning,
             absl::StrCat("its cgroup was left behind: ", gone.message()));
    }
  }
}

absl::Status RuntimeZygote::Launch() {
  if (config_.cgroups != nullptr) {
    absl::StatusOr<std::unique_ptr<core::Cgroup>> made = config_.cgroups->Create(config_.limits);
    if (made.ok()) {
      cgroup_ = *std::move(made);
    } else if (!config_.sandbox.plan.spec.loosening.unlimited()) {
      return made.status();
    }
  }
  ZYGO_ASSIGN_OR_RETURN(
      sandbox_,
      AgentSandbox::Launch({config_.sandbox, config_.cgroups, cgroup_.get(), config_.name},
                           [this](const std::string& why) { MarkDead(why); }));
  reader_thread_ = std::thread(&RuntimeZygote::ReaderLoop, this);
  return absl::OkStatus();
}

absl::StatusOr<ForkedZygote> RuntimeZygote::Fork(absl::Duration timeout) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_.load()) return absl::UnavailableError(absl::StrCat(config_.name, ": ", death_));
    id = next_id_++;
    forks_[id];
  }
  absl::StatusOr<wire::Frame> spawn = wire::Encode(wire::SpawnMessage{id});
  absl::Status sent =
      spawn.ok() ? wire::SendFrame(sandbox_->channel(), *spawn, {}) : spawn.status();
  std::unique_lock<std::mutex> lock(mu_);
  if (sent.ok()) {
    cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                 [&] { return forks_[id].has_value() || dead_.load(); });
  }
  std::optional<absl::StatusOr<ForkedZygote>> answer = std::move(forks_[id]);
  forks_.erase(id);
  if (!sent.ok()) return sent;
  if (answer.has_value()) return *std::move(answer);
  if (dead_.load()) return absl::UnavailableError(absl::StrCat(config_.name, ": ", death_));
  return absl::DeadlineExceededError(
      absl::StrCat(config_.name, ": no function zygote announced itself in time"));
}

void RuntimeZygote::Resolve(uint64_t id, absl::StatusOr<ForkedZygote> result) {
  std::lock_guard<std::mutex> lock(mu_);
  auto waiting = forks_.find(id);
  // Not asked for, given up on, or answered already: dropping it closes and so ends it.
  if (waiting == forks_.end() || waiting->second.has_value()) return;
  waiting->second = std::move(result);
  cv_.notify_all();
}

void RuntimeZygote::ReaderLoop() {
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(sandbox_->channel(), absl::InfiniteDuration());
    if (!received.ok()) {
      // The runtime runs only the agent and the image's standard library; a bad frame is
      // still a broken runtime, not a supervisor problem.
      MarkDead(
          wire::IsPeerClosed(received.status()) || stopping_.load()
              ? "the runtime agent closed its channel"
              : absl::StrCat("the runtime agent sent a bad frame: ", received.status().message()));
      sandbox_->Kill();
      return;
    }
    const uint64_t id = received->frame.request_id;
    switch (received->frame.type) {
      case wire::MessageType::kHello: {
        absl::StatusOr<wire::HelloMessage> hello = wire::DecodeHello(*received);
        std::lock_guard<std::mutex> lock(mu_);
        hello_ = hello.ok() && hello->agent_kind == kRuntimeKind;
        if (!hello_ && !dead_.exchange(true)) death_ = "its agent is not a runtime zygote";
        cv_.notify_all();
        break;
      }
      case wire::MessageType::kForked: {
        absl::StatusOr<wire::ForkedMessage> forked = wire::DecodeForked(*received);
        if (!forked.ok() || received->sender_pid <= 0) break;
        ForkedZygote zygote;
        zygote.channel = std::move(received->fds[0]);
        zygote.pid = static_cast<pid_t>(received->sender_pid);
        zygote.pidfd.Reset(base::sys::RawPidfdOpen(zygote.pid));
        if (!zygote.pidfd.valid()) {
          Resolve(id, absl::UnavailableError("the function zygote died as it announced itself"));
        } else {
          Resolve(id, std::move(zygote));
        }
        break;
      }
      case wire::MessageType::kDone: {
        absl::StatusOr<wire::DoneMessage> done = wire::DecodeDone(*received);
        if (done.ok() && !(done->exit_kind == wire::ExitKind::kExited && done->exit_code == 0)) {
          Resolve(id, absl::UnavailableError(absl::StrCat(config_.name, ": ", ForkFailure(*done))));
        }
        break;
      }
      case wire::MessageType::kError: {
        absl::StatusOr<wire::ErrorMessage> error = wire::DecodeError(*received);
        if (error.ok() && id != 0) {
          Resolve(id, absl::UnavailableError(
                          absl::StrCat(config_.name, ": the fork failed: ", error->message)));
        }
        break;
      }
      default:
        break;
    }
  }
}

void RuntimeZygote::MarkDead(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_.exchange(true)) return;
  death_ = why;
  cv_.notify_all();
}

void RuntimeZygote::Stop() {
  if (stopping_.exchange(true)) return;
  if (sandbox_) {
    sandbox_->Kill();
    sandbox_->ShutdownChannel();
  }
  if (reader_thread_.joinable()) reader_thread_.join();
  if (sandbox_) sandbox_->Stop();
  MarkDead("stopped");
}

}  // namespace zygo::supervisor
