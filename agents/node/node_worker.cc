// Starting a Node worker and talking to it: the control socket, the relayed pipes, its end.
#include "agents/node/node_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/node/child_exec.h"
#include "agents/node/control_channel.h"
#include "core/base/errno_status.h"
#include "nlohmann/json.hpp"

namespace zygo::agents::node {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

constexpr int kControlFd = 3;
constexpr int kCodeFd = 4;

const char* ModeName(WorkerMode mode) {
  switch (mode) {
    case WorkerMode::kFunction:
      return "function";
    case WorkerMode::kPool:
      return "pool";
    case WorkerMode::kCheck:
      return "check";
  }
  return "function";
}

// Copies what `from` has now to `to`; false once `from` is at EOF (or broken).
bool CopyAvailable(int from, int to) {
  char buffer[16384];
  for (;;) {
    const ssize_t got = ::read(from, buffer, sizeof(buffer));
    if (got < 0) return errno == EAGAIN || errno == EINTR;
    if (got == 0) return false;
    // A request's memfd or the sandbox's log; a short write loses output, never the answer.
    for (ssize_t done = 0; done < got;) {
      const ssize_t wrote = ::write(to, buffer + done, static_cast<size_t>(got - done));
      if (wrote <= 0) {
        if (wrote < 0 && errno == EINTR) continue;
        break;
      }
      done += wrote;
    }
  }
}

WorkerError ErrorFromJson(const nlohmann::json& described) {
  WorkerError error;
  if (!described.is_object()) return {"ProtocolError", "the worker's error is not an object", ""};
  auto text = [&](const char* key) {
    auto found = described.find(key);
    return found != described.end() && found->is_string() ? found->get<std::string>() : "";
  };
  error.type = text("type");
  error.message = text("message");
  error.stack = text("stack");
  if (error.type.empty()) error.type = "Error";
  return error;
}

// A message's field that must be true, anything else false (the worker runs the
// handler's code, so nothing it sends is trusted to have the right type).
bool BoolField(const nlohmann::json& message, const char* key) {
  auto found = message.find(key);
  return found != message.end() && found->is_boolean() && found->get<bool>();
}

absl::StatusOr<nlohmann::json> ParseMessage(const std::string& bytes) {
  nlohmann::json message = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object())
    return absl::DataLossError("the worker sent a message that is not JSON");
  return message;
}

}  // namespace

absl::StatusOr<Worker> Worker::Start(const WorkerCommand& command) {
  int control[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) {
    return ErrnoStatus(errno, "socketpair(worker channel)");
  }
  UniqueFd mine(control[0]), theirs(control[1]);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2(worker stdout)");
  UniqueFd out_read(out[0]), out_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2(worker stderr)");
  UniqueFd err_read(err[0]), err_write(err[1]);
  const std::string max_result = std::to_string(command.max_result);
  // A main script's path is resolved to its target unless asked not to, and a memfd's
  // target ("/memfd:... (deleted)") is no file.
  const char* argv[] = {
      command.node.c_str(),     command.snapshot ? "--snapshot-blob" : "--preserve-symlinks-main",
      "/proc/self/fd/4",        ModeName(command.mode),
      command.code_dir.c_str(), command.entry.c_str(),
      max_result.c_str(),       nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus(errno, "fork(node worker)");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) ::_exit(127);
    const FdMove moves[] = {{null, 0},
                            {out_write.get(), 1},
                            {err_write.get(), 2},
                            {theirs.get(), kControlFd},
                            {command.code_fd, kCodeFd}};
    ExecChild(parent, moves, 5, const_cast<char* const*>(argv));
  }
  for (const UniqueFd* fd : {&out_read, &err_read}) {
    ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }
  Worker worker;
  worker.pid_ = pid;
  worker.control_ = std::move(mine);
  worker.out_ = std::move(out_read);
  worker.err_ = std::move(err_read);
  return worker;
}

absl::StatusOr<std::string> Worker::ReceiveRelaying(int out_fd, int err_fd) {
  for (;;) {
    pollfd fds[3] = {{control_.get(), POLLIN, 0}, {out_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "poll(node worker)");
    }
    if (fds[1].revents != 0 && !CopyAvailable(out_.get(), out_fd)) out_.Reset();
    if (fds[2].revents != 0 && !CopyAvailable(err_.get(), err_fd)) err_.Reset();
    // The worker writes a message whole and at once, so reading it here never waits long.
    if (fds[0].revents != 0) return ReadControlMessage(control_.get());
  }
}

void Worker::DrainPipes(int out_fd, int err_fd) {
  if (out_.valid() && !CopyAvailable(out_.get(), out_fd)) out_.Reset();
  if (err_.valid() && !CopyAvailable(err_.get(), err_fd)) err_.Reset();
}

absl::StatusOr<std::optional<WorkerError>> Worker::AwaitReady(int log_fd) {
  if (!readiness_.has_value()) readiness_ = ReceiveReadiness(log_fd);
  return *readiness_;
}

absl::StatusOr<std::optional<WorkerError>> Worker::ReceiveReadiness(int log_fd) {
  absl::StatusOr<std::string> bytes = ReceiveRelaying(log_fd, log_fd);
  if (!bytes.ok()) return bytes.status();
  // stdout and stderr are written synchronously to pipes: what the load printed is there.
  DrainPipes(log_fd, log_fd);
  absl::StatusOr<nlohmann::json> message = ParseMessage(*bytes);
  if (!message.ok()) return message.status();
  if (message->contains("ready")) {
    traits_.esm = BoolField(*message, "esm");
    traits_.builtin_snapshot = BoolField(*message, "builtin_snapshot");
    return std::nullopt;
  }
  auto failed = message->find("load_failed");
  if (failed == message->end()) {
    return absl::DataLossError("the worker said neither ready nor why not");
  }
  return ErrorFromJson(*failed);
}

absl::Status Worker::SendRequest(const std::string& entry, const std::string& code,
                                 const std::string& event) {
  nlohmann::json header = {{"entry", entry}, {"code", code}};
  const std::string head = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (absl::Status sent = WriteControlMessage(control_, head); !sent.ok()) return sent;
  return WriteControlMessage(control_, event);
}

absl::StatusOr<WorkerAnswer> Worker::AwaitAnswer(int out_fd, int err_fd) {
  absl::StatusOr<std::string> bytes = ReceiveRelaying(out_fd, err_fd);
  DrainPipes(out_fd, err_fd);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<nlohmann::json> message = ParseMessage(*bytes);
  if (!message.ok()) return message.status();
  WorkerAnswer answer;
  if (auto done = message->find("done"); done != message->end() && done->is_string()) {
    answer.result = done->get<std::string>();
    return answer;
  }
  auto failed = message->find("failed");
  if (failed == message->end())
    return absl::DataLossError("the worker sent neither a result nor an error");
  answer.error = ErrorFromJson(*failed);
  return answer;
}

WorkerExit Worker::ReapExit() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return WorkerExit{false, 127};
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) return WorkerExit{true, WTERMSIG(status)};
  return WorkerExit{false, WEXITSTATUS(status)};
}

}  // namespace zygo::agents::node
