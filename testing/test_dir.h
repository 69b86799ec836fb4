// A directory of one's own for each test case, under Bazel's $TEST_TMPDIR, and files in it.
#ifndef ZYGO_TESTING_TEST_DIR_H_
#define ZYGO_TESTING_TEST_DIR_H_

#include <sys/types.h>

#include <string>

namespace zygo::testing {

// $TEST_TMPDIR/PREFIX<name of the running test> (/tmp when TEST_TMPDIR is unset), emptied
// of what an earlier run left and created afresh.
std::string FreshTestDir(const std::string& prefix = "");

// Writes `content` to `path`, making its parent directories; a test failure naming `path`
// when it cannot.
void WriteTestFile(const std::string& path, const std::string& content);

// The whole content of `path`; "" when it cannot be read.
std::string ReadTestFile(const std::string& path);

// The inode `path` names itself (lstat), 0 when there is none: two names of one file.
ino_t TestFileInode(const std::string& path);

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_TEST_DIR_H_
