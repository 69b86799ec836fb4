// Parses `zygo bench cold [flags]`.
#ifndef ZYGO_BENCH_COLD_COLD_FLAGS_H_
#define ZYGO_BENCH_COLD_COLD_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"

namespace zygo::bench {

struct ColdOptions {
  int runs = 200;    // measured runs of each case
  int warmup = 10;   // discarded runs of each case, first
  std::string zygo;  // the zygo binary measured; empty: MeasuredZygo's choice
  std::string bwrap = "/usr/bin/bwrap";
  std::string json_path;  // --json FILE: also write the results there
  bool no_peer = false;   // measure zygo and bare only
  bool help = false;
};

// `argv` starts after the word "cold". Accepts "--flag VALUE" and "--flag=VALUE".
absl::StatusOr<ColdOptions> ParseColdFlags(int argc, char** argv);

// The text `zygo bench cold --help` prints.
const char* ColdUsage();

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COLD_COLD_FLAGS_H_
