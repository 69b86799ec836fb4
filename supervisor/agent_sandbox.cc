// The agent's sandbox: its launch thread, its log and zygo-init's seccomp kill reports.
#include "supervisor/agent_sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "core/outcome.h"
#include "supervisor/log.h"

namespace zygo::supervisor {
namespace {

constexpr size_t kMaxKeptKills = 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<AgentSandbox>> AgentSandbox::Launch(
    AgentSandboxConfig config, std::function<void(const std::string& why)> on_ended) {
  std::unique_ptr<AgentSandbox> sandbox(new AgentSandbox(std::move(config)));
  ZYGO_ASSIGN_OR_RETURN(auto pair, wire::MakeAgentSocketPair());
  sandbox->channel_ = std::move(pair.first);
  ZYGO_RETURN_IF_ERROR(wire::EnablePeerCredentials(sandbox->channel_.get()));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd log_write, sandbox->log_.Open());
  sandbox->launch_thread_ =
      std::thread(&AgentSandbox::LaunchThread, sandbox.get(), std::move(pair.second),
                  std::move(log_write), std::move(on_ended));
  return sandbox;
}

AgentSandbox::~AgentSandbox() { Stop(); }

void AgentSandbox::LaunchThread(base::UniqueFd agent_end, base::UniqueFd log_end,
                                std::function<void(const std::string&)> on_ended) {
  core::LaunchOptions options;
  options.inherit_fds = {agent_end.get()};
  // Never the supervisor's own stdin: run in a terminal, that is the operator's.
  base::UniqueFd no_input(open("/dev/null", O_RDONLY | O_CLOEXEC));
  options.stdio_fds[0] = no_input.get();
  options.stdio_fds[1] = log_end.get();
  options.stdio_fds[2] = log_end.get();
  options.forward_signals = false;
  options.no_deadline = true;
  options.cgroup = config_.cgroup;
  options.on_seccomp_kill = [this](const core::SeccompKillNotice& notice) {
    LogFor(config_.name, LogLevel::kWarning,
           absl::StrCat("zygo-init killed pid ", notice.sandbox_pid, " of the sandbox: it called ",
                        notice.name, " (", notice.arch, ")"));
    std::lock_guard<std::mutex> lock(mu_);
    seccomp_kills_[notice.sandbox_pid] = notice;
    while (seccomp_kills_.size() > kMaxKeptKills) seccomp_kills_.erase(seccomp_kills_.begin());
    kills_cv_.notify_all();
  };
  options.on_started = [&](pid_t pid, int pidfd, core::Cgroup*) {
    // Only the agent may hold its end: our copy would hide the agent's exit from us.
    agent_end.Reset();
    log_end.Reset();
    std::lock_guard<std::mutex> lock(mu_);
    pidfd_.Reset(fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
    init_pid_ = pid;
    // Stop() ran while the sandbox was being made: end it now.
    if (stopping_) base::sys::RawPidfdSendSignal(pidfd, SIGKILL);
  };
  absl::StatusOr<core::Outcome> outcome =
      runtime::LaunchSandbox(config_.sandbox, config_.cgroups, options);
  agent_end.Reset();
  log_end.Reset();
  std::string why = "the sandbox ended";
  if (!outcome.ok()) {
    why = std::string(outcome.status().message());
  } else if (!outcome->error.empty()) {
    why = outcome->error;
  } else if (outcome->oom_killed) {
    why = "the zygote ran out of memory";
  } else {
    why = absl::StrCat("the agent exited (", core::OutcomeStatusName(outcome->status), ", code ",
                       outcome->exit_code, ")");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    kills_cv_.notify_all();
  }
  if (on_ended) on_ended(why);
}

void AgentSandbox::ShutdownChannel() {
  if (channel_.valid()) shutdown(channel_.get(), SHUT_RDWR);
}

pid_t AgentSandbox::namespace_root() const {
  std::lock_guard<std::mutex> lock(mu_);
  return init_pid_;
}

int AgentSandbox::namespace_root_pidfd() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pidfd_.get();
}

void AgentSandbox::Kill() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  if (pidfd_.valid()) base::sys::RawPidfdSendSignal(pidfd_.get(), SIGKILL);
}

void AgentSandbox::Stop() {
  Kill();
  ShutdownChannel();
  if (launch_thread_.joinable()) launch_thread_.join();
  log_.Join();
}

std::optional<core::SeccompKillNotice> AgentSandbox::TakeSeccompKill(pid_t sandbox_pid,
                                                                     absl::Duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  kills_cv_.wait_for(lock, absl::ToChronoMilliseconds(wait),
                     [&] { return seccomp_kills_.count(sandbox_pid) > 0 || ended_; });
  auto found = seccomp_kills_.find(sandbox_pid);
  if (found == seccomp_kills_.end()) return std::nullopt;
  core::SeccompKillNotice notice = std::move(found->second);
  seccomp_kills_.erase(found);
  return notice;
}

}  // namespace zygo::supervisor
