// A static HTTP file server for the fake internet (testing/fake_internet.h): GET and HEAD
// of the files below a directory the test chooses, one request per connection, and a
// record of what was asked. The fake Debian mirror of the system-package tests.
#ifndef ZYGO_TESTING_FAKE_HTTP_FILES_H_
#define ZYGO_TESTING_FAKE_HTTP_FILES_H_

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/unique_fd.h"

namespace zygo::testing {

// Serves `listener` from a thread of its own until destroyed. Until SetRoot, every
// request gets 404.
class FakeHttpFiles {
 public:
  explicit FakeHttpFiles(base::UniqueFd listener);
  ~FakeHttpFiles();
  FakeHttpFiles(const FakeHttpFiles&) = delete;
  FakeHttpFiles& operator=(const FakeHttpFiles&) = delete;

  // Files are served from `dir` (a path with ".." is 404; symlinks are followed: the
  // directory is the test's own).
  void SetRoot(const std::string& dir);
  // Every request so far as "METHOD /path STATUS", oldest first.
  std::vector<std::string> Requests();

 private:
  void Serve();
  void Answer(base::UniqueFd connection);

  base::UniqueFd listener_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string root_;                   // under mu_
  std::vector<std::string> requests_;  // under mu_
  std::thread thread_;                 // last: it starts once everything above exists
};

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_FAKE_HTTP_FILES_H_
