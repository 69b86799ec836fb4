#include "bench/pull/local_registry.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/common/timed_spawn.h"
#include "core/base/status_macros.h"
#include "core/base/sys/wait_status.h"

namespace zygo::bench {
namespace {

// Generous: stopping waits up to 5 s per process before SIGKILL.
constexpr int kStopDeadlineMs = 60'000;

// The access log's request field and user agent, as docker-registry writes them:
//   127.0.0.1 - - [...] "GET /v2/python/manifests/bench HTTP/1.1" 200 526 "" "zygo/0.1"
bool IsZygoOk(const std::string& line) {
  return absl::StrContains(line, " HTTP/1.1\" 200 ") && absl::StrContains(line, "\" \"zygo/");
}

}  // namespace

absl::StatusOr<std::string> ToolValue(const std::string& output, const std::string& key) {
  for (absl::string_view field : absl::StrSplit(output, absl::ByAnyChar(" \n"))) {
    if (absl::ConsumePrefix(&field, key) && absl::ConsumePrefix(&field, "=")) {
      return std::string(field);
    }
  }
  return absl::NotFoundError(absl::StrCat("no ", key, "= in '", output, "'"));
}

absl::StatusOr<TestImage> BuildTestImage(const std::string& tree, const std::string& name,
                                         const std::string& out_dir) {
  Command build{{tree + "/tools/images/build", name}};
  if (!out_dir.empty()) build.argv.push_back(out_dir);
  absl::StatusOr<std::string> out = CaptureStdout(build);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("building the ", name, " test image: ", out.status().message(),
                                     "; run it by hand to see why: ", CommandLine(build)));
  }
  TestImage image{name, "", ""};
  ZYGO_ASSIGN_OR_RETURN(image.layout, ToolValue(*out, "IMAGE"));
  ZYGO_ASSIGN_OR_RETURN(image.digest, ToolValue(*out, "DIGEST"));
  return image;
}

absl::StatusOr<LocalRegistry> LocalRegistry::Start(const std::string& tree, pid_t watch_pid) {
  Command serve{
      {tree + "/testing/registry/serve", "anonymous", "--watch", absl::StrCat(watch_pid)}};
  absl::StatusOr<std::string> out = CaptureStdout(serve);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("starting the registry: ", out.status().message(),
                                     "; run it by hand to see why: ", CommandLine(serve)));
  }
  ZYGO_ASSIGN_OR_RETURN(std::string dir, ToolValue(*out, "DIR"));
  // From here on the registry runs: the object owns it, so every return stops it.
  LocalRegistry registry(tree, "", dir, -1);
  ZYGO_ASSIGN_OR_RETURN(registry.address_, ToolValue(*out, "REGISTRY"));
  ZYGO_ASSIGN_OR_RETURN(std::string pid_text, ToolValue(*out, "PID"));
  int pid = -1;
  if (!absl::SimpleAtoi(pid_text, &pid)) {
    return absl::InternalError(absl::StrCat("serve printed PID=", pid_text));
  }
  registry.pid_ = pid;
  return registry;
}

LocalRegistry::LocalRegistry(LocalRegistry&& other) noexcept
    : tree_(std::move(other.tree_)),
      address_(std::move(other.address_)),
      dir_(std::move(other.dir_)),
      pid_(other.pid_) {
  other.dir_.clear();
}

LocalRegistry::~LocalRegistry() {
  if (dir_.empty()) return;
  Command stop{{tree_ + "/testing/registry/stop", dir_}};
  absl::StatusOr<TimedRun> run = RunTimed(stop, kStopDeadlineMs);
  if (!run.ok() || run->wait_status != 0) {
    fprintf(stderr, "zygo bench: could not stop the registry: %s %s\n", CommandLine(stop).c_str(),
            run.ok() ? base::sys::DescribeWaitStatus(run->wait_status).c_str()
                     : std::string(run.status().message()).c_str());
  }
}

absl::Status LocalRegistry::Push(const TestImage& image, const std::string& name_tag) const {
  Command push{{tree_ + "/testing/registry/push", image.layout, address_ + "/" + name_tag}};
  absl::StatusOr<std::string> out = CaptureStdout(push);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("pushing the test image: ", out.status().message(),
                                     "; run it by hand to see why: ", CommandLine(push)));
  }
  ZYGO_ASSIGN_OR_RETURN(std::string digest, ToolValue(*out, "DIGEST"));
  if (digest != image.digest) {
    return absl::InternalError(absl::StrCat("the registry holds ", name_tag, " as ", digest,
                                            ", not the built ", image.digest));
  }
  return absl::OkStatus();
}

std::optional<double> LocalRegistry::CpuSeconds() const {
  std::ifstream file(absl::StrCat("/proc/", pid_, "/stat"));
  std::stringstream text;
  text << file.rdbuf();
  std::string stat = text.str();
  // The command name may hold spaces; the fields after it do not. After ")" come
  // state (field 3) ... utime (14) and stime (15), in clock ticks.
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  double utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return std::nullopt;
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

ZygoRequests LocalRegistry::Requests(const std::string& repository) const {
  const std::string manifests = absl::StrCat("\"GET /v2/", repository, "/manifests/");
  const std::string blobs = absl::StrCat("\"GET /v2/", repository, "/blobs/");
  ZygoRequests counts;
  std::ifstream log(dir_ + "/registry.log");
  std::string line;
  while (std::getline(log, line)) {
    if (!IsZygoOk(line)) continue;
    if (absl::StrContains(line, manifests)) ++counts.manifest_gets;
    if (absl::StrContains(line, blobs)) ++counts.blob_gets;
  }
  return counts;
}

void LocalRegistry::SleepMs(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

}  // namespace zygo::bench
