// `zygo bench net`'s fake internet: a "machine" network namespace, where zygo runs, joined
// by veth to an "internet" namespace holding a fake DNS server (bench.test ->
// 198.51.100.10), a TCP accept server on 198.51.100.10:8080 and a byte source on :8081.
// No packet leaves them.
// Parent side; needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), setpriv, unshare, nsenter, ip and
// /usr/bin/python3.
#ifndef ZYGO_BENCH_NET_FAKE_INTERNET_H_
#define ZYGO_BENCH_NET_FAKE_INTERNET_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/common/timed_spawn.h"

namespace zygo::bench {

inline constexpr char kBenchName[] = "bench.test";
inline constexpr char kServerAddress[] = "198.51.100.10";  // TEST-NET-2
inline constexpr int kServerPort = 8080;                   // accepts and closes
inline constexpr int kSourcePort = 8081;                   // sends what is asked for (throughput)
// The internet's end of the veth (TEST-NET-3, 203.0.113.1/24; the machine is .2).
inline constexpr char kDnsUpstream[] = "203.0.113.1:53";  // ZYGO_DNS_UPSTREAM

class FakeInternet {
 public:
  // Makes both namespaces, wires them and waits until the TCP server and the DNS server
  // answer from the machine. Each namespace is held by a process started under
  // PR_SET_PDEATHSIG(SIGKILL) that never enters the caller's namespace: when this object
  // goes, or this process dies in any way, the holders die and the namespaces (veth pair,
  // servers and all) go with them. Nothing is mounted under /run/netns.
  static absl::StatusOr<std::unique_ptr<FakeInternet>> Start();
  ~FakeInternet();  // kills and reaps both holders
  FakeInternet(const FakeInternet&) = delete;
  FakeInternet& operator=(const FakeInternet&) = delete;

  // `argv` run inside the machine namespace (through nsenter --net; nothing else of the
  // caller changes). argv[0] is an absolute path.
  Command OnMachine(const std::vector<std::string>& argv, std::vector<std::string> env) const;

  // Runs `start` with the calling thread in the machine namespace, so that what it forks
  // (a supervisor) lives there for good; the thread is back in its own namespace after.
  // Sockets by path (the supervisor's API) work from either side.
  absl::Status InMachine(const std::function<absl::Status()>& start) const;

 private:
  FakeInternet() = default;
  absl::Status Wire() const;
  absl::Status WaitUntilServing() const;

  pid_t machine_ = -1;
  pid_t internet_ = -1;
};

// Python run in the sandbox or on the machine that measures itself with
// time.perf_counter and prints "key ms" lines:
//   connect ADDR PORT      -> "connect_ms X"
//   resolve NAME PORT      -> "resolve_ms X" and "connect_ms Y" (first connect after)
//   query SERVER NAME      -> "answer_ms X" (one raw UDP DNS question for an A record)
//   stream HOST PORT BYTES -> "stream_ms X": BYTES from the source over one connection
extern const char kMeasureScript[];

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_NET_FAKE_INTERNET_H_
