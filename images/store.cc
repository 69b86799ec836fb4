// The content-addressed image store: layout, atomic commits, the image records
// (internal/images_json.h) and pruning.
#include "images/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/process_start_time.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/unique_fd.h"
#include "images/digest.h"
#include "images/internal/images_json.h"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using base::UniqueFd;
using base::sys::ProcessStartTime;

constexpr int64_t kTempMaxAgeSeconds = 3600;
constexpr const char* kKinds[] = {"blobs", "layers", "rootfs"};

// TODO(images issue 3): the few calls below that fs.h lacks (lstat, fsync, flock,
// renameat2, chmod, unlink) belong in core/base/sys; they follow its rules meanwhile.
absl::StatusOr<struct stat> LStat(const std::string& path) {
  struct stat st;
  if (base::RetryOnEintr([&] { return ::lstat(path.c_str(), &st); }) == 0) return st;
  return base::LastErrnoStatus([&] { return absl::StrCat("lstat(", path, ")"); });
}

absl::Status Fsync(const UniqueFd& fd, const std::string& path) {
  if (base::RetryOnEintr([&] { return ::fsync(fd.get()); }) == 0) return absl::OkStatus();
  return base::LastErrnoStatus([&] { return absl::StrCat("fsync(", path, ")"); });
}

// Holds the store's exclusive flock until the fd closes. The lock is on an open file
// description, so threads of one process exclude each other as processes do.
absl::StatusOr<UniqueFd> LockStore(const std::string& root) {
  std::string path = root + "/lock";
  int fd =
      base::RetryOnEintr([&] { return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600); });
  if (fd < 0)
    return base::LastErrnoStatus([&] { return absl::StrCat("open(", path, ", O_RDWR|O_CREAT)"); });
  UniqueFd lock(fd);
  if (base::RetryOnEintr([&] { return ::flock(lock.get(), LOCK_EX); }) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("flock(", path, ", LOCK_EX)"); });
  }
  return lock;
}

// rename(2) that never replaces: true when moved, false when `to` already exists.
// RENAME_NOREPLACE (Linux 3.15) keeps a finished entry from being swapped under a reader;
// filesystems without it (EINVAL) get plain rename(2), which refuses a non-empty
// directory target (ENOTEMPTY/EEXIST) and replaces an empty one or a file with equal bytes.
absl::StatusOr<bool> RenameNoReplace(const std::string& from, const std::string& to) {
  int rc = base::RetryOnEintr(
      [&] { return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE); });
  if (rc != 0 && errno == EINVAL) {
    rc = base::RetryOnEintr([&] { return ::rename(from.c_str(), to.c_str()); });
  }
  if (rc == 0) return true;
  if (errno == EEXIST || errno == ENOTEMPTY) return false;
  return base::LastErrnoStatus([&] { return absl::StrCat("rename(", from, " -> ", to, ")"); });
}

// RenameNoReplace for store entries. Moving a directory to a new parent rewrites its ".."
// entry, which needs write permission on the directory itself (rename(2), EACCES), and
// unpacked layers often have a read-only top (0555): u+w is granted for the move, and
// the mode given back afterwards.
absl::StatusOr<bool> MoveEntry(const std::string& from, const std::string& to) {
  ZYGO_ASSIGN_OR_RETURN(struct stat st, LStat(from));
  mode_t mode = st.st_mode & 07777;
  bool grant = S_ISDIR(st.st_mode) && (mode & S_IWUSR) == 0;
  if (grant && ::chmod(from.c_str(), mode | S_IWUSR) != 0) {
    return base::LastErrnoStatus(
        [&] { return absl::StrFormat("chmod(%s, %#o)", from, mode | S_IWUSR); });
  }
  absl::StatusOr<bool> moved = RenameNoReplace(from, to);
  if (grant) ::chmod((moved.ok() && *moved ? to : from).c_str(), mode);
  return moved;
}

// Removes `path` and everything below it; returns the bytes of the files removed.
absl::StatusOr<int64_t> RemoveTreeCountingBytes(const std::string& path) {
  int64_t bytes = 0;
  ZYGO_RETURN_IF_ERROR(base::sys::RemoveTree(path, &bytes));
  return bytes;
}

// Whether the process that made tmp/ entry `name` ("<purpose>-<pid>-<start>-<random>",
// see TempPath) still runs: its leftovers may be work in progress whatever their mtime
// (an unpacked layer's top directory can carry a 1970 mtime from the tarball).
bool CreatorIsAlive(absl::string_view name) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, '-');
  pid_t pid = 0;
  if (parts.size() < 4 || !absl::SimpleAtoi(parts[parts.size() - 3], &pid) || pid <= 0) {
    return false;
  }
  absl::string_view start = parts[parts.size() - 2];
  return start != "0" && ProcessStartTime(pid) == start;
}

std::string RandomHex() {
  uint64_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != sizeof(value)) {
    value = static_cast<uint64_t>(clock()) ^ reinterpret_cast<uintptr_t>(&value);
  }
  return absl::StrFormat("%016x", value);
}

// Writes `bytes` to a new file at `path` and fsyncs it, so a crash after the rename
// that follows cannot leave a name that promises bytes the disk never got.
absl::Status WriteFileDurably(const std::string& path, absl::string_view bytes) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenWriteOnly(path, base::sys::IfMissing::kCreate));
  while (!bytes.empty()) {
    ZYGO_ASSIGN_OR_RETURN(size_t written, base::sys::WriteOnce(fd, bytes.substr(0, 1 << 20), path));
    bytes.remove_prefix(written);
  }
  return Fsync(fd, path);
}

// <root>/<kind>/sha256/<hex>. An invalid digest maps to a name no valid digest has,
// inside the store, so a caller that skipped validation neither hits a real entry nor
// escapes the root.
std::string EntryPath(const std::string& root, const char* kind, absl::string_view digest) {
  std::string hex = DigestHex(digest);
  return absl::StrCat(root, "/", kind, "/sha256/", hex.empty() ? "invalid-digest" : hex);
}

// Whether a whole entry of file type `type` (S_IFREG, S_IFDIR) is at `path`; symlinks never are.
bool IsEntry(const std::string& path, absl::string_view digest, mode_t type) {
  absl::StatusOr<struct stat> st = LStat(path);
  return ValidateDigest(digest).ok() && st.ok() && (st->st_mode & S_IFMT) == type;
}

}  // namespace

absl::StatusOr<Store> Store::Open(const std::string& root) {
  if (root.empty()) {
    return absl::InvalidArgumentError(
        "no image store: set ZYGO_HOME (or XDG_DATA_HOME or HOME), or pass --root");
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(root, ec).lexically_normal();
  if (ec) return absl::InvalidArgumentError(absl::StrCat("image store ", root, ": ", ec.message()));
  std::string normal = absolute.string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  fs::create_directories(absolute.parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create ", absolute.parent_path().string(), ": ", ec.message()));
  }
  // The store holds whole root filesystems (setuid binaries included): private to its owner.
  std::vector<std::pair<std::string, mode_t>> dirs = {{normal, 0700}, {normal + "/tmp", 0755}};
  for (const char* kind : kKinds) {
    dirs.push_back({absl::StrCat(normal, "/", kind), 0755});
    dirs.push_back({absl::StrCat(normal, "/", kind, "/sha256"), 0755});
  }
  for (const auto& [dir, mode] : dirs) {
    absl::Status made = base::sys::MakeDirectory(dir, mode);
    if (!made.ok() && base::sys::ErrnoOf(made) != EEXIST) return made;
    ZYGO_ASSIGN_OR_RETURN(struct stat st, base::sys::Stat(dir));
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("image store: ", dir, " is not a directory"));
    }
  }
  return Store(normal);
}

std::string Store::DefaultRoot() {
  auto env = [](const char* name) -> std::string {
    const char* value = getenv(name);
    return value != nullptr ? value : "";
  };
  if (std::string home = env("ZYGO_HOME"); !home.empty()) return home;
  // The XDG spec says to ignore a relative XDG_DATA_HOME.
  if (std::string data = env("XDG_DATA_HOME"); absl::StartsWith(data, "/")) return data + "/zygo";
  if (geteuid() == 0) return "/var/lib/zygo";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.local/share/zygo";
  return "";  // Open explains what to set
}

std::string Store::BlobPath(absl::string_view digest) const {
  return EntryPath(root_, "blobs", digest);
}

std::string Store::LayerPath(absl::string_view diff_id) const {
  return EntryPath(root_, "layers", diff_id);
}

std::string Store::RootfsPath(absl::string_view manifest_digest) const {
  return EntryPath(root_, "rootfs", manifest_digest);
}

bool Store::HasBlob(absl::string_view digest) const {
  return IsEntry(BlobPath(digest), digest, S_IFREG);
}

bool Store::HasLayer(absl::string_view diff_id) const {
  return IsEntry(LayerPath(diff_id), diff_id, S_IFDIR);
}

bool Store::HasRootfs(absl::string_view manifest_digest) const {
  return IsEntry(RootfsPath(manifest_digest), manifest_digest, S_IFDIR);
}

// "<purpose>-<pid>-<process start time>-<64 random bits>": unique without a shared
// counter, and Prune can tell whether the process that made it still runs.
std::string Store::TempPath(absl::string_view purpose) const {
  std::string clean(purpose.empty() ? "tmp" : purpose);
  for (char& c : clean) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.') c = '_';
  }
  pid_t pid = getpid();
  return absl::StrCat(root_, "/tmp/", clean, "-", pid, "-", ProcessStartTime(pid), "-",
                      RandomHex());
}

namespace {

// Commits move only what the caller made under tmp/: anything else could be on another
// filesystem (EXDEV) or be something the store must not swallow, such as a symlink.
absl::Status CheckTempEntry(const std::string& root, const std::string& path, bool directory) {
  std::string normal = fs::path(path).lexically_normal().string();
  if (!absl::StartsWith(normal, root + "/tmp/")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not under the store's tmp/ (", root, "/tmp)"));
  }
  ZYGO_ASSIGN_OR_RETURN(struct stat st, LStat(path));
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, directory ? " is not a directory" : " is not a regular file"));
  }
  return absl::OkStatus();
}

absl::Status CommitDir(const std::string& root, absl::string_view digest,
                       const std::string& temp_dir, const std::string& target) {
  ZYGO_RETURN_IF_ERROR(ValidateDigest(digest));
  ZYGO_RETURN_IF_ERROR(CheckTempEntry(root, temp_dir, /*directory=*/true));
  ZYGO_ASSIGN_OR_RETURN(bool moved, MoveEntry(temp_dir, target));
  if (moved) return absl::OkStatus();
  // Another pull committed the same content first; its entry is as good as ours.
  return RemoveTreeCountingBytes(temp_dir).status();
}

}  // namespace

absl::Status Store::PutBlob(absl::string_view digest, absl::string_view bytes) {
  ZYGO_RETURN_IF_ERROR(ValidateDigest(digest));
  std::string actual = Sha256Digest(bytes);
  if (actual != digest) {
    return absl::DataLossError(
        absl::StrCat("digest mismatch: expected ", digest, ", the bytes hash to ", actual));
  }
  if (HasBlob(digest)) return absl::OkStatus();
  std::string temp = TempPath("blob");
  absl::Status written = WriteFileDurably(temp, bytes);
  absl::StatusOr<bool> moved =
      written.ok() ? RenameNoReplace(temp, BlobPath(digest)) : absl::StatusOr<bool>(written);
  if (!moved.ok() || !*moved) ::unlink(temp.c_str());
  return moved.status();
}

absl::Status Store::CommitBlobFile(absl::string_view digest, const std::string& temp_file) {
  ZYGO_RETURN_IF_ERROR(ValidateDigest(digest));
  ZYGO_RETURN_IF_ERROR(CheckTempEntry(root_, temp_file, /*directory=*/false));
  {
    ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenReadOnly(temp_file));
    ZYGO_RETURN_IF_ERROR(Fsync(fd, temp_file));
  }
  ZYGO_ASSIGN_OR_RETURN(bool moved, RenameNoReplace(temp_file, BlobPath(digest)));
  if (!moved) ::unlink(temp_file.c_str());  // the same bytes are already there
  return absl::OkStatus();
}

absl::Status Store::CommitLayerDir(absl::string_view diff_id, const std::string& temp_dir) {
  return CommitDir(root_, diff_id, temp_dir, LayerPath(diff_id));
}

absl::Status Store::CommitRootfsDir(absl::string_view manifest_digest,
                                    const std::string& temp_dir) {
  return CommitDir(root_, manifest_digest, temp_dir, RootfsPath(manifest_digest));
}

absl::StatusOr<std::string> Store::ReadBlob(absl::string_view digest) const {
  ZYGO_RETURN_IF_ERROR(ValidateDigest(digest));
  return base::sys::ReadFile(BlobPath(digest));
}

// Readers take no lock: images.json is only ever replaced by rename(2), so a reader sees
// the old file or the new one, whole.
absl::StatusOr<std::vector<ImageRecord>> Store::List() const {
  std::string path = root_ + "/images.json";
  absl::StatusOr<std::string> text = base::sys::ReadFile(path);
  if (!text.ok() && base::sys::ErrnoOf(text.status()) == ENOENT) {
    return std::vector<ImageRecord>();
  }
  if (!text.ok()) return text.status();
  return ParseImagesJson(*text, path);
}

absl::StatusOr<std::optional<ImageRecord>> Store::Find(absl::string_view reference) const {
  ZYGO_ASSIGN_OR_RETURN(std::vector<ImageRecord> records, List());
  for (ImageRecord& record : records) {
    if (record.reference == reference) return std::optional<ImageRecord>(std::move(record));
  }
  return std::optional<ImageRecord>();
}

namespace {

// Replaces images.json whole; the caller holds the store lock.
absl::Status SaveRecords(const Store& store, const std::vector<ImageRecord>& records) {
  base::sys::AtomicWriteOptions options;
  options.temp_path = store.TempPath("images.json");  // swept by Prune if a crash leaves it
  options.sync_directory = true;
  return base::sys::WriteFileAtomically(store.root() + "/images.json", ImagesJsonText(records),
                                        options);
}

}  // namespace

// Under the lock, Record also checks that everything the record names is in the store.
// Prune holds the same lock for its whole run, so this closes the window between a pull's
// commits and its Record: an entry pruned in that window makes Record fail (pull again)
// instead of recording an image whose content is gone.
absl::Status Store::Record(const ImageRecord& record) {
  ZYGO_RETURN_IF_ERROR(ValidateRecord(record));
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockStore(root_));
  std::vector<std::string> blobs = {record.manifest_digest, record.config_digest};
  blobs.insert(blobs.end(), record.layer_digests.begin(), record.layer_digests.end());
  for (const std::string& blob : blobs) {
    if (!HasBlob(blob)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", record.reference, ": blob ", blob,
          " is not in the store (removed by a concurrent prune?); pull the image again"));
    }
  }
  for (const std::string& diff_id : record.diff_ids) {
    if (!HasLayer(diff_id)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", record.reference, ": layer ", diff_id,
          " is not unpacked in the store (removed by a concurrent prune?); pull the image again"));
    }
  }
  ZYGO_ASSIGN_OR_RETURN(std::vector<ImageRecord> records, List());
  bool replaced = false;
  for (ImageRecord& existing : records) {
    if (existing.reference == record.reference) {
      existing = record;
      replaced = true;
    }
  }
  if (!replaced) records.push_back(record);
  return SaveRecords(*this, records);
}

absl::Status Store::Remove(absl::string_view reference) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockStore(root_));
  ZYGO_ASSIGN_OR_RETURN(std::vector<ImageRecord> records, List());
  size_t before = records.size();
  std::erase_if(records, [&](const ImageRecord& record) { return record.reference == reference; });
  if (records.size() == before) {
    return absl::NotFoundError(absl::StrCat("image ", reference, " is not in the store"));
  }
  return SaveRecords(*this, records);
}

namespace {

// Removes the entries of <root>/<kind>/sha256 whose names `keep` lacks. Each is first
// renamed into tmp/, so an interrupted prune never leaves a half-deleted entry under a
// name the store trusts; what it leaves in tmp/ a later prune removes.
absl::StatusOr<int64_t> PruneKind(const Store& store, const char* kind,
                                  const std::set<std::string>& keep) {
  std::string dir = absl::StrCat(store.root(), "/", kind, "/sha256");
  std::vector<std::string> doomed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (keep.count(name) == 0) doomed.push_back(name);
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", dir, ": ", ec.message()));
  int64_t freed = 0;
  for (const std::string& name : doomed) {
    std::string from = absl::StrCat(dir, "/", name);
    std::string to = store.TempPath(absl::StrCat("prune_", kind));
    ZYGO_ASSIGN_OR_RETURN(bool moved, MoveEntry(from, to));
    if (!moved) continue;  // cannot happen: TempPath names are fresh
    ZYGO_ASSIGN_OR_RETURN(int64_t bytes, RemoveTreeCountingBytes(to));
    freed += bytes;
  }
  return freed;
}

// tmp/ entries older than an hour whose creator is gone: a crashed pull's leftovers.
absl::StatusOr<int64_t> PruneTemp(const Store& store) {
  std::string dir = store.root() + "/tmp";
  int64_t cutoff = static_cast<int64_t>(time(nullptr)) - kTempMaxAgeSeconds;
  std::vector<std::string> doomed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string path = it->path().string();
    absl::StatusOr<struct stat> st = LStat(path);
    if (!st.ok() || st->st_mtime >= cutoff) continue;
    if (CreatorIsAlive(it->path().filename().string())) continue;
    doomed.push_back(path);
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", dir, ": ", ec.message()));
  int64_t freed = 0;
  for (const std::string& path : doomed) {
    ZYGO_ASSIGN_OR_RETURN(int64_t bytes, RemoveTreeCountingBytes(path));
    freed += bytes;
  }
  return freed;
}

}  // namespace

absl::StatusOr<int64_t> Store::Prune() {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockStore(root_));
  // A damaged images.json stops Prune here: with no records, everything would go.
  ZYGO_ASSIGN_OR_RETURN(std::vector<ImageRecord> records, List());
  std::set<std::string> blobs, layers, rootfs;
  for (const ImageRecord& record : records) {
    blobs.insert(DigestHex(record.manifest_digest));
    blobs.insert(DigestHex(record.config_digest));
    for (const std::string& digest : record.layer_digests) blobs.insert(DigestHex(digest));
    for (const std::string& diff_id : record.diff_ids) layers.insert(DigestHex(diff_id));
    rootfs.insert(DigestHex(record.manifest_digest));
  }
  int64_t freed = 0;
  ZYGO_ASSIGN_OR_RETURN(int64_t bytes, PruneKind(*this, "blobs", blobs));
  freed += bytes;
  ZYGO_ASSIGN_OR_RETURN(bytes, PruneKind(*this, "layers", layers));
  freed += bytes;
  ZYGO_ASSIGN_OR_RETURN(bytes, PruneKind(*this, "rootfs", rootfs));
  freed += bytes;
  ZYGO_ASSIGN_OR_RETURN(bytes, PruneTemp(*this));
  return freed + bytes;
}

}  // namespace zygo::images
