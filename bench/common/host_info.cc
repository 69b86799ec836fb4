#include "bench/common/host_info.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "bench/common/timed_spawn.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

namespace zygo::bench {
namespace {

// The value of the first "key<spaces>: value" line in a /proc file, or "".
std::string ProcField(const char* path, absl::string_view key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    absl::string_view view(line);
    if (!absl::ConsumePrefix(&view, key)) continue;
    view = absl::StripLeadingAsciiWhitespace(view);
    if (!absl::ConsumePrefix(&view, ":")) continue;
    return std::string(absl::StripAsciiWhitespace(view));
  }
  return "";
}

std::string CpuModel() {
  // x86 names the model; arm64 kernels often print no model name at all.
  for (const char* key : {"model name", "Hardware", "Processor", "cpu model"}) {
    std::string value = ProcField("/proc/cpuinfo", key);
    if (!value.empty()) return value;
  }
  return "unknown";
}

int AvailableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

double MemoryGib() {
  std::string total = ProcField("/proc/meminfo", "MemTotal");  // "8137232 kB"
  double kib = 0;
  if (!absl::SimpleAtod(absl::StripSuffix(total, " kB"), &kib)) return 0;
  return kib / (1024.0 * 1024.0);
}

// v2: /sys/fs/cgroup is cgroup2. Hybrid: a tmpfs of v1 hierarchies plus a cgroup2
// mount at unified/ (systemd's hybrid layout). Legacy: v1 hierarchies only.
std::string CgroupMode() {
  struct statfs fs;
  if (statfs("/sys/fs/cgroup", &fs) != 0) return "unknown";
  if (fs.f_type == CGROUP2_SUPER_MAGIC) return "v2";
  if (fs.f_type != TMPFS_MAGIC) return "unknown";
  struct statfs unified;
  if (statfs("/sys/fs/cgroup/unified", &unified) == 0 && unified.f_type == CGROUP2_SUPER_MAGIC) {
    return "v1 (hybrid)";
  }
  return "v1 (legacy)";
}

void ReadLoad(double load[3]) {
  std::ifstream file("/proc/loadavg");
  file >> load[0] >> load[1] >> load[2];
}

}  // namespace

std::optional<double> HostBusyCpuSeconds() {
  std::ifstream file("/proc/stat");
  std::string label;
  // cpu  user nice system idle iowait irq softirq steal (proc(5)), in USER_HZ ticks.
  long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(file >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return std::nullopt;
  }
  return static_cast<double>(user + nice + system + irq + softirq + steal) / sysconf(_SC_CLK_TCK);
}

double OwnCpuSeconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    struct rusage usage;
    if (getrusage(who, &usage) != 0) continue;
    total += usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
             usage.ru_stime.tv_usec / 1e6;
  }
  return total;
}

HostInfo ProbeHost(const std::string& bwrap_path) {
  HostInfo host;
  struct utsname names;
  if (uname(&names) == 0) {
    host.kernel = names.release;
    host.arch = names.machine;
  } else {
    host.kernel = host.arch = "unknown";
  }
  host.cpu_model = CpuModel();
  host.nproc = AvailableCpus();
  host.memory_gib = MemoryGib();
  host.cgroup_mode = CgroupMode();
  ReadLoad(host.load);
  host.bwrap_path = bwrap_path;
  host.bwrap_found = access(bwrap_path.c_str(), X_OK) == 0;
  if (host.bwrap_found) {
    absl::StatusOr<std::string> version = CaptureStdout({{bwrap_path, "--version"}});
    host.bwrap_version = version.ok()
                             ? std::string(absl::StripAsciiWhitespace(*version))
                             : absl::StrCat("version unknown (", version.status().message(), ")");
  }
  return host;
}

std::string HostLine(const HostInfo& host) {
  std::string bwrap = host.bwrap_found
                          ? absl::StrFormat("bwrap: %s (%s)", host.bwrap_version, host.bwrap_path)
                          : absl::StrFormat("bwrap: not found at %s", host.bwrap_path);
  return absl::StrFormat(
      "host: Linux %s %s, CPU %s, nproc %d, memory %.1f GiB, cgroup %s, load %.2f %.2f %.2f, %s",
      host.kernel, host.arch, host.cpu_model, host.nproc, host.memory_gib, host.cgroup_mode,
      host.load[0], host.load[1], host.load[2], bwrap);
}

bool HostWasBusy(const HostInfo& host) { return host.nproc > 0 && host.load[0] > host.nproc; }

nlohmann::ordered_json HostToJson(const HostInfo& host) {
  return {
      {"kernel", host.kernel},
      {"arch", host.arch},
      {"cpu_model", host.cpu_model},
      {"nproc", host.nproc},
      {"memory_gib", host.memory_gib},
      {"cgroup_mode", host.cgroup_mode},
      {"load_before", {host.load[0], host.load[1], host.load[2]}},
      {"bwrap_path", host.bwrap_path},
      {"bwrap_found", host.bwrap_found},
      {"bwrap_version", host.bwrap_version},
  };
}

}  // namespace zygo::bench
