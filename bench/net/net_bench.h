// `zygo bench net`: what a network mode adds to a one-shot run and to warming a function,
// and the time to connect to an allowed server and the bytes per second from it through
// the sandbox against the same from the machine directly, in a fake internet the bench
// builds and removes.
#ifndef ZYGO_BENCH_NET_NET_BENCH_H_
#define ZYGO_BENCH_NET_NET_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, a table per part and notes to stdout; `argv`
// starts after the word "net" (flags: `zygo bench net --help`). Builds its own network
// namespaces (see testing/fake_internet.h) and removes them on every exit, including when
// this process is killed; never touches the real network. Returns 0 when everything was
// measured, 125 when it could not be. Parent side. Needs root, pasta, nftables,
// /usr/bin/python3, setpriv, unshare, nsenter, ip and the supervisor binary.
int RunNetBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_NET_NET_BENCH_H_
