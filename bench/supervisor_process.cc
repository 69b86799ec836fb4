// Starting, health-checking and stopping a bench's own supervisor.
#include "bench/supervisor_process.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "bench/background_process.h"
#include "bench/scratch_dir.h"
#include "bench/timed_spawn.h"
#include "core/base/errno_status.h"
#include "core/base/helper_binary.h"
#include "core/base/status_macros.h"
#include "core/base/sys/remove_tree.h"
#include "sdk/cpp/zygo/api_connection.h"

namespace zygo::bench {
namespace {

constexpr int kHealthDeadlineMs = 15'000;
constexpr int kStopGraceMs = 10'000;

}  // namespace

absl::StatusOr<std::string> FindSupervisorBinary(const std::string& override_path) {
  if (!override_path.empty()) {
    if (access(override_path.c_str(), X_OK) != 0) {
      return base::ErrnoStatus(errno, absl::StrCat("--supervisor: access(", override_path, ")"));
    }
    char resolved[PATH_MAX];
    if (realpath(override_path.c_str(), resolved) == nullptr) {
      return base::ErrnoStatus(errno, absl::StrCat("realpath(", override_path, ")"));
    }
    return std::string(resolved);
  }
  // Installed as zygo-supervisor; in a Bazel tree it is //supervisor's own output.
  absl::StatusOr<std::string> installed =
      base::FindHelperBinary("zygo-supervisor", "supervisor", "the supervisor");
  if (installed.ok()) return installed;
  absl::StatusOr<std::string> built =
      base::FindHelperBinary("supervisor", "supervisor", "the supervisor, `zygo serve`");
  if (built.ok()) return built;
  return absl::NotFoundError(absl::StrCat(
      built.status().message(), "; build it (bazel build //supervisor) or pass --supervisor PATH"));
}

SupervisorProcess::SupervisorProcess(std::string dir)
    : dir_(std::move(dir)), socket_(dir_ + "/api.sock") {}

absl::StatusOr<std::unique_ptr<SupervisorProcess>> SupervisorProcess::Start(
    const std::string& binary) {
  // Always /tmp, never $TMPDIR: a test's TMPDIR is deep enough to push the socket path
  // past sun_path's 108 bytes.
  char pattern[] = "/tmp/zygo-bench-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return base::ErrnoStatus(errno, "mkdtemp(/tmp/zygo-bench-*)");
  std::unique_ptr<SupervisorProcess> process(new SupervisorProcess(pattern));
  for (const std::string& sub : {process->dir_ + "/state", process->WorkDir()}) {
    if (mkdir(sub.c_str(), 0755) != 0)
      return base::ErrnoStatus(errno, absl::StrCat("mkdir(", sub, ")"));
  }
  ZYGO_RETURN_IF_ERROR(process->Spawn(binary));
  ZYGO_RETURN_IF_ERROR(process->WaitHealthy());
  return process;
}

absl::Status SupervisorProcess::Spawn(const std::string& binary) {
  ZYGO_ASSIGN_OR_RETURN(
      pid_, StartBackground({binary, "--listen", socket_, "--grpc-listen", dir_ + "/grpc.sock",
                             "--state-dir", dir_ + "/state", "--no-demo"},
                            dir_ + "/supervisor.log"));
  return absl::OkStatus();
}

absl::Status SupervisorProcess::WaitHealthy() {
  absl::Status last = absl::UnavailableError("not started");
  for (int waited_ms = 0; waited_ms < kHealthDeadlineMs; waited_ms += 10) {
    int status = 0;
    if (!StillRunning(pid_, &status)) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("the supervisor ", DescribeWaitStatus(status),
                                                 " before it was healthy; its log:\n", LogTail()));
    }
    absl::StatusOr<sdk::ApiConnection> connection = sdk::ApiConnection::Connect(socket_);
    if (connection.ok()) {
      absl::StatusOr<nlohmann::json> health = connection->CallJson("GET", "/v1/health", "");
      if (health.ok()) return absl::OkStatus();
      last = health.status();
    } else {
      last = connection.status();
    }
    usleep(10'000);
  }
  return absl::DeadlineExceededError(absl::StrCat("the supervisor was not healthy after ",
                                                  kHealthDeadlineMs, " ms (", last.message(),
                                                  "); its log:\n", LogTail()));
}

absl::Status SupervisorProcess::Stop() {
  if (pid_ < 0) return absl::OkStatus();
  absl::StatusOr<int> status = StopBackground(pid_, kStopGraceMs);
  pid_ = -1;
  if (!status.ok()) return status.status();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return absl::InternalError(absl::StrCat("the supervisor ", DescribeWaitStatus(*status),
                                            " when stopped; its log:\n", LogTail()));
  }
  return absl::OkStatus();
}

SupervisorProcess::~SupervisorProcess() {
  if (absl::Status stopped = Stop(); !stopped.ok()) {
    fprintf(stderr, "zygo bench: stopping the supervisor: %s\n",
            std::string(stopped.message()).c_str());
  }
  if (absl::Status removed = base::sys::RemoveTree(dir_); !removed.ok()) {
    fprintf(stderr, "zygo bench: %s\n", std::string(removed.message()).c_str());
  }
}

std::string SupervisorProcess::LogTail(size_t bytes) const {
  return FileTail(dir_ + "/supervisor.log", bytes);
}

}  // namespace zygo::bench
