#include "core/base/sys/atomic_write.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/sys/fs.h"
#include "gtest/gtest.h"

namespace zygo::base::sys {
namespace {

class AtomicWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(getenv("TEST_TMPDIR"), "/atomic-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    DIR* dir = opendir(dir_.c_str());
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
    return names;
  }
  std::string dir_;
};

TEST_F(AtomicWriteTest, CreatesThenReplacesLeavingNoTempFile) {
  const std::string path = dir_ + "/state.json";
  ASSERT_TRUE(WriteFileAtomically(path, "one", {.mode = 0600, .sync_directory = true}).ok());
  EXPECT_EQ(*ReadFile(path), "one");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(WriteFileAtomically(path, "two, longer").ok());
  EXPECT_EQ(*ReadFile(path), "two, longer");
  EXPECT_EQ(Entries(), std::vector<std::string>{"state.json"});
}

TEST_F(AtomicWriteTest, AFailureLeavesTheOldFileAndNoTemp) {
  const std::string path = dir_ + "/kept";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  // The rename fails: a directory of that name cannot be replaced by a file.
  const std::string target = dir_ + "/a-dir";
  ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((target + "/inside").c_str(), 0755), 0);
  absl::Status refused = WriteFileAtomically(target, "new");
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("rename("), std::string::npos) << refused;
  EXPECT_EQ(*ReadFile(path), "old");
  struct stat st;
  EXPECT_EQ(stat((target + "/inside").c_str(), &st), 0) << "what stood at the path is intact";
  std::vector<std::string> entries = Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"a-dir", "kept"}));
}

TEST_F(AtomicWriteTest, NeverWritesThroughASymlinkAtTheTempPath) {
  const std::string victim = dir_ + "/victim";
  ASSERT_TRUE(WriteFileAtomically(victim, "untouched").ok());
  const std::string temp = dir_ + "/planted";
  ASSERT_EQ(symlink(victim.c_str(), temp.c_str()), 0);
  absl::Status refused = WriteFileAtomically(dir_ + "/out", "payload", {.temp_path = temp});
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(*ReadFile(victim), "untouched");
}

}  // namespace
}  // namespace zygo::base::sys
