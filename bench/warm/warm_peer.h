// The warm benches' peers that are servers: a script (bench/warm/prefork_peer.py run with
// the host's python3, or bench/warm/node_vm_peer.js run with node) serving a line protocol
// on a unix socket, and a client for it. Parent side; no privileges.
#ifndef ZYGO_BENCH_WARM_WARM_PEER_H_
#define ZYGO_BENCH_WARM_WARM_PEER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::bench {

// What a peer server runs: `interpreter DIR/FILE_NAME SOCKET HANDLER_FILE FUNCTION`, with
// FILE_NAME's text `source` (embedded in zygo) written there first.
struct PeerScript {
  std::string what;         // "the prefork peer", for messages
  std::string interpreter;  // an absolute path
  std::string file_name;    // "prefork_peer.py"
  const char* source = "";
};

// bench/warm/prefork_peer.py run with `python`: a plain Python server that forks per request.
PeerScript PreforkPeerScript(const std::string& python);

class PeerServer {
 public:
  // Writes the script into `dir`, starts it with DIR/peer.sock, `handler_file` and
  // `function` (output in DIR/peer.log) and waits up to 15 s until it accepts connections.
  // `dir` must be short enough for a socket path and outlive the peer; one peer per `dir`.
  static absl::StatusOr<std::unique_ptr<PeerServer>> Start(const PeerScript& script,
                                                           const std::string& dir,
                                                           const std::string& handler_file,
                                                           const std::string& function);
  ~PeerServer();  // Stop()s it
  PeerServer(const PeerServer&) = delete;
  PeerServer& operator=(const PeerServer&) = delete;

  absl::Status Stop();
  const std::string& socket_path() const { return socket_; }
  pid_t pid() const { return pid_; }

 private:
  PeerServer(std::string what, const std::string& dir)
      : what_(std::move(what)), socket_(dir + "/peer.sock") {}
  std::string what_;
  std::string socket_;
  pid_t pid_ = -1;
};

// One connection to a peer server: a request is a line of JSON, its reply the next line.
class PeerConnection {
 public:
  static absl::StatusOr<PeerConnection> Connect(const std::string& socket_path);
  PeerConnection(PeerConnection&&) = default;
  PeerConnection& operator=(PeerConnection&&) = default;

  // Sends `line` (no newline in it) plus '\n' and returns the reply line, without its '\n'.
  absl::StatusOr<std::string> Call(absl::string_view line);

 private:
  explicit PeerConnection(base::UniqueFd fd) : fd_(std::move(fd)) {}
  base::UniqueFd fd_;
  std::string buffer_;   // bytes received past the last reply
  std::string request_;  // reused between calls
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_PEER_H_
