// Safe layer unpacking (libarchive read side, every file created through openat2-scoped
// directory fds) and whiteout-aware flattening of unpacked layers. Parent side.
#include "images/layer_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/openat2.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/unique_fd.h"
#include "images/digest.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

// Every lookup below a layer or rootfs root: "/" and ".." stay inside the root, and no
// symlink is followed at all, so an entry can never be written through a symlinked
// directory (it is refused, not redirected). Nothing is ever mounted inside these trees.
constexpr uint64_t kResolve =
    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
constexpr char kWhiteoutPrefix[] = ".wh.";
constexpr char kOpaqueMarker[] = ".wh..wh..opq";
constexpr char kReservedPrefix[] = ".wh..wh.";

// ---- Small *at() helpers: EINTR retried, errno returned (0 on success). ----

template <typename Call>
int ErrnoOf(Call call) {
  for (;;) {
    if (call() >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

// An fd from `call`, or -errno.
template <typename Call>
int FdOrErrno(Call call) {
  for (;;) {
    int fd = call();
    if (fd >= 0) return fd;
    if (errno != EINTR) return -errno;
  }
}

absl::Status Failed(int err, absl::string_view entry, absl::string_view call) {
  return base::ErrnoStatus(err, absl::StrCat("\"", entry, "\": ", call));
}

absl::StatusOr<UniqueFd> OpenAt2(int dirfd, const std::string& path, uint64_t flags,
                                 absl::string_view entry) {
  int fd = base::sys::RawOpenat2(dirfd, path.c_str(), flags | O_CLOEXEC, 0, kResolve);
  if (fd == -ENOSYS) {
    return absl::FailedPreconditionError(
        "openat2 is unavailable (Linux 5.6+ is needed to unpack layers safely)");
  }
  if (fd < 0) return Failed(-fd, entry, absl::StrCat("openat2(", path, ", RESOLVE_IN_ROOT)"));
  return UniqueFd(fd);
}

// Lists a directory (opened O_RDONLY), without "." and "..", sorted.
absl::StatusOr<std::vector<std::string>> ListDir(int dirfd, absl::string_view what) {
  int fd = FdOrErrno([&] { return fcntl(dirfd, F_DUPFD_CLOEXEC, 0); });
  if (fd < 0) return Failed(-fd, what, "fcntl(F_DUPFD_CLOEXEC)");
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    close(fd);
    return Failed(err, what, "fdopendir");
  }
  rewinddir(dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* de = readdir(dir)) {
    absl::string_view name = de->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Failed(err, what, "readdir");
  std::sort(names.begin(), names.end());
  return names;
}

// Removes the entry `name` of `dirfd` and all below it; errors name `what`, the entry.
absl::Status RemoveTree(int dirfd, const std::string& name, absl::string_view what) {
  absl::Status removed = base::sys::RemoveTreeAt(dirfd, name);
  if (removed.ok()) return removed;
  return absl::Status(removed.code(), absl::StrCat(what, ": ", removed.message()));
}

// Removes everything inside the directory `dirfd`, never following a symlink.
absl::Status ClearDir(int dirfd, absl::string_view what) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dirfd, what));
  for (const std::string& name : names) ZYGO_RETURN_IF_ERROR(RemoveTree(dirfd, name, what));
  return absl::OkStatus();
}

// Makes room for a new entry `name` in `dirfd` the way a later tar entry replaces an
// earlier one. Returns true when a directory is there and `keep_dir` asked to keep it
// (a directory entry over a directory merges).
absl::StatusOr<bool> MakeRoom(int dirfd, const std::string& name, bool keep_dir,
                              absl::string_view what) {
  struct stat st;
  int err = ErrnoOf([&] { return fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW); });
  if (err == ENOENT) return false;
  if (err != 0) return Failed(err, what, absl::StrCat("fstatat(", name, ")"));
  if (keep_dir && S_ISDIR(st.st_mode)) return true;
  ZYGO_RETURN_IF_ERROR(RemoveTree(dirfd, name, what));
  return false;
}

// Ownership is only kept when we may set it: as root. In a user namespace ids that are
// not mapped fail with EINVAL, and EPERM means no CAP_CHOWN; both leave the caller's ids.
// An empty `name` means `dirfd` itself.
absl::Status SetOwner(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                      absl::string_view what) {
  if (geteuid() != 0) return absl::OkStatus();
  int err = ErrnoOf([&] {
    return name.empty() ? fchown(dirfd, uid, gid)
                        : fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
  });
  if (err != 0 && err != EPERM && err != EINVAL) {
    return Failed(err, what, absl::StrCat("fchownat(", uid, ":", gid, ")"));
  }
  return absl::OkStatus();
}

// Sets atime and mtime to `mtime`. An empty `name` means `dirfd` itself.
absl::Status SetTimes(int dirfd, const std::string& name, const struct timespec& mtime,
                      absl::string_view what) {
  const struct timespec times[2] = {mtime, mtime};
  int err = ErrnoOf([&] {
    return name.empty() ? futimens(dirfd, times)
                        : utimensat(dirfd, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
  });
  if (err != 0) return Failed(err, what, "utimensat");
  return absl::OkStatus();
}

// Directory modes and mtimes are applied after everything below them exists: creating
// entries changes a directory's mtime, and a read-only directory (0555) would stop a
// rootless caller from filling it. Until then directories are 0700.
struct DirMeta {
  mode_t mode;
  struct timespec mtime;
  bool has_mtime;
};
using DirMetaMap = std::map<std::string, DirMeta>;

absl::Status ApplyDirMeta(int root, const DirMetaMap& dirs) {
  std::vector<std::pair<size_t, const std::string*>> order;
  for (const auto& [path, meta] : dirs) {
    order.emplace_back(std::count(path.begin(), path.end(), '/'), &path);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  for (const auto& [depth, path] : order) {
    int fd =
        base::sys::RawOpenat2(root, path->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
    // Gone or no longer a directory: a later entry or layer replaced it.
    if (fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP) continue;
    if (fd < 0) return Failed(-fd, *path, "openat2(RESOLVE_IN_ROOT)");
    UniqueFd dir(fd);
    const DirMeta& meta = dirs.at(*path);
    int err = ErrnoOf([&] { return fchmod(dir.get(), meta.mode); });
    if (err != 0) return Failed(err, *path, absl::StrFormat("fchmod(%04o)", meta.mode));
    if (meta.has_mtime) ZYGO_RETURN_IF_ERROR(SetTimes(dir.get(), "", meta.mtime, *path));
  }
  return absl::OkStatus();
}

// ---- Entry names ----

// Splits a tar entry name into path components. "./" prefixes and empty or "."
// components are dropped (`tar -C dir .` names everything "./x"); a leading "/" and any
// ".." are refused rather than rewritten, since no layer writer produces them.
absl::StatusOr<std::vector<std::string>> SplitEntryName(absl::string_view name,
                                                        absl::string_view what) {
  if (absl::StartsWith(name, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing ", what, " \"", name, "\": absolute name"));
  }
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(name, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("refusing ", what, " \"", name, "\": \"..\" component"));
    }
    parts.emplace_back(part);
  }
  return parts;
}

// Explains why the directory `prefix` of `entry` could not be entered.
absl::Status NotADirectory(int parent, const std::string& name, const std::string& prefix,
                           absl::string_view entry) {
  struct stat st;
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("refusing \"", entry, "\": \"", prefix,
                                                   "\" is a symlink, and nothing is written "
                                                   "through a symlinked directory"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("\"", entry, "\": \"", prefix, "\" is not a directory"));
}

// Opens the directory made of the first `count` of `parts` below `root` (O_PATH),
// creating missing ones (0755) when `create`. Symlinks are refused (kResolve).
absl::StatusOr<UniqueFd> OpenDirBelow(int root, const std::vector<std::string>& parts, size_t count,
                                      bool create, absl::string_view entry) {
  std::string path = count == 0 ? "." : absl::StrJoin(parts.begin(), parts.begin() + count, "/");
  int fd = base::sys::RawOpenat2(root, path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
  if (fd >= 0) return UniqueFd(fd);
  if (fd != -ENOENT && fd != -ELOOP && fd != -ENOTDIR) {
    return OpenAt2(root, path, O_PATH | O_DIRECTORY, entry).status();  // names the errno
  }
  // Walk one component at a time to create what is missing or to name the culprit.
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dir, OpenAt2(root, ".", O_PATH | O_DIRECTORY, entry));
  for (size_t i = 0; i < count; ++i) {
    const std::string& name = parts[i];
    std::string prefix = absl::StrJoin(parts.begin(), parts.begin() + i + 1, "/");
    fd = base::sys::RawOpenat2(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               kResolve);
    if (fd == -ENOENT && create) {
      int err = ErrnoOf([&] { return mkdirat(dir.get(), name.c_str(), 0755); });
      if (err != 0 && err != EEXIST) {
        return Failed(err, entry, absl::StrCat("mkdirat(", prefix, ")"));
      }
      fd = base::sys::RawOpenat2(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                 kResolve);
    }
    if (fd == -ELOOP || fd == -ENOTDIR) return NotADirectory(dir.get(), name, prefix, entry);
    if (fd < 0) return Failed(-fd, entry, absl::StrCat("openat2(", prefix, ", RESOLVE_IN_ROOT)"));
    dir = UniqueFd(fd);
  }
  return dir;
}

// ---- UnpackLayer ----

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

absl::Status ArchiveError(struct archive* a, absl::string_view what) {
  const char* message = archive_error_string(a);
  return absl::DataLossError(absl::StrCat(what, ": ", message ? message : "libarchive error"));
}

// The decompressed layer. The tar reader pulls its input from here, so every byte of
// the uncompressed stream passes through `hasher` exactly once: one decompression
// serves both the diff_id and the extraction. Drain() hashes whatever follows the tar's
// end-of-archive blocks, which the diff_id covers too.
struct DecompressedSource {
  struct archive* raw = nullptr;
  Sha256Hasher* hasher = nullptr;
  int64_t consumed = 0;
  std::string error;

  // Returns the next block (size 0 at the end), or -1 with `error` set.
  la_ssize_t Next(const void** block) {
    size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(raw, block, &size, &offset);
    if (r == ARCHIVE_EOF) return 0;
    if (r < ARCHIVE_WARN) {
      const char* message = archive_error_string(raw);
      error = message ? message : "decompression failed";
      return -1;
    }
    if (offset != consumed) {  // raw format never makes holes; refuse to guess
      error = absl::StrCat("decompressed stream jumps from ", consumed, " to ", offset);
      return -1;
    }
    hasher->Update(*block, size);
    consumed += static_cast<int64_t>(size);
    return static_cast<la_ssize_t>(size);
  }

  static la_ssize_t Read(struct archive* tar, void* self, const void** block) {
    auto* source = static_cast<DecompressedSource*>(self);
    la_ssize_t n = source->Next(block);
    if (n < 0) archive_set_error(tar, EIO, "%s", source->error.c_str());
    return n;
  }

  absl::Status Drain(absl::string_view layer) {
    const void* block;
    la_ssize_t n;
    while ((n = Next(&block)) > 0) {
    }
    if (n < 0) return absl::DataLossError(absl::StrCat(layer, ": ", error));
    return absl::OkStatus();
  }
};

// Opens `path` as one decompressed byte stream: libarchive's "raw" format behind the
// compression filters OCI layers use (gzip, zstd; xz and bzip2 for old docker images).
// Filters that would run an external program are not enabled.
absl::StatusOr<ArchivePtr> OpenDecompressed(const std::string& path) {
  ArchivePtr raw(archive_read_new());
  if (raw == nullptr) return absl::ResourceExhaustedError("archive_read_new");
  archive_read_support_filter_gzip(raw.get());
  archive_read_support_filter_zstd(raw.get());
  archive_read_support_filter_xz(raw.get());
  archive_read_support_filter_bzip2(raw.get());
  archive_read_support_format_raw(raw.get());
  if (archive_read_open_filename(raw.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    // open(2)'s errno when the file is the problem (archive_errno may also be one of
    // libarchive's own codes, which reuse errno values such as EINVAL and EILSEQ).
    int err = archive_errno(raw.get());
    if (err == ENOENT || err == EACCES || err == EPERM || err == ENOTDIR || err == ELOOP) {
      return base::ErrnoStatus(err, absl::StrCat("opening layer ", path));
    }
    return ArchiveError(raw.get(), absl::StrCat("opening layer ", path));
  }
  struct archive_entry* entry;
  if (archive_read_next_header(raw.get(), &entry) != ARCHIVE_OK) {
    return ArchiveError(raw.get(), absl::StrCat("reading layer ", path));
  }
  return raw;
}

const char* EntryString(struct archive_entry* e, const char* (*local)(struct archive_entry*),
                        const char* (*utf8)(struct archive_entry*)) {
  // pax names are UTF-8, which the C locale cannot convert; take the UTF-8 form then.
  const char* s = local(e);
  return s != nullptr ? s : utf8(e);
}

class Unpacker {
 public:
  Unpacker(int root, struct archive* tar, const UnpackOptions& options)
      : root_(root), tar_(tar), options_(options) {}

  absl::Status Entry(struct archive_entry* e);
  absl::Status Finish() { return ApplyDirMeta(root_, dirs_); }
  UnpackResult& result() { return result_; }

 private:
  absl::Status Directory(int parent, const std::string& name, struct archive_entry* e);
  absl::Status RegularFile(int parent, const std::string& name, struct archive_entry* e,
                           bool marker);
  absl::Status WriteData(int fd);
  absl::Status Symlink(int parent, const std::string& name, struct archive_entry* e);
  absl::Status Hardlink(int parent, const std::string& name, struct archive_entry* e);
  absl::Status Node(int parent, const std::string& name, struct archive_entry* e);
  absl::Status SetMeta(int parent, const std::string& name, struct archive_entry* e, bool chmod);

  const int root_;
  struct archive* const tar_;
  const UnpackOptions& options_;
  std::string entry_;  // the current entry's name, for errors
  std::string path_;   // its normalized relative path
  DirMetaMap dirs_;
  UnpackResult result_;
};

absl::Status Unpacker::Entry(struct archive_entry* e) {
  const char* raw_name = EntryString(e, archive_entry_pathname, archive_entry_pathname_utf8);
  if (raw_name == nullptr) return absl::DataLossError("a layer entry has no name");
  entry_ = raw_name;
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitEntryName(entry_, "entry"));
  const mode_t type = archive_entry_filetype(e);
  const bool hardlink = archive_entry_hardlink(e) || archive_entry_hardlink_utf8(e);
  if (parts.empty()) {  // "./": the layer root itself, which the caller owns
    if (type == AE_IFDIR && !hardlink) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("refusing entry \"", entry_, "\": names the layer root"));
  }
  const std::string& name = parts.back();
  // ".wh..wh." names are reserved (OCI image spec, "Whiteouts"); besides the opaque
  // marker, only aufs metadata (".wh..wh.plnk", ".wh..wh.aufs") uses them, and docker
  // drops it on unpack too.
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool opaque = i + 1 == parts.size() && parts[i] == kOpaqueMarker;
    if (absl::StartsWith(parts[i], kReservedPrefix) && !opaque) return absl::OkStatus();
  }
  const bool marker = absl::StartsWith(name, kWhiteoutPrefix);
  if (marker && (name == ".wh.." || name == ".wh..." || (type != AE_IFREG && !hardlink))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing entry \"", entry_, "\": a whiteout must be a regular file naming an entry"));
  }
  path_ = absl::StrJoin(parts, "/");
  ZYGO_ASSIGN_OR_RETURN(UniqueFd parent,
                        OpenDirBelow(root_, parts, parts.size() - 1, true, entry_));
  ++result_.files;
  // Whiteouts (even hardlinked ones) become empty markers; FlattenLayers applies them.
  if (marker) return RegularFile(parent.get(), name, e, /*marker=*/true);
  if (hardlink) return Hardlink(parent.get(), name, e);
  switch (type) {
    case AE_IFDIR:
      return Directory(parent.get(), name, e);
    case AE_IFREG:
      return RegularFile(parent.get(), name, e, /*marker=*/false);
    case AE_IFLNK:
      return Symlink(parent.get(), name, e);
    case AE_IFCHR:
    case AE_IFBLK:
    case AE_IFIFO:
      return Node(parent.get(), name, e);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("refusing entry \"", entry_, "\": unsupported file type ", absl::Hex(type)));
  }
}

absl::Status Unpacker::SetMeta(int parent, const std::string& name, struct archive_entry* e,
                               bool chmod) {
  ZYGO_RETURN_IF_ERROR(SetOwner(parent, name, static_cast<uid_t>(archive_entry_uid(e)),
                                static_cast<gid_t>(archive_entry_gid(e)), entry_));
  // After the chown, which clears setuid/setgid bits. fchmodat follows a final symlink,
  // but callers only ask for it on what they just created in a directory only we write.
  if (chmod) {
    mode_t mode = archive_entry_perm(e);
    int err = ErrnoOf([&] { return fchmodat(parent, name.c_str(), mode, 0); });
    if (err != 0) return Failed(err, entry_, absl::StrFormat("fchmodat(%04o)", mode));
  }
  if (!archive_entry_mtime_is_set(e)) return absl::OkStatus();
  struct timespec mtime = {archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
  return SetTimes(parent, name, mtime, entry_);
}

absl::Status Unpacker::Directory(int parent, const std::string& name, struct archive_entry* e) {
  ZYGO_ASSIGN_OR_RETURN(bool exists, MakeRoom(parent, name, /*keep_dir=*/true, entry_));
  if (!exists) {
    int err = ErrnoOf([&] { return mkdirat(parent, name.c_str(), 0700); });
    if (err != 0) return Failed(err, entry_, "mkdirat");
  }
  ZYGO_RETURN_IF_ERROR(SetOwner(parent, name, static_cast<uid_t>(archive_entry_uid(e)),
                                static_cast<gid_t>(archive_entry_gid(e)), entry_));
  struct timespec mtime = {archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
  dirs_[path_] = {archive_entry_perm(e), mtime, archive_entry_mtime_is_set(e) != 0};
  return absl::OkStatus();
}

absl::Status Unpacker::RegularFile(int parent, const std::string& name, struct archive_entry* e,
                                   bool marker) {
  ZYGO_RETURN_IF_ERROR(MakeRoom(parent, name, /*keep_dir=*/false, entry_).status());
  int fd = FdOrErrno([&] {
    return openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  });
  if (fd < 0) return Failed(-fd, entry_, "openat(O_CREAT|O_EXCL|O_NOFOLLOW)");
  UniqueFd file(fd);
  if (!marker) {  // markers stay empty whatever the tar carries
    ZYGO_RETURN_IF_ERROR(WriteData(file.get()));
    if (archive_entry_size_is_set(e)) {  // a sparse file may end in a hole
      int err = ErrnoOf([&] { return ftruncate(file.get(), archive_entry_size(e)); });
      if (err != 0) return Failed(err, entry_, "ftruncate");
    }
  }
  ZYGO_RETURN_IF_ERROR(SetOwner(file.get(), "", static_cast<uid_t>(archive_entry_uid(e)),
                                static_cast<gid_t>(archive_entry_gid(e)), entry_));
  mode_t mode = archive_entry_perm(e);
  int err = ErrnoOf([&] { return fchmod(file.get(), mode); });
  if (err != 0) return Failed(err, entry_, absl::StrFormat("fchmod(%04o)", mode));
  if (!archive_entry_mtime_is_set(e)) return absl::OkStatus();
  struct timespec mtime = {archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
  return SetTimes(file.get(), "", mtime, entry_);
}

absl::Status Unpacker::WriteData(int fd) {
  for (;;) {
    const void* block;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(tar_, &block, &size, &offset);
    if (r == ARCHIVE_EOF) return absl::OkStatus();
    if (r < ARCHIVE_WARN) return ArchiveError(tar_, absl::StrCat("\"", entry_, "\""));
    const char* data = static_cast<const char*>(block);
    while (size > 0) {
      ssize_t n = pwrite(fd, data, size, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Failed(errno, entry_, "pwrite");
      data += n;
      size -= static_cast<size_t>(n);
      offset += n;
      result_.bytes += n;
    }
  }
}

absl::Status Unpacker::Symlink(int parent, const std::string& name, struct archive_entry* e) {
  // The target is data, read inside the sandbox against its own root; it may name
  // anything. Only writing *through* it is refused (kResolve).
  const char* target = EntryString(e, archive_entry_symlink, archive_entry_symlink_utf8);
  if (target == nullptr) {
    return absl::DataLossError(absl::StrCat("symlink \"", entry_, "\" has no target"));
  }
  ZYGO_RETURN_IF_ERROR(MakeRoom(parent, name, /*keep_dir=*/false, entry_).status());
  int err = ErrnoOf([&] { return symlinkat(target, parent, name.c_str()); });
  if (err != 0) return Failed(err, entry_, absl::StrCat("symlinkat(", target, ")"));
  return SetMeta(parent, name, e, /*chmod=*/false);
}

absl::Status Unpacker::Hardlink(int parent, const std::string& name, struct archive_entry* e) {
  std::string target = EntryString(e, archive_entry_hardlink, archive_entry_hardlink_utf8);
  const std::string what = absl::StrCat(entry_, " -> ", target);  // names both in errors
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> parts,
                        SplitEntryName(target, absl::StrCat("hardlink \"", entry_, "\" to")));
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing hardlink \"", entry_, "\": its target is the layer root"));
  }
  if (absl::StrJoin(parts, "/") == path_) return absl::OkStatus();  // a link to itself
  // The target is looked up inside this layer only, so it cannot reach outside it.
  ZYGO_ASSIGN_OR_RETURN(UniqueFd target_dir,
                        OpenDirBelow(root_, parts, parts.size() - 1, false, what));
  struct stat st;
  int err = ErrnoOf(
      [&] { return fstatat(target_dir.get(), parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW); });
  if (err != 0) return Failed(err, what, "fstatat(hardlink target)");
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing hardlink \"", entry_, "\": target ", target, " is a directory"));
  }
  ZYGO_RETURN_IF_ERROR(MakeRoom(parent, name, /*keep_dir=*/false, entry_).status());
  err = ErrnoOf(
      [&] { return linkat(target_dir.get(), parts.back().c_str(), parent, name.c_str(), 0); });
  if (err != 0) return Failed(err, entry_, absl::StrCat("linkat(", target, ")"));
  return absl::OkStatus();
}

absl::Status Unpacker::Node(int parent, const std::string& name, struct archive_entry* e) {
  const mode_t type = archive_entry_filetype(e);
  if (type != AE_IFIFO && !options_.allow_devices) {
    return absl::PermissionDeniedError(
        absl::StrCat("refusing entry \"", entry_, "\": a device node (", archive_entry_rdevmajor(e),
                     ":", archive_entry_rdevminor(e),
                     "); an unpack without allow_devices (a rootless one) "
                     "cannot create device nodes"));
  }
  ZYGO_RETURN_IF_ERROR(MakeRoom(parent, name, /*keep_dir=*/false, entry_).status());
  dev_t dev = makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
  int err = ErrnoOf([&] { return mknodat(parent, name.c_str(), type | 0600, dev); });
  if (err != 0) return Failed(err, entry_, "mknodat");
  return SetMeta(parent, name, e, /*chmod=*/true);
}

}  // namespace

absl::StatusOr<UnpackResult> UnpackLayer(const std::string& layer_file, const std::string& dest_dir,
                                         const UnpackOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd root, base::sys::OpenDirectory(dest_dir));
  ZYGO_ASSIGN_OR_RETURN(ArchivePtr raw, OpenDecompressed(layer_file));
  Sha256Hasher hasher;
  DecompressedSource source{raw.get(), &hasher};
  ArchivePtr tar(archive_read_new());
  if (tar == nullptr) return absl::ResourceExhaustedError("archive_read_new");
  archive_read_support_format_tar(tar.get());
  archive_read_support_format_empty(tar.get());  // a zero-byte layer, as Go's tar reads it
  if (archive_read_open(tar.get(), &source, nullptr, &DecompressedSource::Read, nullptr) !=
      ARCHIVE_OK) {
    return ArchiveError(tar.get(), absl::StrCat("reading layer ", layer_file));
  }
  Unpacker unpacker(root.get(), tar.get(), options);
  for (;;) {
    struct archive_entry* entry;
    int r = archive_read_next_header(tar.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      return ArchiveError(tar.get(), absl::StrCat("reading layer ", layer_file));
    }
    absl::Status status = unpacker.Entry(entry);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("unpacking ", layer_file, ": ", status.message()));
    }
  }
  ZYGO_RETURN_IF_ERROR(unpacker.Finish());
  ZYGO_RETURN_IF_ERROR(source.Drain(layer_file));
  UnpackResult result = unpacker.result();
  result.diff_id = hasher.Finish();
  return result;
}

namespace {

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
