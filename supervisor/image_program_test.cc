// FindProgramInRoot on fake image roots: PATH order, links resolved inside the root (never
// on the host), what does not count as a program, and the host image's view.
#include "supervisor/image_program.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

class ImageProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/root-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern).string();
  }
  void TearDown() override { fs::remove_all(root_); }

  // A file in the root, executable unless said otherwise.
  void Program(const std::string& path, bool executable = true) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << "#!/bin/sh\n";
    ASSERT_EQ(chmod((root_ + path).c_str(), executable ? 0755 : 0644), 0);
  }
  void Link(const std::string& path, const std::string& target) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    fs::create_symlink(target, root_ + path);
  }
  absl::StatusOr<std::string> Find(const std::string& path = kDefaultPath) {
    return FindProgramInRoot(RootView{root_, {}}, path, "node");
  }

  std::string root_;
};

TEST_F(ImageProgramTest, FirstExecutableOnThePathWins) {
  Program("/usr/bin/node");
  Program("/usr/local/bin/node");
  EXPECT_EQ(Find().value_or("none"), "/usr/local/bin/node");
  EXPECT_EQ(Find("/usr/bin:/usr/local/bin").value_or("none"), "/usr/bin/node");
}

// The official node image's layout: a relative link into /usr/local/lib.
TEST_F(ImageProgramTest, RelativeLinksResolveInsideTheRoot) {
  Program("/usr/local/lib/node/bin/node");
  Link("/usr/local/bin/node", "../lib/node/bin/node");
  EXPECT_EQ(Find().value_or("none"), "/usr/local/lib/node/bin/node");
}

// An absolute link means the image's /opt, and climbing past the root stays at the root:
// the host's own /usr/bin/node (present or not) is never what is found.
TEST_F(ImageProgramTest, AbsoluteAndEscapingLinksStayInTheRoot) {
  Program("/opt/node/bin/node");
  Link("/usr/local/bin/node", "/opt/node/bin/node");
  EXPECT_EQ(Find().value_or("none"), "/opt/node/bin/node");

  fs::remove(root_ + "/usr/local/bin/node");
  Link("/usr/local/bin/node", "../../../../../../../../usr/bin/node");
  EXPECT_TRUE(absl::IsNotFound(Find().status())) << Find().value_or("");
  Program("/usr/bin/node");  // the image's own, which the climb lands on
  EXPECT_EQ(Find("/usr/local/bin").value_or("none"), "/usr/bin/node");
}

// A directory of the PATH that is itself a link (merged /usr: /bin -> usr/bin).
TEST_F(ImageProgramTest, LinkedDirectoriesAreFollowed) {
  Program("/usr/bin/node");
  Link("/bin", "usr/bin");
  EXPECT_EQ(Find("/bin").value_or("none"), "/usr/bin/node");
}

TEST_F(ImageProgramTest, WhatIsNotAProgramIsSkipped) {
  Program("/usr/local/bin/node", /*executable=*/false);
  fs::create_directories(root_ + "/usr/local/sbin/node");
  Link("/usr/sbin/node", "/nowhere/node");
  Link("/sbin/node", "loop");
  Link("/sbin/loop", "node");
  EXPECT_TRUE(absl::IsNotFound(Find().status()));
  Program("/bin/node");  // the control: the same search finds a real one
  EXPECT_EQ(Find().value_or("none"), "/bin/node");
  // Relative PATH entries are not searched, as exec in the sandbox does not.
  EXPECT_TRUE(absl::IsNotFound(Find("bin:usr/bin").status()));
}

TEST_F(ImageProgramTest, NotFoundNamesThePath) {
  absl::StatusOr<std::string> found = Find("/usr/bin:/bin");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().message(), "no node on its PATH (/usr/bin:/bin)");
}

// A view shows only part of the root: a link leaving it dangles.
TEST_F(ImageProgramTest, ALinkOutOfTheViewFindsNothing) {
  Program("/opt/node/bin/node");
  Program("/usr/lib/node");
  Link("/usr/bin/node", "/opt/node/bin/node");
  const RootView view{root_, {"/usr", "/bin"}};
  EXPECT_TRUE(absl::IsNotFound(FindProgramInRoot(view, "/usr/bin", "node").status()));
  fs::remove(root_ + "/usr/bin/node");
  Link("/usr/bin/node", "../lib/node");
  EXPECT_EQ(FindProgramInRoot(view, "/usr/bin", "node").value_or("none"), "/usr/lib/node");
}

TEST_F(ImageProgramTest, HostImageViewAndSandboxPath) {
  const RootView host = ViewOf(core::RootFs::Host());
  EXPECT_EQ(host.dir, "/");
  EXPECT_FALSE(host.visible.empty());
  EXPECT_EQ(ViewOf(core::RootFs::Directory(root_)).dir, root_);
  EXPECT_TRUE(ViewOf(core::RootFs::Directory(root_)).visible.empty());
  // The host's own shell is where the host image shows it.
  absl::StatusOr<std::string> sh = FindProgramInRoot(host, kDefaultPath, "sh");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_TRUE(sh->rfind("/usr/", 0) == 0 || sh->rfind("/bin/", 0) == 0) << *sh;

  core::Spec spec;
  EXPECT_EQ(SandboxPath(spec), kDefaultPath);
  spec.image_env = {"PATH=/usr/local/bin:/usr/bin"};
  EXPECT_EQ(SandboxPath(spec), "/usr/local/bin:/usr/bin");
  spec.env = {"PATH=/opt/bin"};
  EXPECT_EQ(SandboxPath(spec), "/opt/bin");
}

}  // namespace
}  // namespace zygo::supervisor
