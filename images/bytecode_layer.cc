// The bytecode layer, as named steps: find the uncompiled stdlib, compile it in a
// sandbox, place the .pyc files in a hard-linked copy of the root, commit and record.
#include "images/bytecode_layer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/unique_fd.h"
#include "images/digest.h"
#include "images/link_tree.h"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using base::UniqueFd;

// Where the compile job's writable mount appears. It must already exist in the image
// (a directory image's mountpoints are never created), and /tmp always does: the store
// adds it to every root it flattens.
constexpr char kJobOut[] = "/tmp";
constexpr char kPycSubdir[] = "pyc";

// "python3.11" -> 11; nullopt for anything else ("python3", "python3.11d", "python2.7").
std::optional<int> StdlibMinor(absl::string_view name) {
  int minor = 0;
  if (!absl::ConsumePrefix(&name, "python3.") || name.empty() ||
      !std::all_of(name.begin(), name.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(name, &minor)) {
    return std::nullopt;
  }
  return minor;
}

bool IsKind(const std::string& path, mode_t kind) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

std::string LastLine(const std::string& text) {
  std::vector<absl::string_view> lines = absl::StrSplit(
      text, '\n', [](absl::string_view line) { return !absl::StripAsciiWhitespace(line).empty(); });
  if (lines.empty()) return "";
  std::string line(absl::StripAsciiWhitespace(lines.back()));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

// Step 1: compile each stdlib dir with its own interpreter into <out>/pyc/<dir>/...
// The log is outside `out`: the job could swap a file there for a symlink.
absl::Status CompileStdlib(const RunnableImage& image, const std::vector<StdlibDir>& stdlib,
                           const std::string& out, const std::string& log_path,
                           const SandboxRunner& run, core::Loosening loosening) {
  for (const StdlibDir& dir : stdlib) {
    SandboxJob job;
    job.rootfs = image.rootfs;
    // -I: the image's PYTHONPATH or user site must not decide what gets compiled;
    // -X pycache_prefix (Python 3.8+): the .pyc files go to the writable mount, mirroring
    // the source paths, since the root itself is read-only.
    job.argv = {dir.python,
                "-I",
                "-X",
                absl::StrCat("pycache_prefix=", kJobOut, "/", kPycSubdir),
                "-m",
                "compileall",
                "-q",
                "-j0",
                "--invalidation-mode",
                "unchecked-hash",
                dir.dir};
    job.output = log_path;
    job.image_env = image.config.env;
    job.mounts = {{out, kJobOut, /*read_only=*/false}};
    job.loosening = loosening;
    absl::StatusOr<int> exit_code = run(job);
    absl::StatusOr<std::string> log = base::sys::ReadFile(log_path);
    std::string detail = log.ok() ? LastLine(*log) : "";
    if (!detail.empty()) detail = absl::StrCat(": ", detail);
    if (!exit_code.ok()) {
      return absl::Status(
          exit_code.status().code(),
          absl::StrCat("compiling ", dir.dir, ": ", exit_code.status().message(), detail));
    }
    if (*exit_code != 0) {
      return absl::InternalError(
          absl::StrCat(dir.python, " -m compileall ", dir.dir, " exited ", *exit_code, detail));
    }
  }
  return absl::OkStatus();
}

// Opens `rel` ("usr/lib/python3.11/json") below `root`, one component at a time with
// O_NOFOLLOW: a .pyc never lands through a symlink of the image.
absl::StatusOr<UniqueFd> OpenBelow(int root, absl::string_view rel) {
  UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!dir.valid()) return base::ErrnoStatus(errno, "dup");
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    if (part == "." || part == "..") return absl::InvalidArgumentError("bad path component");
    std::string name(part);
    int fd = ::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return base::ErrnoStatus(errno, absl::StrCat("open(", rel, ")"));
    dir.Reset(fd);
  }
  return dir;
}

struct Placed {
  int64_t files = 0;
  int64_t bytes = 0;
};

// Moves one compiled file <out>/pyc/<rel_dir>/<stem>.<tag>.pyc to
// <root>/<rel_dir>/__pycache__/, if <rel_dir>/<stem>.py is a regular file of the root.
// Anything else the job left is ignored: its output is the image's code's word only.
absl::Status PlaceOne(int root, const fs::path& from, const std::string& rel_dir,
                      const std::string& name, const std::string& tag, Placed* placed) {
  std::string suffix = absl::StrCat(".", tag, ".pyc");
  if (!absl::EndsWith(name, suffix) || name.size() == suffix.size()) return absl::OkStatus();
  std::string source = absl::StrCat(name.substr(0, name.size() - suffix.size()), ".py");
  absl::StatusOr<UniqueFd> dir = OpenBelow(root, rel_dir);
  struct stat st;
  if (!dir.ok() || ::fstatat(dir->get(), source.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode)) {
    return absl::OkStatus();
  }
  if (::mkdirat(dir->get(), "__pycache__", 0755) != 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", rel_dir, "/__pycache__)"));
  }
  ZYGO_ASSIGN_OR_RETURN(UniqueFd cache, OpenBelow(dir->get(), "__pycache__"));
  if (::renameat(AT_FDCWD, from.c_str(), cache.get(), name.c_str()) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("rename(", from.string(), ")"));
  }
  // compileall writes 0644 under the default umask; a stricter one must not make the
  // layer unreadable to a sandbox running as another uid.
  if (::fchmodat(cache.get(), name.c_str(), 0644, 0) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("chmod(", rel_dir, "/__pycache__/", name, ")"));
  }
  if (::fstatat(cache.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    ++placed->files;
    placed->bytes += st.st_size;
  }
  return absl::OkStatus();
}

// Step 2: every .pyc of the job's output into the derived root `root_dir`. The job has
// exited (its pid namespace is gone), so nothing changes the output tree meanwhile; the
// iterator does not descend into symlinked directories.
absl::StatusOr<Placed> PlacePyc(const std::string& pyc_root, const std::string& root_dir,
                                const std::vector<StdlibDir>& stdlib) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd root, base::sys::OpenDirectory(root_dir));
  Placed placed;
  std::error_code ec;
  // No output directory at all is the same as an empty one: the check below says so.
  bool any = IsKind(pyc_root, S_IFDIR);
  for (fs::recursive_directory_iterator it(any ? pyc_root : root_dir, ec), end;
       any && !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    std::string rel_dir = it->path().parent_path().lexically_relative(pyc_root).string();
    for (const StdlibDir& dir : stdlib) {
      std::string in_image = "/" + rel_dir;
      if (in_image != dir.dir && !absl::StartsWith(in_image, dir.dir + "/")) continue;
      ZYGO_RETURN_IF_ERROR(PlaceOne(root.get(), it->path(), rel_dir, it->path().filename().string(),
                                    dir.cache_tag, &placed));
      break;
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", pyc_root, ": ", ec.message()));
  for (const StdlibDir& dir : stdlib) {
    std::string os_pyc = absl::StrCat(root_dir, dir.dir, "/__pycache__/os.", dir.cache_tag, ".pyc");
    if (!IsKind(os_pyc, S_IFREG)) {
      return absl::InternalError(absl::StrCat("compileall made no ", dir.dir, "/__pycache__/os.",
                                              dir.cache_tag, ".pyc (is ", dir.python,
                                              " CPython 3.8 or later?)"));
    }
  }
  return placed;
}

// Step 3: the derived root into the store and its record into images.json, replacing any
// record of an older bytecode root of the same reference (the tag moved on).
absl::Status CommitAndRecord(Store& store, const RunnableImage& image, const std::string& key,
                             const std::string& reference, const std::string& temp_root,
                             int64_t pyc_bytes) {
  ZYGO_ASSIGN_OR_RETURN(std::optional<ImageRecord> base, store.Find(image.reference));
  if (!base.has_value()) {
    return absl::NotFoundError(absl::StrCat("image ", image.reference, " left the store"));
  }
  ZYGO_RETURN_IF_ERROR(store.PutBlob(key, BytecodeKeyDocument(image.manifest_digest)));
  ZYGO_RETURN_IF_ERROR(store.CommitRootfsDir(key, temp_root));
  ImageRecord derived = *base;
  derived.reference = reference;
  derived.manifest_digest = key;
  derived.size_bytes = base->size_bytes + pyc_bytes;
  derived.created_unix = static_cast<int64_t>(time(nullptr));
  ZYGO_ASSIGN_OR_RETURN(std::vector<ImageRecord> records, store.List());
  std::string prefix = image.reference + "+bytecode.";
  for (const ImageRecord& record : records) {
    if (absl::StartsWith(record.reference, prefix) && record.reference != reference) {
      store.Remove(record.reference).IgnoreError();  // gone already is as good
    }
  }
  return store.Record(derived);
}

// Steps 1-3 with `out` and `temp_root` as the scratch space; the caller cleans up.
absl::StatusOr<Placed> BuildSteps(Store& store, const RunnableImage& image,
                                  const std::vector<StdlibDir>& stdlib, const SandboxRunner& run,
                                  core::Loosening loosening, const std::string& out,
                                  const std::string& temp_root) {
  std::string key = BytecodeKey(image.manifest_digest);
  ZYGO_RETURN_IF_ERROR(base::sys::MakeDirectory(out, 0755));
  ZYGO_RETURN_IF_ERROR(CompileStdlib(image, stdlib, out, out + ".log", run, loosening));
  ZYGO_RETURN_IF_ERROR(LinkTree(image.rootfs, temp_root).status());
  ZYGO_ASSIGN_OR_RETURN(Placed placed,
                        PlacePyc(absl::StrCat(out, "/", kPycSubdir), temp_root, stdlib));
  ZYGO_RETURN_IF_ERROR(CommitAndRecord(store, image, key, BytecodeReference(image.reference, key),
                                       temp_root, placed.bytes));
  return placed;
}

absl::StatusOr<BytecodeRoot> Build(Store& store, const RunnableImage& image,
                                   const std::vector<StdlibDir>& stdlib, const SandboxRunner& run,
                                   core::Loosening loosening) {
  auto start = std::chrono::steady_clock::now();
  std::string out = store.TempPath("bytecode_out");
  std::string temp_root = store.TempPath("rootfs");
  absl::StatusOr<Placed> placed = BuildSteps(store, image, stdlib, run, loosening, out, temp_root);
  // Best effort: whatever stays in tmp/ is pruned later.
  base::sys::RemoveTree(out).IgnoreError();
  base::sys::RemoveTree(out + ".log").IgnoreError();
  if (!placed.ok()) {
    base::sys::RemoveTree(temp_root).IgnoreError();
    return placed.status();
  }
  std::string key = BytecodeKey(image.manifest_digest);
  BytecodeRoot root;
  root.rootfs = store.RootfsPath(key);
  root.reference = BytecodeReference(image.reference, key);
  root.built = true;
  root.pyc_files = placed->files;
  root.pyc_bytes = placed->bytes;
  root.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return root;
}

// Holds an flock on the image's root until destroyed: two runs of a new image build its
// bytecode root once, the second waiting for the first.
absl::StatusOr<UniqueFd> LockImageRoot(const std::string& rootfs) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenDirectory(rootfs));
  int rc;
  do {
    rc = ::flock(fd.get(), LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return base::ErrnoStatus(errno, absl::StrCat("flock(", rootfs, ", LOCK_EX)"));
  return fd;
}

}  // namespace

std::vector<StdlibDir> FindUncompiledStdlib(const std::string& rootfs) {
  std::vector<StdlibDir> found;
  for (const char* lib : {"usr/local/lib", "usr/lib"}) {
    std::string parent = absl::StrCat(rootfs, "/", lib);
    DIR* dir = ::opendir(parent.c_str());
    if (dir == nullptr) continue;
    while (struct dirent* entry = ::readdir(dir)) {
      std::optional<int> minor = StdlibMinor(entry->d_name);
      if (!minor.has_value()) continue;
      std::string path = absl::StrCat(parent, "/", entry->d_name);
      std::string tag = absl::StrCat("cpython-3", *minor);
      if (!IsKind(path, S_IFDIR) || !IsKind(path + "/os.py", S_IFREG) ||
          IsKind(absl::StrCat(path, "/__pycache__/os.", tag, ".pyc"), S_IFREG)) {
        continue;
      }
      // The interpreter of that version beside the lib dir; else whatever python3 is.
      std::string prefix = absl::StrCat("/", absl::StripSuffix(lib, "/lib"));
      std::string python = absl::StrCat(prefix, "/bin/", entry->d_name);
      struct stat st;
      if (::lstat((rootfs + python).c_str(), &st) != 0) python = "python3";
      found.push_back({absl::StrCat("/", lib, "/", entry->d_name), tag, python});
    }
    ::closedir(dir);
  }
  return found;
}

std::string BytecodeKeyDocument(absl::string_view manifest_digest) {
  return absl::StrCat("{\"zygo\":\"bytecode\",\"version\":1,\"base\":\"", manifest_digest, "\"}\n");
}

std::string BytecodeKey(absl::string_view manifest_digest) {
  return Sha256Digest(BytecodeKeyDocument(manifest_digest));
}

std::string BytecodeReference(absl::string_view canonical, absl::string_view key) {
  return absl::StrCat(canonical, "+bytecode.", DigestHex(key).substr(0, 12));
}

absl::StatusOr<std::optional<BytecodeRoot>> EnsureBytecodeRoot(Store& store,
                                                               const RunnableImage& image,
                                                               const SandboxRunner& run,
                                                               core::Loosening loosening) {
  std::string key = BytecodeKey(image.manifest_digest);
  BytecodeRoot existing;
  existing.rootfs = store.RootfsPath(key);
  existing.reference = BytecodeReference(image.reference, key);
  if (store.HasRootfs(key)) return std::optional<BytecodeRoot>(existing);
  std::vector<StdlibDir> stdlib = FindUncompiledStdlib(image.rootfs);
  if (stdlib.empty()) return std::optional<BytecodeRoot>();
  ZYGO_ASSIGN_OR_RETURN(UniqueFd lock, LockImageRoot(image.rootfs));
  if (store.HasRootfs(key)) return std::optional<BytecodeRoot>(existing);  // built meanwhile
  ZYGO_ASSIGN_OR_RETURN(BytecodeRoot built, Build(store, image, stdlib, run, loosening));
  return std::optional<BytecodeRoot>(std::move(built));
}

}  // namespace zygo::images
