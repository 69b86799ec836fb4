// The system layer, as named steps: key and lock, check the image's tools and sources,
// fetch with apt in a networked sandbox, unpack each .deb in a sandbox without network,
// lay the files over a hard-linked copy of the base root, commit.
#include "images/system_layer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/openat2.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/unique_fd.h"
#include "images/apt_sources.h"
#include "images/digest.h"
#include "images/internal/build_log.h"
#include "images/internal/keyed_entries.h"
#include "images/link_tree.h"
#include "images/tree_overlay.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr char kImageName[] = "zygo-image";
constexpr char kPackagesName[] = "packages";
constexpr char kRootName[] = "root";
// The job's one writable directory. /tmp exists in every store root (the store adds it).
constexpr char kJobDir[] = "/tmp";
constexpr char kErrorPrefix[] = "system packages: ";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::Status Failure(absl::StatusCode code, absl::string_view what) {
  return absl::Status(code, absl::StrCat(kErrorPrefix, what));
}

// Whether `tool` is on the image's PATH inside the root `root` (any kind of entry: a
// dangling link fails later, when the job runs it, with its own error). The image's links
// are resolved inside its root, never on the host.
bool HasTool(int root, const std::vector<std::string>& image_env, absl::string_view tool) {
  std::string path = kDefaultPath;
  for (const std::string& entry : image_env) {
    if (absl::StartsWith(entry, "PATH=")) path = entry.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (!absl::StartsWith(dir, "/")) continue;
    const std::string in_root = absl::StrCat(".", dir, "/", tool);
    int fd = base::sys::RawOpenat2(root, in_root.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
  }
  return false;
}

// Step 1: the image can do it, and the hosts its sources need.
absl::StatusOr<std::vector<std::string>> CheckImage(const RunnableImage& image,
                                                    const std::string& rootfs) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd root, base::sys::OpenDirectory(rootfs));
  for (const char* tool : {"apt-get", "dpkg-deb"}) {
    if (!HasTool(root.get(), image.config.env, tool)) {
      return Failure(absl::StatusCode::kFailedPrecondition,
                     absl::StrCat("the image has no ", tool,
                                  " (zygo installs them with the image's own apt)"));
    }
  }
  absl::StatusOr<std::vector<AptSource>> sources = ReadAptSources(rootfs);
  if (!sources.ok()) return Failure(sources.status().code(), sources.status().message());
  if (sources->empty()) {
    return Failure(
        absl::StatusCode::kFailedPrecondition,
        absl::StrCat("the image has no apt sources (", kAptSourceList, ", ", kAptSourceParts, ")"));
  }
  absl::StatusOr<std::vector<std::string>> hosts = SourceHosts(*sources);
  if (!hosts.ok()) return Failure(hosts.status().code(), hosts.status().message());
  return hosts;
}

// The build's network gives the job its own /etc/resolv.conf, bound over the root's
// file, which must therefore exist; image layers often lack it (docker writes its own
// at run time). An empty one is added to the store's copy of the root, as the venv's
// /venv is: the store owns it. Never through a symlink of the image.
absl::Status EnsureResolvConf(const std::string& rootfs) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd root, base::sys::OpenDirectory(rootfs));
  if (::mkdirat(root.get(), "etc", 0755) != 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", rootfs, "/etc)"));
  }
  int etc = ::openat(root.get(), "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (etc < 0) return base::ErrnoStatus(errno, absl::StrCat("open(", rootfs, "/etc)"));
  UniqueFd etc_fd(etc);
  int fd = ::openat(etc_fd.get(), "resolv.conf",
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("create(", rootfs, "/etc/resolv.conf)"));
  }
  if (fd >= 0) ::close(fd);
  return absl::OkStatus();
}

// The scratch space of one build: the job's /tmp, and the log beside it (outside the
// mount: the job could swap a file there for a symlink).
struct Work {
  std::string dir;
  std::string log;
  std::string archives() const { return dir + "/archives"; }
  std::string out() const { return dir + "/out"; }
};

absl::Status MakeWork(const Work& work) {
  for (const std::string& dir : {work.dir, work.dir + "/lists", work.dir + "/lists/partial",
                                 work.archives(), work.archives() + "/partial", work.out()}) {
    ZYGO_RETURN_IF_ERROR(base::sys::MakeDirectory(dir, 0755));
  }
  return absl::OkStatus();
}

// Runs one job of the build; `step` names it in errors.
absl::Status RunStep(const RunnableImage& image, const std::string& rootfs, const Work& work,
                     const std::string& step, std::vector<std::string> argv,
                     std::vector<std::string> allow, const SandboxRunner& run) {
  SandboxJob job;
  job.rootfs = rootfs;
  job.argv = std::move(argv);
  job.image_env = image.config.env;
  job.env = {"LC_ALL=C"};  // apt's "E:" lines untranslated, for the error
  job.mounts = {{work.dir, kJobDir, /*read_only=*/false}};
  job.output = work.log;
  job.allow = std::move(allow);
  absl::StatusOr<int> exit_code = run(job);
  absl::StatusOr<std::string> log = base::sys::ReadFile(work.log);
  std::string line = log.ok() ? BuildFailureLine(*log, "E:") : "";
  std::string detail = line.empty() ? "" : absl::StrCat(": ", line);
  if (!exit_code.ok()) {
    return Failure(exit_code.status().code(),
                   absl::StrCat(step, ": ", exit_code.status().message(), detail));
  }
  if (*exit_code != 0) {
    return Failure(absl::StatusCode::kFailedPrecondition,
                   absl::StrCat(step, " failed (exit ", *exit_code, ")", detail));
  }
  return absl::OkStatus();
}

// The .deb files apt fetched: regular files of archives/, sorted. O_NOFOLLOW: the job
// could have made archives/ a link to a host directory.
absl::StatusOr<std::vector<std::string>> Downloaded(const Work& work) {
  UniqueFd fd(::open(work.archives().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    return base::ErrnoStatus(errno, absl::StrCat("open(", work.archives(), ", O_NOFOLLOW)"));
  }
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr)
    return base::ErrnoStatus(errno, absl::StrCat("fdopendir(", work.archives(), ")"));
  fd.Release();  // the DIR owns it now
  std::vector<std::string> debs;
  while (struct dirent* entry = ::readdir(dir)) {
    struct stat st;
    if (absl::EndsWith(entry->d_name, ".deb") &&
        ::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
      debs.emplace_back(entry->d_name);
    }
  }
  ::closedir(dir);
  std::sort(debs.begin(), debs.end());
  return debs;
}

// Step 2: fetch, with the network reaching `hosts` only, then unpack without any.
absl::StatusOr<int64_t> FetchAndUnpack(const RunnableImage& image, const SystemRequest& request,
                                       const std::vector<std::string>& hosts, const Work& work,
                                       const SandboxRunner& run) {
  auto apt = [](std::vector<std::string> command) {
    std::vector<std::string> argv = {"apt-get"};
    std::vector<std::string> options = AptGetOptions();
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  };
  const std::string& rootfs = request.base_rootfs;
  ZYGO_RETURN_IF_ERROR(RunStep(image, rootfs, work, "apt-get update", apt({"update"}), hosts, run));
  std::vector<std::string> install = {"install", "-y", "--download-only",
                                      "--no-install-recommends"};
  install.insert(install.end(), request.packages.begin(), request.packages.end());
  ZYGO_RETURN_IF_ERROR(RunStep(image, rootfs, work, "apt-get install", apt(install), hosts, run));
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> debs, Downloaded(work));
  for (const std::string& deb : debs) {
    const std::string in_job = absl::StrCat(kJobDir, "/archives/", deb);
    ZYGO_RETURN_IF_ERROR(RunStep(image, rootfs, work, absl::StrCat("dpkg-deb -x ", deb),
                                 {"dpkg-deb", "-x", in_job, absl::StrCat(kJobDir, "/out")}, {},
                                 run));
  }
  return static_cast<int64_t>(debs.size());
}

absl::Status WriteWholeFile(const std::string& path, absl::string_view content) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenWriteOnly(path, base::sys::IfMissing::kCreate));
  return base::sys::WriteAll(fd, content.data(), content.size(), path);
}

// Step 3: the derived root in `entry` (a temp dir), then renamed into place. A finished
// layer is never replaced (RENAME_NOREPLACE): a run may have it mounted.
absl::StatusOr<OverlayStats> Assemble(const RunnableImage& image, const SystemRequest& request,
                                      const Work& work, const std::string& entry,
                                      const std::string& final_path) {
  ZYGO_RETURN_IF_ERROR(base::sys::MakeDirectory(entry, 0755));
  const std::string root = absl::StrCat(entry, "/", kRootName);
  ZYGO_RETURN_IF_ERROR(LinkTree(request.base_rootfs, root).status());
  absl::StatusOr<OverlayStats> laid = OverlayTree(work.out(), root);
  if (!laid.ok()) return Failure(laid.status().code(), laid.status().message());
  ZYGO_RETURN_IF_ERROR(
      WriteWholeFile(absl::StrCat(entry, "/", kImageName), image.manifest_digest + "\n"));
  ZYGO_RETURN_IF_ERROR(WriteWholeFile(absl::StrCat(entry, "/", kPackagesName),
                                      absl::StrCat(absl::StrJoin(request.packages, "\n"), "\n")));
  if (::renameat2(AT_FDCWD, entry.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) != 0 &&
      errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("rename(", entry, " -> ", final_path, ")"));
  }
  return laid;
}

absl::StatusOr<SystemLayer> Build(Store& store, const RunnableImage& image,
                                  const SystemRequest& request, const SandboxRunner& run,
                                  SystemLayer layer, const std::string& final_path) {
  auto start = std::chrono::steady_clock::now();
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> hosts, CheckImage(image, request.base_rootfs));
  Work work{store.TempPath("system_work"), ""};
  work.log = work.dir + ".log";
  const std::string entry = store.TempPath("system");
  absl::StatusOr<OverlayStats> laid = [&]() -> absl::StatusOr<OverlayStats> {
    if (absl::Status mountpoint = EnsureResolvConf(request.base_rootfs); !mountpoint.ok()) {
      return Failure(mountpoint.code(), mountpoint.message());
    }
    ZYGO_RETURN_IF_ERROR(MakeWork(work));
    ZYGO_ASSIGN_OR_RETURN(layer.debs, FetchAndUnpack(image, request, hosts, work, run));
    return Assemble(image, request, work, entry, final_path);
  }();
  // Gone after a successful rename; otherwise what is left of a failed build.
  base::sys::RemoveTree(work.dir).IgnoreError();
  base::sys::RemoveTree(work.log).IgnoreError();
  base::sys::RemoveTree(entry).IgnoreError();
  if (!laid.ok()) return laid.status();
  layer.built = true;
  layer.files = laid->files;
  layer.bytes = laid->bytes;
  layer.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return layer;
}

}  // namespace

std::string SystemLayerKey(absl::string_view base_key, const std::vector<std::string>& packages) {
  return Sha256Digest(
      absl::StrCat("zygo-system-v1\n", base_key, "\n", absl::StrJoin(packages, "\n"), "\n"));
}

std::vector<std::string> AptGetOptions() {
  const std::string dir = kJobDir;
  return {
      "-q",
      // The root is read-only: lists, downloads and locks go to the job's directory, and
      // apt's binary caches are not written at all.
      "-o",
      absl::StrCat("Dir::State::Lists=", dir, "/lists"),
      "-o",
      absl::StrCat("Dir::Cache::Archives=", dir, "/archives"),
      "-o",
      "Dir::Cache::pkgcache=",
      "-o",
      "Dir::Cache::srcpkgcache=",
      "-o",
      "Debug::NoLocking=1",
      // The sandbox's root holds no capability to switch to _apt, whose uid a user
      // namespace does not map anyway; the sandbox is the isolation.
      "-o",
      "APT::Sandbox::User=root",
      // The sources the network allowlist was made from, whatever the image's apt.conf says.
      "-o",
      absl::StrCat("Dir::Etc::SourceList=", kAptSourceList),
      "-o",
      absl::StrCat("Dir::Etc::SourceParts=", kAptSourceParts),
      // apt-get update exits 0 when an index failed to download (apt 2.1.16+ knows this).
      "-o",
      "APT::Update::Error-Mode=any",
      "-o",
      "Acquire::Languages=none",
      "-o",
      "Dpkg::Use-Pty=0",
  };
}

absl::StatusOr<SystemLayer> EnsureSystemLayer(Store& store, const RunnableImage& image,
                                              const SystemRequest& request,
                                              const SandboxRunner& run) {
  if (request.packages.empty()) return absl::InvalidArgumentError("no system packages");
  SystemLayer layer;
  layer.key = SystemLayerKey(request.base_key, request.packages);
  const std::string hex = DigestHex(layer.key);
  const std::string kind_dir = store.root() + "/system";
  const std::string final_path = absl::StrCat(kind_dir, "/sha256/", hex);
  layer.rootfs = absl::StrCat(final_path, "/", kRootName);
  if (IsDirectory(final_path)) return layer;
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockEntry(kind_dir, hex));
  if (IsDirectory(final_path)) return layer;  // another run built it meanwhile
  return Build(store, image, request, run, std::move(layer), final_path);
}

absl::StatusOr<int64_t> PruneSystemLayers(const Store& store,
                                          const std::set<std::string>& live_manifests) {
  return PruneOwnedEntries(store.root() + "/system", kImageName, live_manifests);
}

}  // namespace zygo::images
