// FlattenLayers over layers unpacked by UnpackLayer from tars built here: whiteouts,
// opaque directories, type changes between layers, hard links, modes, the copy fallback,
// and that symlinks in lower layers never redirect a write. Unprivileged.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/layer_flatten.h"
#include "images/layer_unpack.h"
#include "images/layer_unpack_testing.h"

namespace zygo::images {
namespace {

using testing::Dir;
using ::testing::ElementsAre;
using testing::File;
using testing::Hardlink;
using testing::ListTree;
using testing::Sandbox;
using testing::Symlink;
using testing::TarEntry;

// Unpacks each of `layers` into its own directory under `under` (default: next to
// dest), bottom first, and returns the directories.
std::vector<std::string> UnpackAll(const Sandbox& box,
                                   const std::vector<std::vector<TarEntry>>& layers,
                                   const std::string& under = "") {
  std::vector<std::string> dirs;
  for (const std::vector<TarEntry>& layer : layers) {
    std::string dir = testing::MakeTempDir(under);
    testing::WriteFile(box.layer, testing::TarBytes(layer, testing::Compression::kGzip));
    absl::StatusOr<UnpackResult> result = UnpackLayer(box.layer, dir);
    EXPECT_TRUE(result.ok()) << result.status();
    dirs.push_back(dir);
  }
  return dirs;
}

struct stat Lstat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(FlattenLayersTest, AppliesWhiteoutsAndOpaqueDirectoriesAcrossThreeLayers) {
  Sandbox box;
  std::vector<std::string> layers = UnpackAll(
      box, {
               {Dir("etc"), File("etc/a", "a1"), File("etc/b", "b1"), File("etc/sub/c", "c1"),
                File("var/keep", "k1"), File("opq/x", "x1"), File("opq/y/z", "z1"),
                File("gone/deep/file", "g1")},
               {File(".wh.gone", ""), File("etc/.wh.a", ""), File("opq/.wh..wh..opq", ""),
                File("opq/new", "n2"), File("etc/sub/d", "d2"), File(".wh.never-existed", "")},
               {File("etc/.wh.sub", ""), File("etc/a", "a3"), File("opq/y2", "y3"),
                File("gone/again", "g3"), File("var/.wh..wh..opq", "")},
           });
  ASSERT_TRUE(FlattenLayers(layers, box.dest).ok());
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d etc 0755", "d gone 0755", "d opq 0755", "d var 0755",
                          "f etc/a 0644 =a3", "f etc/b 0644 =b1", "f gone/again 0644 =g3",
                          "f opq/new 0644 =n2", "f opq/y2 0644 =y3"));
}

TEST(FlattenLayersTest, ReplacesFilesWithDirectoriesAndBack) {
  Sandbox box;
  std::vector<std::string> layers = UnpackAll(
      box,
      {
          {File("p", "file"), File("q/inner", "i1"), Symlink("s", "target"), File("r", "file")},
          {File("p/child", "c2"), File("q", "now a file"), File("s/in", "s2")},
          {File("p", "file again"), File("q/back", "b3")},
      });
  ASSERT_TRUE(FlattenLayers(layers, box.dest).ok());
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d q 0755", "d s 0755", "f p 0644 =file again", "f q/back 0644 =b3",
                          "f r 0644 =file", "f s/in 0644 =s2"));
}

TEST(FlattenLayersTest, SharesInodesWithTheLayerAndKeepsHardLinks) {
  Sandbox box;
  std::vector<std::string> layers =
      UnpackAll(box, {{File("bin/tool", "t", 04755), Hardlink("bin/alias", "bin/tool"),
                       Symlink("bin/sh", "tool"), Dir("ro", 0555), File("ro/f", "r")},
                      {Dir("ro", 0511), File("ro/added", "later")}});
  ASSERT_TRUE(FlattenLayers(layers, box.dest).ok());
  struct stat tool = Lstat(box.dest + "/bin/tool");
  EXPECT_EQ(tool.st_ino, Lstat(layers[0] + "/bin/tool").st_ino);
  EXPECT_EQ(tool.st_ino, Lstat(box.dest + "/bin/alias").st_ino);
  EXPECT_EQ(tool.st_mode & 07777, 04755);
  // The upper layer's directory metadata wins (as in overlayfs), and the read-only
  // directory still took the upper layer's file.
  EXPECT_EQ(Lstat(box.dest + "/ro").st_mode & 07777, 0511);
  EXPECT_EQ(Lstat(box.dest + "/ro").st_mtime, 1700000000);
  EXPECT_EQ(testing::ReadFile(box.dest + "/ro/added"), "later");
  EXPECT_EQ(std::filesystem::read_symlink(box.dest + "/bin/sh"), "tool");
}

TEST(FlattenLayersTest, CopiesAcrossFilesystemsAndKeepsHardLinks) {
  Sandbox box;
  struct stat shm, tmp;
  if (stat("/dev/shm", &shm) != 0 || access("/dev/shm", W_OK) != 0 ||
      stat(box.root.c_str(), &tmp) != 0 || shm.st_dev == tmp.st_dev) {
    GTEST_SKIP() << "needs a writable /dev/shm on another filesystem than TEST_TMPDIR";
  }
  std::string under = testing::MakeTempDir("/dev/shm");
  std::vector<std::string> layers =
      UnpackAll(box, {{File("f", "content", 0640), Hardlink("g", "f"), Dir("d", 0700)}}, under);
  absl::Status status = FlattenLayers(layers, box.dest);
  std::filesystem::remove_all(under);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d d 0700", "f f 0640 =content", "f g 0640 =content"));
  EXPECT_EQ(Lstat(box.dest + "/f").st_ino, Lstat(box.dest + "/g").st_ino);
  EXPECT_EQ(Lstat(box.dest + "/f").st_nlink, 2u);
  EXPECT_EQ(Lstat(box.dest + "/f").st_mtime, 1700000000);
}

TEST(FlattenLayersTest, NeverWritesThroughALowerLayersSymlink) {
  Sandbox box;
  std::vector<std::string> before = box.Outside();
  // Every upper entry below names a path that, followed through the lower layer's
  // symlink, would be inside box.outside.
  std::vector<std::string> layers = UnpackAll(
      box, {
               {Symlink("etc", box.outside), Symlink("up", "../../../outside"),
                Symlink("w", box.outside), Symlink("o", box.outside), Symlink("gone", box.outside)},
               {File("etc/secret", "evil"), File("up/planted", "evil"), File("w/.wh.secret", ""),
                File("o/.wh..wh..opq", ""), File(".wh.gone", "")},
           });
  ASSERT_TRUE(FlattenLayers(layers, box.dest).ok());
  EXPECT_EQ(box.Outside(), before);
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d etc 0755", "d o 0755", "d up 0755", "d w 0755",
                          "f etc/secret 0644 =evil", "f up/planted 0644 =evil"));
}

TEST(FlattenLayersTest, MissingLayerFails) {
  Sandbox box;
  absl::Status status = FlattenLayers({box.root + "/no-such-layer"}, box.dest);
  EXPECT_FALSE(status.ok());
}

}  // namespace
}  // namespace zygo::images
