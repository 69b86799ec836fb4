// Test helpers shared by the cgroup driver tests: whole-file reads and writes, and a
// fresh scratch directory per test for fake cgroup trees.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_TEST_FILES_H_
#define ZYGO_CORE_INTERNAL_CGROUP_TEST_FILES_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zygo::core::testing {

inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

inline void WriteAll(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

inline int CountSubdirectories(const std::filesystem::path& dir) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) count += entry.is_directory();
  return count;
}

// $TEST_TMPDIR/<suite>-<pid>-<test name>, emptied.
inline std::filesystem::path FreshScratchDir(const std::string& suite) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir =
      std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
      absl::StrCat(suite, "-", ::getpid(), "-",
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace zygo::core::testing

#endif  // ZYGO_CORE_INTERNAL_CGROUP_TEST_FILES_H_
