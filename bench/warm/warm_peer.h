// The warm benches' peer: bench/warm/prefork_peer.py (a plain Python server that forks per
// request) run with the host's python3, and a line-protocol client for it. Parent side;
// no privileges.
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

class PreforkPeer {
 public:
  // Writes the peer's source into `dir`, starts `python DIR/prefork_peer.py DIR/peer.sock
  // HANDLER_FILE FUNCTION` (output in DIR/peer.log) and waits up to 15 s until it accepts
  // connections. `dir` must be short enough for a socket path and outlive the peer.
  static absl::StatusOr<std::unique_ptr<PreforkPeer>> Start(const std::string& python,
                                                            const std::string& dir,
                                                            const std::string& handler_file,
                                                            const std::string& function);
  ~PreforkPeer();  // Stop()s it
  PreforkPeer(const PreforkPeer&) = delete;
  PreforkPeer& operator=(const PreforkPeer&) = delete;

  absl::Status Stop();
  const std::string& socket_path() const { return socket_; }
  pid_t pid() const { return pid_; }

 private:
  PreforkPeer(std::string dir) : dir_(std::move(dir)), socket_(dir_ + "/peer.sock") {}
  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

// One connection to the peer: a request is a line of JSON, its reply the next line.
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
