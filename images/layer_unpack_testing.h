// Test helpers for layer_unpack tests: tar layers built in the test with libarchive's
// write API, an independent sha256, and tree listings. Test-only.
#ifndef ZYGO_IMAGES_LAYER_UNPACK_TESTING_H_
#define ZYGO_IMAGES_LAYER_UNPACK_TESTING_H_

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zygo::images::testing {

struct TarEntry {
  enum class Type { kFile, kDir, kSymlink, kHardlink, kCharDevice, kFifo };
  std::string name;
  Type type = Type::kFile;
  std::string data;  // kFile contents
  std::string link;  // kSymlink / kHardlink target
  int mode = 0644;
  unsigned major = 0, minor = 0;
  int64_t uid = 0, gid = 0;
  int64_t mtime = 1700000000;
};

inline TarEntry File(std::string name, std::string data, int mode = 0644) {
  return {std::move(name), TarEntry::Type::kFile, std::move(data), "", mode};
}
inline TarEntry Dir(std::string name, int mode = 0755) {
  return {std::move(name), TarEntry::Type::kDir, "", "", mode};
}
inline TarEntry Symlink(std::string name, std::string target) {
  return {std::move(name), TarEntry::Type::kSymlink, "", std::move(target), 0777};
}
inline TarEntry Hardlink(std::string name, std::string target) {
  return {std::move(name), TarEntry::Type::kHardlink, "", std::move(target), 0644};
}
inline TarEntry CharDevice(std::string name, unsigned major, unsigned minor) {
  TarEntry e{std::move(name), TarEntry::Type::kCharDevice, "", "", 0666};
  e.major = major;
  e.minor = minor;
  return e;
}
inline TarEntry Fifo(std::string name) {
  return {std::move(name), TarEntry::Type::kFifo, "", "", 0600};
}

enum class Compression { kNone, kGzip, kZstd };

inline la_ssize_t AppendToString(struct archive*, void* out, const void* data, size_t size) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(data), size);
  return static_cast<la_ssize_t>(size);
}

inline void AddFilter(struct archive* a, Compression compression) {
  if (compression == Compression::kGzip) {
    EXPECT_EQ(archive_write_add_filter_gzip(a), ARCHIVE_OK);
  } else if (compression == Compression::kZstd) {
    EXPECT_EQ(archive_write_add_filter_zstd(a), ARCHIVE_OK);
  }
}

// A pax tar of `entries`, names written exactly as given (libarchive's writer does not
// sanitize them; that is bsdtar's job), padded to the usual 10240-byte record.
inline std::string TarBytes(const std::vector<TarEntry>& entries,
                            Compression compression = Compression::kNone) {
  // libarchive 3.6's pax writer crashes on a non-ASCII UTF-8 name in the "C" locale, so
  // the writer runs in C.UTF-8. UnpackLayer still reads in whatever locale the test has.
  std::string saved_locale = setlocale(LC_CTYPE, nullptr);
  EXPECT_NE(setlocale(LC_CTYPE, "C.UTF-8"), nullptr);
  std::string out;
  struct archive* a = archive_write_new();
  EXPECT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
  AddFilter(a, compression);
  if (compression != Compression::kNone) archive_write_set_bytes_in_last_block(a, 1);
  EXPECT_EQ(archive_write_open(a, &out, nullptr, AppendToString, nullptr), ARCHIVE_OK);
  for (const TarEntry& t : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname_utf8(e, t.name.c_str());
    archive_entry_set_perm(e, static_cast<mode_t>(t.mode));
    archive_entry_set_uid(e, t.uid);
    archive_entry_set_gid(e, t.gid);
    archive_entry_set_mtime(e, t.mtime, 0);
    switch (t.type) {
      case TarEntry::Type::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
        break;
      case TarEntry::Type::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TarEntry::Type::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink_utf8(e, t.link.c_str());
        break;
      case TarEntry::Type::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink_utf8(e, t.link.c_str());
        archive_entry_set_size(e, 0);
        break;
      case TarEntry::Type::kCharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdevmajor(e, t.major);
        archive_entry_set_rdevminor(e, t.minor);
        break;
      case TarEntry::Type::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << t.name << ": " << archive_error_string(a);
    if (t.type == TarEntry::Type::kFile && !t.data.empty()) {
      EXPECT_EQ(archive_write_data(a, t.data.data(), t.data.size()),
                static_cast<la_ssize_t>(t.data.size()));
    }
    archive_entry_free(e);
  }
  EXPECT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
  setlocale(LC_CTYPE, saved_locale.c_str());
  return out;
}

// Compresses `bytes` exactly as they are (libarchive's "raw" format behind a filter), so
// a test knows the uncompressed stream byte for byte.
inline std::string Compress(const std::string& bytes, Compression compression) {
  if (compression == Compression::kNone) return bytes;
  std::string out;
  struct archive* a = archive_write_new();
  EXPECT_EQ(archive_write_set_format_raw(a), ARCHIVE_OK);
  AddFilter(a, compression);
  archive_write_set_bytes_in_last_block(a, 1);
  EXPECT_EQ(archive_write_open(a, &out, nullptr, AppendToString, nullptr), ARCHIVE_OK);
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, "data");
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
  EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK);
  EXPECT_EQ(archive_write_data(a, bytes.data(), bytes.size()),
            static_cast<la_ssize_t>(bytes.size()));
  archive_entry_free(e);
  EXPECT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
  return out;
}

// "sha256:<hex>" computed with EVP directly, independently of images/digest.
inline std::string IndependentSha256(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr), 1);
  std::string hex = "sha256:";
  for (unsigned i = 0; i < len; ++i) absl::StrAppend(&hex, absl::Hex(md[i], absl::kZeroPad2));
  return hex;
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory under TEST_TMPDIR (or /tmp), unique per call.
inline std::string MakeTempDir(const std::string& under = "") {
  std::string base = under;
  if (base.empty()) {
    const char* tmp = getenv("TEST_TMPDIR");
    base = tmp != nullptr ? tmp : "/tmp";
  }
  std::string pattern = base + "/lu.XXXXXX";
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << pattern;
  return pattern;
}

// Every path below `root`, sorted, one line each: "d path 0755", "f path 0644 =data",
// "l path -> target", "c path 1:3", "p path". Never follows symlinks. `skip` (a
// relative path) is listed but not descended into.
inline std::vector<std::string> ListTree(const std::string& root, const std::string& skip = "") {
  namespace fs = std::filesystem;
  std::vector<std::string> lines;
  fs::recursive_directory_iterator it(root), end;
  for (; it != end; ++it) {
    std::string path = it->path().lexically_relative(root).string();
    struct stat st;
    EXPECT_EQ(lstat(it->path().c_str(), &st), 0) << path;
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    if (S_ISDIR(st.st_mode)) {
      lines.push_back(absl::StrCat("d ", path, " ", mode));
      if (path == skip) it.disable_recursion_pending();
    } else if (S_ISREG(st.st_mode)) {
      lines.push_back(absl::StrCat("f ", path, " ", mode, " =", ReadFile(it->path())));
    } else if (S_ISLNK(st.st_mode)) {
      lines.push_back(absl::StrCat("l ", path, " -> ", fs::read_symlink(it->path()).string()));
    } else if (S_ISCHR(st.st_mode)) {
      lines.push_back(absl::StrCat("c ", path, " ", major(st.st_rdev), ":", minor(st.st_rdev)));
    } else {
      lines.push_back(absl::StrCat("p ", path));
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// A test case's directories: `dest` sits two levels below `root` (root/a/b/dest), so a
// symlink "../.." out of dest still lands inside `root`, where Outside() sees it.
struct Sandbox {
  std::string root = MakeTempDir();
  std::string dest = root + "/a/b/dest";
  std::string outside = root + "/outside";           // holds `secret`, a canary file
  std::string layer = MakeTempDir() + "/layer.tar";  // not under root: it changes

  Sandbox() {
    std::filesystem::create_directories(dest);
    std::filesystem::create_directories(outside);
    WriteFile(outside + "/secret", "canary");
  }
  // Everything outside dest; must not change when an unpack is refused.
  std::vector<std::string> Outside() const { return ListTree(root, "a/b/dest"); }
  // Removes and recreates dest, for the next archive of a test.
  void ResetDest() const {
    std::filesystem::remove_all(dest);
    std::filesystem::create_directories(dest);
  }
};

}  // namespace zygo::images::testing

#endif  // ZYGO_IMAGES_LAYER_UNPACK_TESTING_H_
