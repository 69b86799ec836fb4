// What a benchmark ran on: kernel, CPU, memory, cgroup mode, load and the peer tool,
// printed next to every result because a number without its machine means little.
// Parent side; reads /proc and /sys, needs no privileges.
#ifndef ZYGO_BENCH_COMMON_HOST_INFO_H_
#define ZYGO_BENCH_COMMON_HOST_INFO_H_

#include <cstdint>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace zygo::bench {

struct HostInfo {
  std::string kernel;          // uname -r
  std::string arch;            // uname -m
  std::string cpu_model;       // /proc/cpuinfo "model name" (or "unknown")
  int nproc = 0;               // CPUs this process may run on, as nproc(1) counts them
  double memory_gib = 0;       // MemTotal
  std::string cgroup_mode;     // "v2", "v1 (hybrid)", "v1 (legacy)" or "unknown"
  double load[3] = {0, 0, 0};  // /proc/loadavg, read before measuring
  std::string bwrap_path;
  bool bwrap_found = false;   // executable at bwrap_path
  std::string bwrap_version;  // `bwrap --version`, or why it could not be read
};

// Reads the host's description; never fails (an unreadable field says "unknown").
HostInfo ProbeHost(const std::string& bwrap_path);

// One line: "host: Linux 6.1.0 x86_64, CPU ..., nproc 2, memory 7.8 GiB, cgroup v2,
// load 0.10 0.20 0.30, bwrap: bubblewrap 0.8.0 (/usr/bin/bwrap)".
std::string HostLine(const HostInfo& host);

// True when the one-minute load before measuring was above the CPU count: the
// numbers then say as much about the machine as about the code.
bool HostWasBusy(const HostInfo& host);

// CPU time the whole host has spent busy (user, nice, system, irq, softirq, steal)
// since boot, from /proc/stat; nullopt if unreadable. Across a bench, this minus the
// CPU time of the bench's own processes is what other work on the host used.
std::optional<double> HostBusyCpuSeconds();

// CPU time used by this process and every child it has reaped (which includes what
// those children reaped: zygo's and bwrap's sandboxed processes).
double OwnCpuSeconds();

nlohmann::ordered_json HostToJson(const HostInfo& host);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_HOST_INFO_H_
