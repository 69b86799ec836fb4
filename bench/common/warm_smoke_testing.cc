#include "bench/common/warm_smoke_testing.h"

#include <sys/stat.h>

#include <regex>

#include "gtest/gtest.h"

namespace zygo::bench {

bool Has(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex(pattern));
}

testing::RunResult RunBench(const std::vector<std::string>& args, int timeout_seconds) {
  std::vector<std::string> argv = {testing::ZygoPath(), "bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::RunOptions options;
  options.timeout_seconds = timeout_seconds;
  return testing::RunOnHost(argv, options);
}

void ExpectScratchDirsGone(const std::string& out) {
  const std::regex scratch("/tmp/zygo-(bench|supervisor)-[A-Za-z0-9]{6}");
  int named = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), scratch);
       it != std::sregex_iterator(); ++it, ++named) {
    struct stat st;
    EXPECT_NE(stat(it->str().c_str(), &st), 0) << it->str() << " was left behind";
  }
  EXPECT_GT(named, 0) << "the report names no scratch directory:\n" << out;
}

}  // namespace zygo::bench
