// Tests for where code may come from: every kind of refused directory, and the directories
// beside them that stay allowed.
#include "supervisor/code_policy.h"

#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

using ::testing::HasSubstr;

std::string WhyRefused(const CodePolicy& policy, const std::string& code) {
  absl::Status status = CheckCodeDir(policy, code);
  EXPECT_FALSE(status.ok()) << code;
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << code;
  return std::string(status.message());
}

TEST(CodePolicyTest, TheRootAndSystemDirectoriesAreRefused) {
  const CodePolicy none;
  EXPECT_THAT(WhyRefused(none, "/"), HasSubstr("/ is the host's root directory"));
  for (const char* dir :
       {"/etc",     "/usr",  "/usr/lib", "/usr/lib64", "/usr/local", "/lib", "/lib64", "/libx32",
        "/bin",     "/sbin", "/boot",    "/dev",       "/proc",      "/sys", "/run",   "/var",
        "/var/lib", "/root", "/home",    "/tmp",       "/srv",       "/opt"}) {
    EXPECT_THAT(WhyRefused(none, dir), HasSubstr(absl::StrCat(dir, " is a system directory")));
  }
  for (const char* inside : {"/etc/ssh", "/proc/1", "/sys/fs/cgroup", "/dev/shm", "/run/user/0",
                             "/boot/grub", "/var/log/apt"}) {
    EXPECT_THAT(WhyRefused(none, inside), HasSubstr(" lies inside /"));
  }
  // Controls: folders inside the directories that are refused only as themselves.
  for (const char* allowed : {"/srv/app", "/opt/fn", "/home/me/fn", "/tmp/x", "/usr/share/fn",
                              "/var/lib/fns/hello", "/root/project", "/libraries/x"}) {
    EXPECT_TRUE(CheckCodeDir(none, allowed).ok()) << allowed;
  }
}

TEST(CodePolicyTest, PrivateDirsRootsAndOwnCode) {
  CodePolicy policy;
  policy.private_dirs = {{"/srv/zygo/state", "the state directory", true},
                         {"/srv/zygo/run", "the socket directory", false}};
  EXPECT_THAT(WhyRefused(policy, "/srv/zygo/state/functions"),
              HasSubstr("lies inside the state directory (/srv/zygo/state)"));
  EXPECT_THAT(WhyRefused(policy, "/srv/zygo"), HasSubstr("contains the state directory"));
  EXPECT_THAT(WhyRefused(policy, "/srv/zygo/run"), HasSubstr("is the socket directory"));
  EXPECT_TRUE(CheckCodeDir(policy, "/srv/zygo/run/sub").ok());   // shows no socket
  EXPECT_TRUE(CheckCodeDir(policy, "/srv/zygo/stateful").ok());  // whole components only

  policy.roots = {"/srv/functions"};
  EXPECT_TRUE(CheckCodeDir(policy, "/srv/functions").ok());
  EXPECT_TRUE(CheckCodeDir(policy, "/srv/functions/a/b").ok());
  EXPECT_THAT(WhyRefused(policy, "/srv/functions2"),
              HasSubstr("is outside the directories code may come from (zygo serve --code-root "
                        "/srv/functions)"));
  // A root never lets a system directory through.
  policy.roots.push_back("/etc");
  EXPECT_THAT(WhyRefused(policy, "/etc/ssh"), HasSubstr("lies inside /etc"));

  policy.own_code_dirs = {"/srv/zygo/state/demo"};
  EXPECT_TRUE(CheckCodeDir(policy, "/srv/zygo/state/demo").ok());
  EXPECT_THAT(WhyRefused(policy, "/srv/zygo/state"), HasSubstr("is the state directory"));
}

// A temporary directory as the home of its owner (the password database is not asked).
TEST(CodePolicyTest, TheOwnersHomeIsRefusedAndAFolderInsideItIsNot) {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/home-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string home = ResolvePolicyPath(pattern);
  ASSERT_EQ(mkdir((home + "/project").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((home + "/elsewhere").c_str(), 0755), 0);
  std::filesystem::create_symlink(home, home + "/link");
  // Root gives the directory to another uid: the owner is asked, not the caller.
  const uid_t owner = geteuid() == 0 && chown(home.c_str(), 4242, -1) == 0 ? 4242 : geteuid();
  std::string home_as_written = home;
  CodePolicy policy;
  policy.home_of = [&](uid_t uid) -> std::optional<Home> {
    if (uid != owner) return std::nullopt;
    return Home{"tester", home_as_written};
  };
  EXPECT_THAT(WhyRefused(policy, home),
              HasSubstr(absl::StrCat(home,
                                     " is the home directory of tester; use a folder "
                                     "inside it")));
  home_as_written = home + "/link";  // a home written through a symlink is the same home
  EXPECT_THAT(WhyRefused(policy, home), HasSubstr(" is the home directory of tester"));
  // Controls: a folder inside it; the same directory when its owner's home is elsewhere.
  EXPECT_TRUE(CheckCodeDir(policy, home + "/project").ok());
  home_as_written = home + "/elsewhere";
  EXPECT_TRUE(CheckCodeDir(policy, home).ok());
  std::filesystem::remove_all(home);
}

TEST(CodePolicyTest, TheDefaultHomeIsThePasswordDatabases) {
  const struct passwd* self = getpwuid(geteuid());
  ASSERT_NE(self, nullptr);
  std::optional<Home> home = CodePolicy{}.home_of(geteuid());
  ASSERT_TRUE(home.has_value());
  EXPECT_EQ(home->owner, self->pw_name);
  EXPECT_EQ(home->dir, self->pw_dir);
}

TEST(CodePolicyTest, PathsAndRootsResolve) {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/resolve-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string dir = std::filesystem::canonical(pattern).string();
  std::filesystem::create_symlink(dir, dir + "/link");
  EXPECT_EQ(ResolvePolicyPath(dir + "/link"), dir);
  EXPECT_EQ(ResolvePolicyPath(dir + "/link/not/yet"), dir + "/not/yet");
  EXPECT_EQ(AbsolutePath(dir), dir);
  EXPECT_EQ(AbsolutePath("."), std::filesystem::current_path().string());
  EXPECT_EQ(AbsolutePath("a/b"), std::filesystem::current_path().string() + "/a/b");
  EXPECT_EQ(*ResolveCodeRoot(dir + "/link/"), dir);
  EXPECT_THAT(ResolveCodeRoot("relative").status().message(), HasSubstr("needs an absolute path"));
  EXPECT_THAT(ResolveCodeRoot(dir + "/missing").status().message(),
              HasSubstr("not an existing directory"));

  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zygo::supervisor
