// OverlayTree on trees in a test directory: a merged-/usr root's links followed inside the
// root, files replaced, stale bytecode removed, nothing written outside the root, and the
// conflicts dpkg would refuse refused. No privileges.
#include "images/tree_overlay.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "testing/test_dir.h"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using zygo::testing::ReadTestFile;
using zygo::testing::TestFileInode;
using zygo::testing::WriteTestFile;

class TreeOverlay : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = zygo::testing::FreshTestDir();
    root_ = dir_ + "/root";
    tree_ = dir_ + "/tree";
    // A merged-/usr image: /lib is a link, relative as Debian makes it; /bin is absolute.
    fs::create_directories(root_ + "/usr/lib");
    fs::create_directories(root_ + "/usr/bin");
    fs::create_directory_symlink("usr/lib", root_ + "/lib");
    fs::create_directory_symlink("/usr/bin", root_ + "/bin");
    fs::create_directories(tree_);
  }

  std::string dir_, root_, tree_;
};

TEST_F(TreeOverlay, MergesThroughTheRootsLinksAndReplacesFiles) {
  WriteTestFile(root_ + "/usr/lib/old.txt", "old\n");
  WriteTestFile(root_ + "/usr/lib/kept.txt", "kept\n");
  WriteTestFile(tree_ + "/lib/zygo/lib.txt", "from /lib\n");
  WriteTestFile(tree_ + "/bin/tool", "#!/bin/sh\n");
  WriteTestFile(tree_ + "/usr/lib/old.txt", "new\n");
  WriteTestFile(tree_ + "/usr/share/zygo-test/hello.txt", "hello\n");
  fs::create_symlink("hello.txt", tree_ + "/usr/share/zygo-test/link");
  absl::StatusOr<OverlayStats> stats = OverlayTree(tree_, root_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->files, 5);
  // The links are still links, and what the packages put "under" them is in /usr.
  EXPECT_TRUE(fs::is_symlink(root_ + "/lib"));
  EXPECT_TRUE(fs::is_symlink(root_ + "/bin"));
  EXPECT_EQ(ReadTestFile(root_ + "/usr/lib/zygo/lib.txt"), "from /lib\n");
  EXPECT_EQ(ReadTestFile(root_ + "/usr/bin/tool"), "#!/bin/sh\n");
  EXPECT_EQ(ReadTestFile(root_ + "/usr/lib/old.txt"), "new\n");
  EXPECT_EQ(ReadTestFile(root_ + "/usr/lib/kept.txt"), "kept\n");
  EXPECT_EQ(ReadTestFile(root_ + "/usr/share/zygo-test/hello.txt"), "hello\n");
  EXPECT_EQ(fs::read_symlink(root_ + "/usr/share/zygo-test/link"), "hello.txt");
}

TEST_F(TreeOverlay, NothingLandsOutsideTheRoot) {
  // A link of the root that points far out, and one of the tree: the first is resolved
  // inside the root, the second is placed as a link and never followed.
  const std::string outside = dir_ + "/outside";
  fs::create_directories(outside);
  fs::create_directories(root_ + outside);  // where the link leads when resolved in the root
  fs::create_directory_symlink("../../../../" + outside, root_ + "/escape");
  WriteTestFile(tree_ + "/escape/x.txt", "inside\n");
  fs::create_directories(tree_ + "/usr");
  fs::create_directory_symlink(outside, tree_ + "/usr/out");
  absl::StatusOr<OverlayStats> stats = OverlayTree(tree_, root_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(fs::is_empty(outside)) << "written outside the root";
  // RESOLVE_IN_ROOT: "../../../../<outside>" from the root is <root>/<outside>.
  EXPECT_EQ(ReadTestFile(root_ + outside + "/x.txt"), "inside\n");
  EXPECT_TRUE(fs::is_symlink(root_ + "/usr/out"));
}

TEST_F(TreeOverlay, ATreeThatIsALinkIsRefused) {
  const std::string elsewhere = dir_ + "/elsewhere";
  WriteTestFile(elsewhere + "/usr/x.txt", "x");
  fs::remove_all(tree_);
  fs::create_directory_symlink(elsewhere, tree_);
  EXPECT_FALSE(OverlayTree(tree_, root_).ok());
  EXPECT_TRUE(fs::exists(elsewhere + "/usr/x.txt"));
  EXPECT_FALSE(fs::exists(root_ + "/usr/x.txt"));
}

TEST_F(TreeOverlay, AReplacedSourceLosesItsBytecode) {
  const std::string lib = root_ + "/usr/lib/python3.11";
  WriteTestFile(lib + "/json/decoder.py", "old\n");
  WriteTestFile(lib + "/json/__pycache__/decoder.cpython-311.pyc", "stale");
  WriteTestFile(lib + "/json/__pycache__/decoder_x.cpython-311.pyc", "other module");
  WriteTestFile(lib + "/json/__pycache__/scanner.cpython-311.pyc", "untouched");
  WriteTestFile(tree_ + "/usr/lib/python3.11/json/decoder.py", "new\n");
  absl::StatusOr<OverlayStats> stats = OverlayTree(tree_, root_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->stale_pyc, 1);
  EXPECT_FALSE(fs::exists(lib + "/json/__pycache__/decoder.cpython-311.pyc"));
  EXPECT_TRUE(fs::exists(lib + "/json/__pycache__/decoder_x.cpython-311.pyc"));
  EXPECT_TRUE(fs::exists(lib + "/json/__pycache__/scanner.cpython-311.pyc"));
}

TEST_F(TreeOverlay, SetuidBitsAreDropped) {
  WriteTestFile(tree_ + "/usr/bin/su", "x");
  ASSERT_EQ(chmod((tree_ + "/usr/bin/su").c_str(), 06755), 0);
  struct stat st;
  ASSERT_EQ(stat((tree_ + "/usr/bin/su").c_str(), &st), 0);
  ASSERT_EQ(st.st_mode & 06000, 06000u) << "control: the bits were set";
  ASSERT_TRUE(OverlayTree(tree_, root_).ok());
  ASSERT_EQ(stat((root_ + "/usr/bin/su").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST_F(TreeOverlay, ConflictsDpkgWouldRefuseAreRefused) {
  WriteTestFile(root_ + "/usr/share/doc", "a file");
  WriteTestFile(tree_ + "/usr/share/doc/x/copyright", "c");
  absl::StatusOr<OverlayStats> over_file = OverlayTree(tree_, root_);
  EXPECT_TRUE(absl::IsFailedPrecondition(over_file.status())) << over_file.status();
  EXPECT_EQ(over_file.status().message(),
            "/usr/share/doc: a directory of the packages where the image has a file");

  fs::remove_all(tree_);
  fs::create_directories(root_ + "/etc/thing");
  WriteTestFile(tree_ + "/etc/thing", "a file");
  absl::StatusOr<OverlayStats> over_dir = OverlayTree(tree_, root_);
  EXPECT_EQ(over_dir.status().message(),
            "/etc/thing: a file of the packages where the image has a directory");
}

}  // namespace
}  // namespace zygo::images
