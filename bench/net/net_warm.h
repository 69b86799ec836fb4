// The warm half of `zygo bench net`: what a network mode adds to warming a function. A
// supervisor runs on the fake internet's machine; rounds of up / one request / down of a
// one-line Python handler with `[net] mode = none | egress | full`, modes interleaved.
// Parent side; needs root, pasta and nftables (as the supervisor does).
#ifndef ZYGO_BENCH_NET_NET_WARM_H_
#define ZYGO_BENCH_NET_NET_WARM_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/net/bench_internet.h"
#include "bench/warm/warm_setup.h"

namespace zygo::bench {

// Starts `supervisor_binary` inside the machine namespace of `net`, with
// ZYGO_DNS_UPSTREAM pointing its egress resolvers at the fake DNS server (the supervisor
// reads it from its environment; a function spec has no such field).
absl::StatusOr<SupervisorSession> StartNetSupervisor(const FakeInternet& net,
                                                     const std::string& supervisor_binary);

struct NetWarmSamples {
  // Per mode ("none", "egress", "full"), one sample per round, ms:
  std::map<std::string, std::vector<double>> warm_ms;  // the supervisor's own warm time
  std::map<std::string, std::vector<double>> up_ms;    // POST /v1/functions until "warm"
  // Per networked mode, the round's request from the warm function to the allowed
  // server: resolve (egress by name) + connect, timed in the handler, ms.
  std::map<std::string, std::vector<double>> request_ms;
};

// `warmup` untimed rounds, then `rounds` timed ones. Each round registers one function
// per mode (the order rotating round by round), waits until it is warm, sends it one
// request (networked modes: connect to the allowed server; a failed connect is an error)
// and removes it.
absl::StatusOr<NetWarmSamples> MeasureNetWarm(SupervisorSession& session, int rounds, int warmup);

// The table: p50/p99 per mode and what each adds over none, then the requests' line.
absl::Status PrintNetWarm(const NetWarmSamples& samples);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_NET_NET_WARM_H_
