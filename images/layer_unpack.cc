// Safe layer unpacking: libarchive's read side, every file created through openat2-scoped
// directory fds (internal/layer_fs.h). Parent side.
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
#include "images/internal/layer_fs.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

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

}  // namespace zygo::images
