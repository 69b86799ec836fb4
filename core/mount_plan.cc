#include "core/mount_plan.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::core {
namespace {

constexpr unsigned long long kReadOnlyAttrs =
    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
constexpr unsigned long long kWritableAttrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

// What the built-in `host` image takes from the host, read-only. Missing entries are
// skipped; symlinks (merged /usr) are recreated as symlinks.
constexpr const char* kHostTopLevel[] = {"/usr",   "/bin",   "/sbin",  "/lib",
                                         "/lib32", "/lib64", "/libx32"};
constexpr const char* kHostEtc[] = {
    "/etc/passwd",       "/etc/group",      "/etc/hosts",           "/etc/nsswitch.conf",
    "/etc/ld.so.cache",  "/etc/ld.so.conf", "/etc/ld.so.conf.d",    "/etc/localtime",
    "/etc/alternatives", "/etc/ssl",        "/etc/ca-certificates", "/etc/mime.types",
};

constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

std::string Staged(absl::string_view sandbox_path) { return absl::StrCat(kNewRoot, sandbox_path); }
std::string OnHost(absl::string_view host_path) { return absl::StrCat(kOldRoot, host_path); }

// Accumulates ops, creating mountpoints on the tmpfs root as needed.
class PlanWriter {
 public:
  explicit PlanWriter(MountPlan* plan) : plan_(plan) {}

  void Mkdir(absl::string_view path) {
    if (!created_.insert(std::string(path)).second) return;
    plan_->ops.push_back({MountOpKind::kMkdir, "", Staged(path), std::string(path)});
  }
  void Touch(absl::string_view path) {
    plan_->ops.push_back({MountOpKind::kTouch, "", Staged(path), std::string(path)});
  }
  void Symlink(absl::string_view path, absl::string_view link_target) {
    plan_->ops.push_back(
        {MountOpKind::kSymlink, std::string(link_target), Staged(path), std::string(path)});
  }
  // A host directory bound read-only: mountpoints inside it must already exist there.
  void BindHostDir(absl::string_view path) {
    Mkdir(path);
    Bind(OnHost(path), path, kReadOnlyAttrs);
    host_dirs_.insert(std::string(path));
  }
  bool is_host_dir(absl::string_view path) const { return host_dirs_.count(std::string(path)) > 0; }

  void Bind(std::string source, absl::string_view path, unsigned long long attrs,
            bool recursive = true) {
    MountOp op{MountOpKind::kBind, std::move(source), Staged(path), std::string(path)};
    op.attr_set = attrs;
    op.recursive = recursive;
    plan_->ops.push_back(std::move(op));
  }
  // A host path the caller chose, bound from a descriptor the child checks (kBindChecked).
  void BindChecked(std::string resolved, const struct stat& st, absl::string_view path,
                   unsigned long long attrs) {
    MountOp op{MountOpKind::kBindChecked, OnHost(resolved), Staged(path), std::string(path)};
    op.attr_set = attrs;
    op.source_dev = st.st_dev;
    op.source_ino = st.st_ino;
    op.source_is_dir = S_ISDIR(st.st_mode);
    plan_->ops.push_back(std::move(op));
  }
  void Tmpfs(absl::string_view path, std::string data, unsigned long flags) {
    MountOp op{MountOpKind::kTmpfs, "tmpfs", Staged(path), std::string(path), std::move(data)};
    op.flags = flags;
    plan_->ops.push_back(std::move(op));
  }
  void Proc(absl::string_view path) {
    MountOp op{MountOpKind::kProc, "proc", Staged(path), std::string(path)};
    op.flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    plan_->ops.push_back(std::move(op));
  }
  void ReadOnly(absl::string_view path, bool recursive) {
    MountOp op{MountOpKind::kReadOnly, "", Staged(path), std::string(path)};
    op.attr_set = kReadOnlyAttrs;
    op.recursive = recursive;
    plan_->ops.push_back(std::move(op));
  }
  // A file with `content` in the staging tmpfs, bound read-only at `path`: nothing is
  // written on the host, and the image (a directory one included) is never changed.
  void WriteFile(absl::string_view staging_name, absl::string_view path, std::string content) {
    MountOp op{MountOpKind::kWriteFile, "", std::string(staging_name), std::string(path),
               std::move(content)};
    plan_->ops.push_back(std::move(op));
    Bind(std::string(staging_name), path, kReadOnlyAttrs, /*recursive=*/false);
  }
  bool created(absl::string_view path) const { return created_.count(std::string(path)) > 0; }

 private:
  MountPlan* plan_;
  std::set<std::string> created_;
  std::set<std::string> host_dirs_;
};

// Where the image's root comes from, and how to check a mountpoint exists in it.
struct ImageRoot {
  bool is_host = false;
  std::string dir;  // dir:PATH, resolved
  struct stat st = {};
};

absl::StatusOr<ImageRoot> ResolveImage(const Spec& spec) {
  if (spec.root.host()) return ImageRoot{true, ""};
  const std::string& dir = spec.root.directory;
  const std::string name = spec.ImageLabel();
  if (dir.empty() || dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("image '", name, "': dir: needs an absolute path"));
  }
  char resolved[PATH_MAX];
  if (realpath(dir.c_str(), resolved) == nullptr) {
    return base::ErrnoStatus(errno, absl::StrCat("image '", name, "': realpath(", dir, ")"));
  }
  struct stat st;
  if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("image '", name, "': not a directory"));
  }
  if (std::string(resolved) == "/") {
    return absl::InvalidArgumentError("image 'dir:/': use the built-in 'host' image instead");
  }
  return ImageRoot{false, resolved, st};
}

void AddHostImage(PlanWriter& w) {
  w.Tmpfs("", "mode=755,size=1m", MS_NOSUID | MS_NODEV);
  for (const char* path : kHostTopLevel) {
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlink(path, target, sizeof(target) - 1);
      if (n <= 0) continue;
      w.Symlink(path, std::string(target, n));
    } else if (S_ISDIR(st.st_mode)) {
      w.BindHostDir(path);
    }
  }
  w.Mkdir("/etc");
  for (const char* path : kHostEtc) {
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlink(path, target, sizeof(target) - 1);
      if (n > 0) w.Symlink(path, std::string(target, n));
    } else if (S_ISDIR(st.st_mode)) {
      w.BindHostDir(path);
    } else if (S_ISREG(st.st_mode)) {
      w.Touch(path);
      w.Bind(OnHost(path), path, kReadOnlyAttrs, /*recursive=*/false);
    }
  }
}

// On the tmpfs root, creates `path` and its parents; in a directory image, requires it
// to exist already (Zygo never writes into a user's image directory).
absl::Status EnsureMountpoint(PlanWriter& w, const ImageRoot& root, absl::string_view path,
                              bool is_dir) {
  if (!root.is_host) {
    std::string in_image = absl::StrCat(root.dir, path);
    struct stat st;
    if (lstat(in_image.c_str(), &st) != 0 || S_ISDIR(st.st_mode) != is_dir) {
      return absl::FailedPreconditionError(absl::StrCat("mountpoint ", path, " must exist as a ",
                                                        is_dir ? "directory" : "file",
                                                        " in the image (", in_image, ")"));
    }
    return absl::OkStatus();
  }
  // Inside a read-only host directory nothing can be created: the mountpoint must
  // already be there on the host, as the right kind of file.
  size_t slash = 0;
  while ((slash = path.find('/', slash + 1)) != absl::string_view::npos) {
    absl::string_view parent = path.substr(0, slash);
    if (!w.is_host_dir(parent)) continue;
    struct stat st;
    std::string host_path(path);
    if (stat(host_path.c_str(), &st) != 0 || S_ISDIR(st.st_mode) != is_dir) {
      return absl::FailedPreconditionError(
          absl::StrCat("mountpoint ", path, " lies inside the read-only host directory ", parent,
                       " and does not exist there as a ", is_dir ? "directory" : "file"));
    }
    return absl::OkStatus();
  }
  // Elsewhere on the tmpfs root: make the parents, then the mountpoint.
  slash = 0;
  while ((slash = path.find('/', slash + 1)) != absl::string_view::npos) {
    w.Mkdir(path.substr(0, slash));
  }
  if (is_dir) {
    w.Mkdir(path);
  } else {
    w.Touch(path);
  }
  return absl::OkStatus();
}

void AddProc(PlanWriter& w) {
  w.Proc("/proc");
  for (const char* path : kMaskedProcPaths) {
    struct stat st;
    if (stat(path, &st) != 0) continue;  // same kernel inside and out
    if (S_ISDIR(st.st_mode)) {
      w.Tmpfs(path, "mode=555,size=4k", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
    } else {
      // Not nodev: the mask is the /dev/null device itself.
      w.Bind(Staged("/dev/null"), path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
             /*recursive=*/false);
    }
  }
  for (const char* path : kReadOnlyProcPaths) {
    struct stat st;
    if (stat(path, &st) != 0) continue;
    w.Bind(Staged(path), path, kReadOnlyAttrs | MOUNT_ATTR_NOEXEC);
  }
}

void AddDev(PlanWriter& w, int64_t shm_bytes) {
  w.Tmpfs("/dev", "mode=755,size=64k", MS_NOSUID | MS_NOEXEC);
  for (const char* name : kDevices) {
    std::string path = absl::StrCat("/dev/", name);
    w.Touch(path);
    // Device nodes need dev; nosuid and noexec still apply.
    w.Bind(OnHost(path), path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, /*recursive=*/false);
  }
  w.Symlink("/dev/fd", "/proc/self/fd");
  w.Symlink("/dev/stdin", "/proc/self/fd/0");
  w.Symlink("/dev/stdout", "/proc/self/fd/1");
  w.Symlink("/dev/stderr", "/proc/self/fd/2");
  w.Mkdir("/dev/shm");
  w.Tmpfs("/dev/shm", absl::StrCat("mode=1777,size=", shm_bytes), MS_NOSUID | MS_NODEV);
}

absl::Status CheckSandboxPath(absl::string_view path, absl::string_view what) {
  if (path.empty() || path[0] != '/' || absl::StrContains(path, "/../") ||
      absl::EndsWith(path, "/..") || absl::StrContains(path, "//") ||
      absl::StrContains(path, "/./") || (path.size() > 1 && path.back() == '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' must be a clean absolute path"));
  }
  if (path == "/" || path == "/proc" || absl::StartsWith(path, "/proc/") || path == "/dev" ||
      absl::StartsWith(path, "/dev/")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' may not be /, or lie in /proc or /dev"));
  }
  return absl::OkStatus();
}

absl::Status AddVolumes(PlanWriter& w, const ImageRoot& root, const Spec& spec, MountPlan* plan) {
  for (const VolumeSpec& volume : spec.volumes) {
    ZYGO_RETURN_IF_ERROR(CheckSandboxPath(volume.destination, "volume destination"));
    char resolved[PATH_MAX];
    if (volume.source.empty() || volume.source[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("volume source '", volume.source, "' must be an absolute host path"));
    }
    if (realpath(volume.source.c_str(), resolved) == nullptr) {
      return base::ErrnoStatus(errno, absl::StrCat("volume source ", volume.source));
    }
    if (volume.must_resolve_to_itself && volume.source != resolved) {
      return absl::FailedPreconditionError(
          absl::StrCat(volume.name.empty() ? "volume source" : volume.name, " ", volume.source,
                       " now resolves to ", resolved,
                       " (a part of the path was replaced by a symlink since it was checked)"));
    }
    struct stat st;
    if (stat(resolved, &st) != 0) {
      return base::ErrnoStatus(errno, absl::StrCat("stat(", resolved, ")"));
    }
    bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("volume source ", volume.source, " must be a directory or a regular file"));
    }
    ZYGO_RETURN_IF_ERROR(EnsureMountpoint(w, root, volume.destination, is_dir));
    w.BindChecked(resolved, st, volume.destination,
                  volume.read_only ? kReadOnlyAttrs : kWritableAttrs);
    if (!volume.read_only) plan->writable_paths.push_back(volume.destination);
  }
  return absl::OkStatus();
}

// --net egress and --net full: the sandbox asks Zygo's resolver on its own loopback
// (zygo-net serves it; egress answers allowlisted names only). The host's own file would
// not do: its nameserver is often on the host's loopback or a private address, which the
// sandbox's namespace and firewall cannot reach. Other modes keep the image's own file.
absl::Status AddResolvConf(PlanWriter& w, const ImageRoot& root, const Spec& spec) {
  if (spec.net != NetMode::kEgress && spec.net != NetMode::kFull) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(EnsureMountpoint(w, root, "/etc/resolv.conf", /*is_dir=*/false));
  w.WriteFile("/zygo-resolv.conf", "/etc/resolv.conf", "nameserver 127.0.0.53\noptions edns0\n");
  return absl::OkStatus();
}

}  // namespace

bool MountOp::read_only() const {
  return (attr_set & MOUNT_ATTR_RDONLY) != 0 || (flags & MS_RDONLY) != 0;
}

absl::StatusOr<MountPlan> BuildMountPlan(const Spec& spec) {
  ZYGO_ASSIGN_OR_RETURN(ImageRoot root, ResolveImage(spec));
  MountPlan plan;
  PlanWriter w(&plan);
  if (root.is_host) {
    AddHostImage(w);
  } else {
    w.BindChecked(root.dir, root.st, "", kReadOnlyAttrs);
  }
  ZYGO_RETURN_IF_ERROR(EnsureMountpoint(w, root, "/dev", true));
  AddDev(w, spec.tmp_size_bytes);
  ZYGO_RETURN_IF_ERROR(EnsureMountpoint(w, root, "/proc", true));
  AddProc(w);
  ZYGO_RETURN_IF_ERROR(EnsureMountpoint(w, root, "/tmp", true));
  w.Tmpfs("/tmp", absl::StrCat("mode=1777,size=", spec.tmp_size_bytes), MS_NOSUID | MS_NODEV);
  plan.writable_paths = {"/tmp", "/dev/shm"};
  ZYGO_RETURN_IF_ERROR(AddResolvConf(w, root, spec));
  ZYGO_RETURN_IF_ERROR(AddVolumes(w, root, spec, &plan));
  // Nothing may be created in /dev once it is built; the device binds stay writable.
  w.ReadOnly("/dev", /*recursive=*/false);
  return plan;
}

}  // namespace zygo::core
