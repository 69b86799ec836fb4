// A directory of one's own for each test case, under Bazel's $TEST_TMPDIR, and files in it.
#ifndef ZYGO_TESTING_TEST_DIR_H_
#define ZYGO_TESTING_TEST_DIR_H_

#include <string>

namespace zygo::testing {

// $TEST_TMPDIR/PREFIX<name of the running test> (/tmp when TEST_TMPDIR is unset), emptied
// of what an earlier run left and created afresh.
std::string FreshTestDir(const std::string& prefix = "");

// Writes `content` to `path`, making its parent directories; a test failure naming `path`
// when it cannot.
void WriteTestFile(const std::string& path, const std::string& content);

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_TEST_DIR_H_
