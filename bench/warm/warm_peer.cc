// Running a peer server (bench/warm/prefork_peer.py, node_vm_peer.js) and talking to it.
#include "bench/warm/warm_peer.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "bench/common/background_process.h"
#include "bench/common/timed_spawn.h"
#include "bench/warm/prefork_peer_source.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "core/base/sys/wait_status.h"
#include "sdk/cpp/zygo/api_connection.h"

namespace zygo::bench {
namespace {

constexpr int kReadyDeadlineMs = 15'000;
constexpr int kStopGraceMs = 5'000;

}  // namespace

PeerScript PreforkPeerScript(const std::string& python) {
  return {"the prefork peer", python, "prefork_peer.py", kPreforkPeerSource};
}

absl::StatusOr<std::unique_ptr<PeerServer>> PeerServer::Start(const PeerScript& script,
                                                              const std::string& dir,
                                                              const std::string& handler_file,
                                                              const std::string& function) {
  if (access(script.interpreter.c_str(), X_OK) != 0) {
    return base::ErrnoStatus(
        errno, absl::StrCat(script.what, "'s interpreter: access(", script.interpreter, ")"));
  }
  std::unique_ptr<PeerServer> peer(new PeerServer(script.what, dir));
  const std::string path = absl::StrCat(dir, "/", script.file_name);
  ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(path, script.source));
  unlink(peer->socket_.c_str());
  const std::string log = dir + "/peer.log";
  ZYGO_ASSIGN_OR_RETURN(
      peer->pid_,
      StartBackground({script.interpreter, path, peer->socket_, handler_file, function}, log));
  for (int waited_ms = 0; waited_ms < kReadyDeadlineMs; waited_ms += 5) {
    int status = 0;
    if (!StillRunning(peer->pid_, &status)) {
      peer->pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat(script.what, " ", base::sys::DescribeWaitStatus(status),
                       " before it was ready; its log:\n", FileTail(log, 2000)));
    }
    if (sdk::ConnectUnixSocket(peer->socket_).ok()) return peer;
    usleep(5'000);
  }
  return absl::DeadlineExceededError(absl::StrCat(script.what, " was not ready after ",
                                                  kReadyDeadlineMs, " ms; its log:\n",
                                                  FileTail(log, 2000)));
}

absl::Status PeerServer::Stop() {
  if (pid_ < 0) return absl::OkStatus();
  absl::StatusOr<int> status = StopBackground(pid_, kStopGraceMs);
  pid_ = -1;
  return status.status();  // killed by SIGTERM is how it stops; only a hang is an error
}

PeerServer::~PeerServer() {
  if (absl::Status stopped = Stop(); !stopped.ok()) {
    fprintf(stderr, "zygo bench: stopping %s: %s\n", what_.c_str(),
            std::string(stopped.message()).c_str());
  }
}

absl::StatusOr<PeerConnection> PeerConnection::Connect(const std::string& socket_path) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd, sdk::ConnectUnixSocket(socket_path));
  return PeerConnection(std::move(fd));
}

absl::StatusOr<std::string> PeerConnection::Call(absl::string_view line) {
  request_.assign(line.data(), line.size());
  request_.push_back('\n');
  absl::string_view rest = request_;
  while (!rest.empty()) {
    ssize_t n = send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoStatus(errno, "send(peer)");
    rest.remove_prefix(static_cast<size_t>(n));
  }
  size_t newline;
  while ((newline = buffer_.find('\n')) == std::string::npos) {
    char chunk[64 * 1024];
    ssize_t n = recv(fd_.get(), chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoStatus(errno, "recv(peer)");
    if (n == 0) return absl::UnavailableError("the peer closed the connection");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  std::string reply = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  return reply;
}

}  // namespace zygo::bench
