// Cached venvs, as named steps: key, lock, stage, build in a sandbox, tidy, commit.
#include "images/venv_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/unique_fd.h"
#include "images/digest.h"
#include "images/internal/build_log.h"
#include "images/internal/keyed_entries.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr char kRequirementsName[] = "zygo-requirements.txt";  // stays in the venv
constexpr char kImageName[] = "zygo-image";  // the manifest digest it was built for

absl::Status WriteWholeFile(const std::string& path, absl::string_view content) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenWriteOnly(path, base::sys::IfMissing::kCreate));
  for (absl::string_view rest = content; !rest.empty();) {
    ZYGO_ASSIGN_OR_RETURN(size_t n, base::sys::WriteOnce(fd, rest, path));
    rest.remove_prefix(n);
  }
  return absl::OkStatus();
}
constexpr char kTempName[] = ".zygo-tmp";
constexpr char kFindLinksMount[] = "/tmp";  // exists in every store root

// Exit codes of the build script, one per step, so the error can say which step failed.
constexpr int kVenvFailed = 3;
constexpr int kNoPip = 4;
constexpr int kInstallFailed = 5;

// argv[1:] are pip install's arguments.
constexpr char kBuildScript[] = R"(import os, subprocess, sys
os.makedirs('/venv/.zygo-tmp', exist_ok=True)
os.environ['TMPDIR'] = '/venv/.zygo-tmp'
py = sys.executable
if subprocess.call([py, '-m', 'venv', '--without-pip', '/venv']) != 0:
    sys.exit(3)
if subprocess.call([py, '-m', 'pip', '--version']) != 0:
    sys.exit(4)
if subprocess.call([py, '-m', 'pip', '--python', '/venv/bin/python', 'install'] + sys.argv[1:]) != 0:
    sys.exit(5)
)";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The mountpoint in the store's root. Its top may be read-only (0555 from the image's
// tarball): u+w for the mkdir, and the mode given back.
absl::Status EnsureMountpoint(const std::string& rootfs) {
  std::string path = absl::StrCat(rootfs, kVenvMountpoint);
  if (IsDirectory(path)) return absl::OkStatus();
  ZYGO_ASSIGN_OR_RETURN(struct stat top, base::sys::Stat(rootfs));
  bool grant = (top.st_mode & S_IWUSR) == 0;
  if (grant) ::chmod(rootfs.c_str(), (top.st_mode & 07777) | S_IWUSR);
  absl::Status made = base::sys::MakeDirectory(path, 0755);
  if (grant) ::chmod(rootfs.c_str(), top.st_mode & 07777);
  if (!made.ok() && base::sys::ErrnoOf(made) != EEXIST) return made;
  if (!IsDirectory(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the image has ", kVenvMountpoint, " as something other than a directory"));
  }
  return absl::OkStatus();
}

std::vector<std::string> PipArguments(const VenvRequest& request) {
  std::vector<std::string> args = {"--no-input",
                                   "--no-cache-dir",
                                   "--disable-pip-version-check",
                                   "--no-warn-script-location",
                                   "--progress-bar",
                                   "off"};
  if (!request.find_links.empty()) {
    args.insert(args.end(), {"--no-index", "--find-links", kFindLinksMount});
  }
  args.insert(args.end(), {"-r", absl::StrCat(kVenvMountpoint, "/", kRequirementsName)});
  return args;
}

// The build's error, from its exit code and the log's telling line.
absl::Status BuildError(const VenvRequest& request, int exit_code, const std::string& line) {
  std::string file = absl::StrCat("--requirements ", request.requirements, ": ");
  std::string detail = line.empty() ? "" : absl::StrCat(": ", line);
  switch (exit_code) {
    case kVenvFailed:
      return absl::FailedPreconditionError(absl::StrCat(file, "python3 -m venv failed", detail));
    case kNoPip:
      return absl::FailedPreconditionError(absl::StrCat(
          file, "the image has no pip (zygo builds venvs with the image's own pip)", detail));
    case kInstallFailed:
      return absl::InvalidArgumentError(absl::StrCat(file, "pip install failed", detail));
    default:
      return absl::InternalError(absl::StrCat(file, "the venv build exited ", exit_code, detail));
  }
}

// Builds the venv in `temp` (mounted rw at /venv) from the staged requirements file.
// The log is outside `temp`: the job could swap a file there for a symlink.
absl::Status BuildIn(const std::string& temp, const std::string& log_path,
                     const RunnableImage& image, const std::string& rootfs,
                     const VenvRequest& request, const SandboxRunner& run) {
  SandboxJob job;
  job.rootfs = rootfs;
  job.argv = {"python3", "-I", "-c", kBuildScript};
  std::vector<std::string> args = PipArguments(request);
  job.argv.insert(job.argv.end(), args.begin(), args.end());
  job.image_env = image.config.env;
  job.mounts = {{temp, kVenvMountpoint, /*read_only=*/false}};
  if (!request.find_links.empty()) job.mounts.push_back({request.find_links, kFindLinksMount});
  job.loosening = request.loosening;
  job.output = log_path;  // never on the terminal of the run that asked for the venv
  absl::StatusOr<int> exit_code = run(job);
  absl::StatusOr<std::string> log = base::sys::ReadFile(log_path);
  std::string line = log.ok() ? BuildFailureLine(*log, "ERROR:") : "";
  if (!exit_code.ok()) {
    return absl::Status(exit_code.status().code(),
                        absl::StrCat("--requirements ", request.requirements, ": the venv build ",
                                     exit_code.status().message(), line.empty() ? "" : ": ", line));
  }
  if (*exit_code != 0) return BuildError(request, *exit_code, line);
  return base::sys::RemoveTree(absl::StrCat(temp, "/", kTempName));
}

// Stages, builds and commits the venv `key` at `final_path`.
absl::Status Build(Store& store, const RunnableImage& image, const std::string& rootfs,
                   const VenvRequest& request, const std::string& requirements,
                   const SandboxRunner& run, const std::string& final_path) {
  std::string temp = store.TempPath("venv");
  ZYGO_RETURN_IF_ERROR(base::sys::MakeDirectory(temp, 0755));
  absl::Status built = [&]() -> absl::Status {
    ZYGO_RETURN_IF_ERROR(WriteWholeFile(absl::StrCat(temp, "/", kRequirementsName), requirements));
    ZYGO_RETURN_IF_ERROR(
        WriteWholeFile(absl::StrCat(temp, "/", kImageName), image.manifest_digest));
    ZYGO_RETURN_IF_ERROR(BuildIn(temp, temp + ".log", image, rootfs, request, run));
    // RENAME_NOREPLACE: a finished venv is never swapped under a run that mounts it.
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) != 0 &&
        errno != EEXIST) {
      return base::ErrnoStatus(errno, absl::StrCat("rename(", temp, " -> ", final_path, ")"));
    }
    return absl::OkStatus();
  }();
  base::sys::RemoveTree(temp).IgnoreError();  // gone after a successful rename; else a leftover
  base::sys::RemoveTree(temp + ".log").IgnoreError();
  return built;
}

}  // namespace

std::string VenvKey(absl::string_view manifest_digest, absl::string_view requirements,
                    absl::string_view system_key) {
  if (system_key.empty()) {
    return Sha256Digest(absl::StrCat("zygo-venv-v1\n", manifest_digest, "\n", requirements));
  }
  return Sha256Digest(
      absl::StrCat("zygo-venv-v1+system\n", manifest_digest, "\n", system_key, "\n", requirements));
}

absl::StatusOr<Venv> EnsureVenv(Store& store, const RunnableImage& image, const std::string& rootfs,
                                const VenvRequest& request, const SandboxRunner& run) {
  absl::StatusOr<std::string> requirements = base::sys::ReadFile(request.requirements);
  if (!requirements.ok()) {
    return absl::Status(requirements.status().code(),
                        absl::StrCat("--requirements: ", requirements.status().message()));
  }
  VenvRequest resolved = request;
  if (!request.find_links.empty()) {
    // A mount source must be absolute; realpath also settles any symlink now.
    char real[PATH_MAX];
    if (::realpath(request.find_links.c_str(), real) == nullptr || !IsDirectory(real)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--find-links ", request.find_links, ": not a directory"));
    }
    resolved.find_links = real;
  }
  ZYGO_RETURN_IF_ERROR(EnsureMountpoint(rootfs));
  Venv venv;
  venv.key = VenvKey(image.manifest_digest, *requirements, request.system_key);
  std::string hex = DigestHex(venv.key);
  std::string venvs = store.root() + "/venvs";
  venv.path = absl::StrCat(venvs, "/sha256/", hex);
  if (IsDirectory(venv.path)) return venv;
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockEntry(venvs, hex));
  if (IsDirectory(venv.path)) return venv;  // another run built it meanwhile
  auto start = std::chrono::steady_clock::now();
  ZYGO_RETURN_IF_ERROR(Build(store, image, rootfs, resolved, *requirements, run, venv.path));
  venv.built = true;
  venv.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return venv;
}

std::vector<std::string> VenvEnvironment(const std::vector<std::string>& image_env) {
  std::string path = kDefaultPath;
  for (const std::string& entry : image_env) {
    if (absl::StartsWith(entry, "PATH=")) path = entry.substr(5);
  }
  return {absl::StrCat("VIRTUAL_ENV=", kVenvMountpoint),
          absl::StrCat("PATH=", kVenvMountpoint, "/bin:", path)};
}

absl::StatusOr<int64_t> PruneVenvs(const Store& store,
                                   const std::set<std::string>& live_manifests) {
  return PruneOwnedEntries(store.root() + "/venvs", kImageName, live_manifests);
}

}  // namespace zygo::images
