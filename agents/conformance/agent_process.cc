// Starting an agent subprocess and the supervisor's half of the v3 exchanges.
#include "agents/conformance/agent_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "core/nested_tmp.h"

extern char** environ;

namespace zygo::agents::conformance {

absl::StatusOr<std::unique_ptr<AgentProcess>> AgentProcess::Start(const AgentCommand& command,
                                                                  const std::string& stderr_path) {
  auto pair = wire::MakeAgentSocketPair();
  if (!pair.ok()) return pair.status();
  if (absl::Status status = wire::EnablePeerCredentials(pair->first.get()); !status.ok()) {
    return status;
  }
  base::UniqueFd err(::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!err.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", stderr_path, ")"));
  // Everything the child needs is built before fork: the child only dup2s and execs.
  std::vector<std::string> argv_storage = {command.binary};
  argv_storage.insert(argv_storage.end(), command.args.begin(), command.args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    bool drop = false;
    for (const std::string& name : command.unset_env) drop |= variable.rfind(name + "=", 0) == 0;
    for (const auto& [name, value] : command.set_env) drop |= variable.rfind(name + "=", 0) == 0;
    if (!drop) env_storage.push_back(variable);
  }
  for (const auto& [name, value] : command.set_env) env_storage.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& variable : env_storage) envp.push_back(variable.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) return base::ErrnoStatus(errno, "fork(agent)");
  if (pid == 0) {
    if (::dup2(pair->second.get(), 3) < 0 || ::dup2(err.get(), 2) < 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return std::unique_ptr<AgentProcess>(new AgentProcess(pid, std::move(pair->first), stderr_path));
}

AgentProcess::~AgentProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<wire::ReceivedFrame> AgentProcess::Next(wire::MessageType type, uint64_t request_id,
                                                       absl::Duration timeout) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->frame.type == type && it->frame.request_id == request_id) {
      wire::ReceivedFrame found = std::move(*it);
      pending_.erase(it);
      return found;
    }
  }
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(channel_.get(), deadline - absl::Now());
    if (!received.ok()) {
      return absl::Status(received.status().code(),
                          absl::StrCat("waiting for ", wire::MessageTypeName(type), "(", request_id,
                                       "): ", received.status().message()));
    }
    if (received->frame.type == type && received->frame.request_id == request_id) return received;
    pending_.push_back(std::move(*received));
  }
}

absl::Status AgentProcess::Send(const wire::Frame& frame) {
  return wire::SendFrame(channel_.get(), frame, {});
}

absl::StatusOr<Spare> AgentProcess::Spawn(uint64_t spare_id, bool isolate) {
  absl::StatusOr<wire::Frame> spawn = wire::Encode(wire::SpawnMessage{spare_id});
  if (!spawn.ok()) return spawn.status();
  if (absl::Status status = Send(*spawn); !status.ok()) return status;
  absl::StatusOr<wire::ReceivedFrame> frame = Next(wire::MessageType::kForked, spare_id);
  if (!frame.ok()) return frame.status();
  Spare spare;
  spare.id = spare_id;
  spare.pid = static_cast<pid_t>(frame->sender_pid);
  spare.forked_fds = frame->fds.size();
  absl::StatusOr<wire::ForkedMessage> forked = wire::DecodeForked(*frame);
  if (!forked.ok()) return forked.status();
  spare.claimed_pid = forked->pid;
  spare.channel = std::move(frame->fds[0]);
  if (!isolate) return spare;
  // The agent runs unsandboxed here: its user namespace stands for the sandbox's.
  base::UniqueFd agent_pidfd(base::sys::RawPidfdOpen(pid_));
  base::UniqueFd spare_pidfd(base::sys::RawPidfdOpen(spare.pid));
  const core::NestedTmpTarget target{pid_, agent_pidfd.get(), spare.pid, spare_pidfd.get()};
  ZYGO_RETURN_IF_ERROR(core::MountOwnTmp(target, {16 << 20, static_cast<uint32_t>(::getegid())}));
  ZYGO_ASSIGN_OR_RETURN(wire::Frame isolate_frame, wire::Encode(wire::IsolateMessage{}));
  ZYGO_RETURN_IF_ERROR(wire::SendFrame(spare.channel.get(), isolate_frame, {}));
  return spare;
}

absl::StatusOr<wire::DoneMessage> AgentProcess::Reaped(uint64_t spare_id) {
  absl::StatusOr<wire::ReceivedFrame> frame = Next(wire::MessageType::kDone, spare_id);
  if (!frame.ok()) return frame.status();
  return wire::DecodeDone(*frame);
}

absl::StatusOr<int> AgentProcess::WaitExit(absl::Duration timeout) {
  if (reaped_) return wstatus_;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const pid_t done = ::waitpid(pid_, &wstatus_, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      return wstatus_;
    }
    if (done < 0) return base::ErrnoStatus(errno, "waitpid(agent)");
    if (absl::Now() > deadline) return absl::DeadlineExceededError("the agent did not exit");
    absl::SleepFor(absl::Milliseconds(5));
  }
}

std::string AgentProcess::Stderr() const {
  std::ifstream in(stderr_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<wire::ReceivedFrame> RunOn(Spare& spare, const wire::RunMessage& run,
                                          absl::Span<const int> fds, std::string* compiled) {
  absl::StatusOr<wire::Frame> frame = wire::Encode(run);
  if (!frame.ok()) return frame.status();
  if (absl::Status status = wire::SendFrame(spare.channel.get(), *frame, fds); !status.ok()) {
    return status;
  }
  for (bool first = true;; first = false) {
    absl::StatusOr<wire::ReceivedFrame> reply =
        wire::ReceiveFrame(spare.channel.get(), kFrameTimeout);
    if (!reply.ok() || reply->frame.type != wire::MessageType::kCompiled) return reply;
    if (run.code.empty() || !first) {
      return absl::InvalidArgumentError("Compiled, but not once and first after a Run with code");
    }
    absl::StatusOr<wire::CompiledMessage> message = wire::DecodeCompiled(*reply);
    if (!message.ok()) return message.status();
    if (compiled != nullptr) *compiled = std::move(message->bytecode);
  }
}

uint64_t NextSpareId() {
  static std::atomic<uint64_t> counter{0};
  return (static_cast<uint64_t>(::getpid()) << 24) | ++counter;
}

}  // namespace zygo::agents::conformance
