// What the HTTP front end allows each connection and each client: how long a request may
// take to arrive, how long a kept-alive connection may idle, and how many connections one
// client (a uid, from the socket's peer credentials) and all clients together may hold.
#ifndef ZYGO_SUPERVISOR_CONNECTION_LIMITS_H_
#define ZYGO_SUPERVISOR_CONNECTION_LIMITS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace zygo::supervisor {

// The defaults are nginx's where it has one: a request's head and body must arrive within
// 30 s of its first byte (of the connection, for the first request; nginx gives 60 s each
// to the header and between body reads, but these clients are local), a kept-alive
// connection may idle 75 s (keepalive_timeout). nginx caps no client by default; here one
// uid may hold 256 connections and all together 4,096 (nginx's worker_connections is 512
// or 1,024 per worker), both fitted to the open-file limit (FitToOpenFiles).
struct HttpLimits {
  absl::Duration request_timeout = absl::Seconds(30);
  absl::Duration idle_timeout = absl::Seconds(75);
  size_t max_connections = 4096;
  size_t max_connections_per_client = 256;
};

// `wanted` with the connection caps lowered to fit `open_files` (RLIMIT_NOFILE's soft
// limit): a quarter of it (at least 256) is kept for what else the supervisor holds
// (zygote channels, spares' memfds and cgroup files, gRPC's connections), and a connection
// may take two fds (its socket, and the dup an exec reply is written through), so at most
// half of the rest; at least 1. The per-client cap is at most the global one.
HttpLimits FitToOpenFiles(HttpLimits wanted, uint64_t open_files);

// Counts open connections per client and in all. Not thread-safe: the HTTP loop's thread.
class ConnectionAdmission {
 public:
  explicit ConnectionAdmission(const HttpLimits& limits)
      : max_total_(limits.max_connections), max_per_client_(limits.max_connections_per_client) {}

  // Counts one more connection of `uid`; Unavailable, counting nothing, when that would be
  // more than its cap or the global one (the message says which).
  absl::Status Admit(uid_t uid);
  // One connection of `uid` that Admit counted is gone.
  void Release(uid_t uid);

  size_t open() const { return total_; }
  size_t open_of(uid_t uid) const;

 private:
  const size_t max_total_;
  const size_t max_per_client_;
  size_t total_ = 0;
  std::map<uid_t, size_t> per_client_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_CONNECTION_LIMITS_H_
