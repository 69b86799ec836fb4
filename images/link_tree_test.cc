// LinkTree and RemoveTree on small trees in the test's scratch directory.
#include "images/link_tree.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/sys/remove_tree.h"
#include "gtest/gtest.h"
#include "testing/test_dir.h"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;

class LinkTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = zygo::testing::FreshTestDir();
    fs::create_directories(dir_ + "/src");
  }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/src/" + rel).parent_path());
    std::ofstream(dir_ + "/src/" + rel) << text;
  }
  static struct stat Lstat(const std::string& path) {
    struct stat st = {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st;
  }
  std::string dir_;
};

TEST_F(LinkTreeTest, LinksFilesAndRecreatesDirectoriesAndSymlinks) {
  Write("usr/lib/python3.11/os.py", "import sys\n");
  Write("etc/passwd", "root:x:0:0::/root:/bin/sh\n");
  fs::create_symlink("usr/lib", dir_ + "/src/lib");
  fs::create_symlink("/etc/shadow", dir_ + "/src/etc/absolute");  // never followed
  fs::create_directories(dir_ + "/src/empty");
  chmod((dir_ + "/src/usr/lib/python3.11").c_str(), 0555);
  chmod((dir_ + "/src/etc/passwd").c_str(), 0600);

  absl::StatusOr<LinkTreeStats> stats = LinkTree(dir_ + "/src", dir_ + "/dest");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->linked, 4);  // two files, two symlinks
  EXPECT_EQ(stats->copied, 0);
  EXPECT_EQ(stats->directories, 6);  // the top, usr, usr/lib, python3.11, etc, empty
  std::string src = dir_ + "/src/", dest = dir_ + "/dest/";
  EXPECT_EQ(Lstat(src + "usr/lib/python3.11/os.py").st_ino,
            Lstat(dest + "usr/lib/python3.11/os.py").st_ino);
  EXPECT_EQ(Lstat(dest + "etc/passwd").st_mode & 07777, 0600u);
  EXPECT_NE(Lstat(src + "usr").st_ino, Lstat(dest + "usr").st_ino);  // a new directory
  EXPECT_EQ(Lstat(dest + "usr/lib/python3.11").st_mode & 07777, 0555u);
  EXPECT_TRUE(S_ISLNK(Lstat(dest + "lib").st_mode));
  EXPECT_EQ(fs::read_symlink(dest + "lib"), "usr/lib");
  EXPECT_EQ(fs::read_symlink(dest + "etc/absolute"), "/etc/shadow");
  EXPECT_TRUE(fs::is_directory(dest + "empty"));
  // A new entry in the copy leaves the source alone.
  std::ofstream(dest + "etc/new") << "x";
  EXPECT_FALSE(fs::exists(src + "etc/new"));
}

TEST_F(LinkTreeTest, RefusesAnExistingDestination) {
  Write("a", "a");
  fs::create_directories(dir_ + "/dest");
  absl::StatusOr<LinkTreeStats> stats = LinkTree(dir_ + "/src", dir_ + "/dest");
  EXPECT_FALSE(stats.ok());
  EXPECT_FALSE(LinkTree(dir_ + "/missing", dir_ + "/other").ok());
}

TEST_F(LinkTreeTest, RemoveTreeRemovesReadOnlyDirectoriesButNotThroughSymlinks) {
  Write("ro/deep/file", "x");
  Write("outside/keep", "keep");
  fs::create_symlink(dir_ + "/src/outside", dir_ + "/src/ro/link");
  chmod((dir_ + "/src/ro/deep").c_str(), 0555);
  chmod((dir_ + "/src/ro").c_str(), 0555);
  ASSERT_TRUE(base::sys::RemoveTree(dir_ + "/src/ro").ok());
  EXPECT_FALSE(fs::exists(dir_ + "/src/ro"));
  EXPECT_TRUE(fs::exists(dir_ + "/src/outside/keep"));
  EXPECT_TRUE(base::sys::RemoveTree(dir_ + "/src/ro").ok());  // already gone is fine
}

}  // namespace
}  // namespace zygo::images
