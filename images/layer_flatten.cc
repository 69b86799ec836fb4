// Whiteout-aware flattening of unpacked layers into one root (internal/layer_fs.h for the
// *at() helpers). Parent side.
#include "images/layer_flatten.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"
#include "images/internal/layer_fs.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

// Copies layer directories onto one rootfs, top layer last. Every directory on both sides
// is entered with openat2(kResolve) from an fd already known to be a real directory, and
// every final component is created or removed with no-follow calls, so nothing in a
// layer can redirect a write out of `dest`.
class Flattener {
 public:
  explicit Flattener(int dest) : dest_(dest) {}

  absl::Status Layer(int layer) {
    links_.clear();
    return MergeDir(layer, dest_, "");
  }
  absl::Status Finish() { return ApplyDirMeta(dest_, dirs_); }

 private:
  absl::Status MergeDir(int src, int dst, const std::string& rel);
  absl::Status ApplyWhiteouts(int dst, const std::vector<std::string>& names,
                              const std::string& rel);
  absl::Status MergeEntry(int src, int dst, const std::string& name, const std::string& rel);
  absl::Status PlaceFile(int src, int dst, const std::string& name, const struct stat& st,
                         const std::string& rel);
  absl::Status LinkFromCopy(const std::string& copy, int dst, const std::string& name,
                            const std::string& rel, bool* linked);
  absl::Status CopyFile(int src, int dst, const std::string& name, const struct stat& st,
                        const std::string& rel);

  const int dest_;
  DirMetaMap dirs_;
  // Files of the current layer with several names that had to be copied (the link
  // failed): the copy's path in dest, so the other names link to it and stay one file.
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

absl::Status Flattener::MergeDir(int src, int dst, const std::string& rel) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(src, rel.empty() ? "." : rel));
  // Whiteouts hide what the layers below put here, so they go before this layer's own
  // entries, which may re-add a name they removed.
  ZYGO_RETURN_IF_ERROR(ApplyWhiteouts(dst, names, rel));
  for (const std::string& name : names) {
    if (absl::StartsWith(name, kWhiteoutPrefix)) continue;  // markers never reach dest
    std::string child = rel.empty() ? name : absl::StrCat(rel, "/", name);
    ZYGO_RETURN_IF_ERROR(MergeEntry(src, dst, name, child));
  }
  return absl::OkStatus();
}

absl::Status Flattener::ApplyWhiteouts(int dst, const std::vector<std::string>& names,
                                       const std::string& rel) {
  if (std::find(names.begin(), names.end(), kOpaqueMarker) != names.end()) {
    ZYGO_RETURN_IF_ERROR(ClearDir(dst, rel.empty() ? "." : rel));
  }
  for (const std::string& name : names) {
    if (!absl::StartsWith(name, kWhiteoutPrefix) || absl::StartsWith(name, kReservedPrefix)) {
      continue;  // not a whiteout, or the opaque marker / another reserved ".wh..wh." name
    }
    std::string hidden = name.substr(sizeof(kWhiteoutPrefix) - 1);
    if (hidden == "." || hidden == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("refusing whiteout \"", rel, "/", name, "\": names . or .."));
    }
    ZYGO_RETURN_IF_ERROR(
        RemoveTree(dst, hidden, rel.empty() ? hidden : absl::StrCat(rel, "/", hidden)));
  }
  return absl::OkStatus();
}

absl::Status Flattener::MergeEntry(int src, int dst, const std::string& name,
                                   const std::string& rel) {
  struct stat st;
  int err = ErrnoOf([&] { return fstatat(src, name.c_str(), &st, AT_SYMLINK_NOFOLLOW); });
  if (err != 0) return Failed(err, rel, "fstatat");
  ZYGO_ASSIGN_OR_RETURN(bool is_dir, MakeRoom(dst, name, S_ISDIR(st.st_mode), rel));
  if (S_ISDIR(st.st_mode)) {
    if (!is_dir) {  // a new directory, or one replacing a lower layer's non-directory
      err = ErrnoOf([&] { return mkdirat(dst, name.c_str(), 0700); });
      if (err != 0) return Failed(err, rel, "mkdirat");
    }
    ZYGO_RETURN_IF_ERROR(SetOwner(dst, name, st.st_uid, st.st_gid, rel));
    dirs_[rel] = {static_cast<mode_t>(st.st_mode & 07777), st.st_mtim, true};
    ZYGO_ASSIGN_OR_RETURN(UniqueFd sub_src, OpenAt2(src, name, O_RDONLY | O_DIRECTORY, rel));
    ZYGO_ASSIGN_OR_RETURN(UniqueFd sub_dst, OpenAt2(dst, name, O_RDONLY | O_DIRECTORY, rel));
    return MergeDir(sub_src.get(), sub_dst.get(), rel);
  }
  if (S_ISREG(st.st_mode)) return PlaceFile(src, dst, name, st, rel);
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = readlinkat(src, name.c_str(), target.data(), target.size());
    if (n < 0) return Failed(errno, rel, "readlinkat");
    target.resize(static_cast<size_t>(n));
    err = ErrnoOf([&] { return symlinkat(target.c_str(), dst, name.c_str()); });
    if (err != 0) return Failed(err, rel, absl::StrCat("symlinkat(", target, ")"));
  } else {  // device nodes (only in a root unpack), FIFOs, sockets
    err = ErrnoOf([&] { return mknodat(dst, name.c_str(), st.st_mode, st.st_rdev); });
    if (err != 0) return Failed(err, rel, "mknodat");
    // Just created by us, in a directory only we write: fchmodat cannot be redirected.
    err = ErrnoOf([&] { return fchmodat(dst, name.c_str(), st.st_mode & 07777, 0); });
    if (err != 0) return Failed(err, rel, "fchmodat");
  }
  ZYGO_RETURN_IF_ERROR(SetOwner(dst, name, st.st_uid, st.st_gid, rel));
  return SetTimes(dst, name, st.st_mtim, rel);
}

// Hardlinks the layer's file into dest: the rootfs is mounted read-only in the sandbox,
// so sharing the inode with the store is safe and costs nothing. A copy when the link
// fails: another filesystem (EXDEV), a policy such as protected_hardlinks (EPERM), or
// too many links (EMLINK).
absl::Status Flattener::PlaceFile(int src, int dst, const std::string& name, const struct stat& st,
                                  const std::string& rel) {
  const auto key = std::make_pair(st.st_dev, st.st_ino);
  if (auto it = links_.find(key); it != links_.end()) {
    bool linked = false;
    ZYGO_RETURN_IF_ERROR(LinkFromCopy(it->second, dst, name, rel, &linked));
    if (linked) return absl::OkStatus();
  }
  int err = ErrnoOf([&] { return linkat(src, name.c_str(), dst, name.c_str(), 0); });
  if (err == 0) return absl::OkStatus();
  if (err != EXDEV && err != EPERM && err != EMLINK) return Failed(err, rel, "linkat");
  ZYGO_RETURN_IF_ERROR(CopyFile(src, dst, name, st, rel));
  if (st.st_nlink > 1) links_.emplace(key, rel);
  return absl::OkStatus();
}

absl::Status Flattener::LinkFromCopy(const std::string& copy, int dst, const std::string& name,
                                     const std::string& rel, bool* linked) {
  std::vector<std::string> parts = absl::StrSplit(copy, '/');
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirBelow(dest_, parts, parts.size() - 1, false, rel));
  int err = ErrnoOf([&] { return linkat(dir.get(), parts.back().c_str(), dst, name.c_str(), 0); });
  *linked = err == 0;
  if (err != 0 && err != EMLINK) return Failed(err, rel, absl::StrCat("linkat(", copy, ")"));
  return absl::OkStatus();
}

absl::Status Flattener::CopyFile(int src, int dst, const std::string& name, const struct stat& st,
                                 const std::string& rel) {
  int in_fd =
      FdOrErrno([&] { return openat(src, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); });
  if (in_fd < 0) return Failed(-in_fd, rel, "openat(O_RDONLY|O_NOFOLLOW)");
  UniqueFd in(in_fd);
  int out_fd = FdOrErrno([&] {
    return openat(dst, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  });
  if (out_fd < 0) return Failed(-out_fd, rel, "openat(O_CREAT|O_EXCL|O_NOFOLLOW)");
  UniqueFd out(out_fd);
  // copy_file_range reflinks where the filesystem can; across filesystems before Linux
  // 5.19, or on ones that lack it, it fails and read/write carries on from the offsets.
  bool use_range = true;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = use_range ? copy_file_range(in.get(), nullptr, out.get(), nullptr, 1 << 30, 0)
                          : read(in.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && use_range &&
        (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
      use_range = false;
      continue;
    }
    if (n < 0) return Failed(errno, rel, use_range ? "copy_file_range" : "read");
    if (n == 0) break;
    for (ssize_t done = 0; !use_range && done < n;) {
      ssize_t w = write(out.get(), buffer + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Failed(errno, rel, "write");
      done += w;
    }
  }
  ZYGO_RETURN_IF_ERROR(SetOwner(out.get(), "", st.st_uid, st.st_gid, rel));
  int err = ErrnoOf([&] { return fchmod(out.get(), st.st_mode & 07777); });
  if (err != 0) return Failed(err, rel, "fchmod");
  return SetTimes(out.get(), "", st.st_mtim, rel);
}

}  // namespace

absl::Status FlattenLayers(const std::vector<std::string>& layer_dirs,
                           const std::string& dest_dir) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dest, base::sys::OpenDirectory(dest_dir));
  Flattener flattener(dest.get());
  for (const std::string& layer_dir : layer_dirs) {
    ZYGO_ASSIGN_OR_RETURN(UniqueFd layer, base::sys::OpenDirectory(layer_dir));
    absl::Status status = flattener.Layer(layer.get());
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("flattening ", layer_dir, ": ", status.message()));
    }
  }
  return flattener.Finish();
}

}  // namespace zygo::images
