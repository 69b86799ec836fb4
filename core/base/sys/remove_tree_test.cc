#include "core/base/sys/remove_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zygo::base::sys {
namespace {

namespace fs = std::filesystem;

class RemoveTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(getenv("TEST_TMPDIR")) /
            absl::StrCat("remove_tree_", getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(base_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory() && !it->is_symlink()) chmod(it->path().c_str(), 0700);
    }
    fs::remove_all(base_, ec);
  }

  static void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  fs::path base_;
};

TEST_F(RemoveTreeTest, NothingThereIsOk) {
  EXPECT_TRUE(RemoveTree((base_ / "absent").string()).ok());
}

TEST_F(RemoveTreeTest, AFileGoesAndItsBytesCount) {
  Write(base_ / "f", "12345");
  int64_t bytes = 0;
  ASSERT_TRUE(RemoveTree((base_ / "f").string(), &bytes).ok());
  EXPECT_FALSE(fs::exists(base_ / "f"));
  EXPECT_EQ(bytes, 5);
}

// As an image layer leaves it: read-only directories, one not even readable.
TEST_F(RemoveTreeTest, ReadOnlyDirectoriesAreRemovedWithEverythingInThem) {
  const fs::path top = base_ / "layer";
  fs::create_directories(top / "usr/lib/python3");
  fs::create_directories(top / "locked/inner");
  Write(top / "usr/lib/python3/a.py", "abc");
  Write(top / "usr/b", "de");
  Write(top / "locked/inner/c", "f");
  chmod((top / "locked/inner").c_str(), 0);
  chmod((top / "locked").c_str(), 0555);
  chmod((top / "usr/lib").c_str(), 0555);
  chmod((top / "usr").c_str(), 0555);
  int64_t bytes = 0;
  absl::Status removed = RemoveTree(top.string(), &bytes);
  ASSERT_TRUE(removed.ok()) << removed;
  EXPECT_FALSE(fs::exists(top));
  EXPECT_EQ(bytes, 6);
}

// A symlink in the tree to a directory outside it (and a tree that is itself a symlink):
// the links go, what they point at stays.
TEST_F(RemoveTreeTest, SymlinksAreRemovedNeverFollowed) {
  const fs::path outside = base_ / "outside";
  fs::create_directories(outside / "keep");
  Write(outside / "keep/precious", "x");
  const fs::path top = base_ / "tree";
  fs::create_directories(top / "sub");
  fs::create_directory_symlink(outside, top / "sub/link");
  fs::create_symlink(outside / "keep/precious", top / "file-link");
  fs::create_directory_symlink(outside, base_ / "top-link");
  ASSERT_TRUE(fs::exists(top / "sub/link/keep/precious"));  // the link leads there

  ASSERT_TRUE(RemoveTree(top.string()).ok());
  ASSERT_TRUE(RemoveTree((base_ / "top-link").string()).ok());
  EXPECT_FALSE(fs::exists(top));
  EXPECT_FALSE(fs::exists(fs::symlink_status(base_ / "top-link")));
  EXPECT_TRUE(fs::exists(outside / "keep/precious"));
}

TEST_F(RemoveTreeTest, RelativeToADirectoryDescriptor) {
  fs::create_directories(base_ / "a/b");
  Write(base_ / "a/b/c", "1");
  int dirfd = open(base_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  EXPECT_TRUE(RemoveTreeAt(dirfd, "a").ok());
  close(dirfd);
  EXPECT_FALSE(fs::exists(base_ / "a"));
}

// A tree a tenant built to run zygo out of file descriptors: refused, not followed down.
TEST_F(RemoveTreeTest, ATooDeepTreeIsRefused) {
  fs::path deep = base_ / "deep";
  fs::create_directories(deep);
  int dirfd = open(deep.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(mkdirat(dirfd, "d", 0700), 0);
    int next = openat(dirfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(dirfd);
    dirfd = next;
  }
  close(dirfd);
  absl::Status removed = RemoveTree(deep.string());
  EXPECT_EQ(removed.code(), absl::StatusCode::kResourceExhausted) << removed;
  EXPECT_TRUE(fs::exists(deep));
}

}  // namespace
}  // namespace zygo::base::sys
