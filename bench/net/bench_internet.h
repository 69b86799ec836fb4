// What `zygo bench net` uses of the fake internet (testing/fake_internet.h): the name,
// server and DNS it measures against, commands run on the machine, and the Python that
// measures itself there and in the sandbox.
#ifndef ZYGO_BENCH_NET_BENCH_INTERNET_H_
#define ZYGO_BENCH_NET_BENCH_INTERNET_H_

#include <string>
#include <vector>

#include "bench/common/timed_spawn.h"
#include "testing/fake_internet.h"

namespace zygo::bench {

using testing::FakeInternet;

inline constexpr const char* kBenchName = testing::kAllowedName;
inline constexpr const char* kServerAddress = testing::kAllowedAddress;
inline constexpr int kServerPort = testing::kAllowedPort;  // accepts and closes
inline constexpr int kSourcePort = testing::kSourcePort;   // sends what is asked for

// testing::kDnsServer as ZYGO_DNS_UPSTREAM takes it: "192.0.2.53:53".
std::string DnsUpstream();

// `argv` run inside the machine namespace of `net` (through nsenter --net; nothing else of
// the caller changes). argv[0] is an absolute path; a non-empty `env` replaces the caller's.
Command OnMachine(const FakeInternet& net, const std::vector<std::string>& argv,
                  std::vector<std::string> env);

// Python run in the sandbox or on the machine that measures itself with
// time.perf_counter and prints "key ms" lines:
//   connect ADDR PORT      -> "connect_ms X"
//   resolve NAME PORT      -> "resolve_ms X" and "connect_ms Y" (first connect after)
//   query SERVER NAME      -> "answer_ms X" (one raw UDP DNS question for an A record)
//   stream HOST PORT BYTES -> "stream_ms X": BYTES from the source over one connection
extern const char kMeasureScript[];

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_NET_BENCH_INTERNET_H_
