// Streaming from the fake internet's source, timed inside python, path by path.
#include "bench/net/net_throughput.h"

#include <stdio.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "bench/common/stats.h"
#include "core/base/status_macros.h"

namespace zygo::bench {
namespace {

absl::StatusOr<double> StreamMs(const std::string& out) {
  absl::string_view line = absl::StripTrailingAsciiWhitespace(out);
  double ms = 0;
  if (!absl::ConsumePrefix(&line, "stream_ms ") || !absl::SimpleAtod(line, &ms) || ms <= 0) {
    return absl::InternalError(absl::StrCat("unexpected output '", out, "'"));
  }
  return ms;
}

}  // namespace

absl::StatusOr<std::vector<StreamSamples>> MeasureStreams(const std::vector<StreamPath>& paths,
                                                          int runs, int warmup, int64_t bytes) {
  std::vector<StreamSamples> samples;
  for (const StreamPath& path : paths) samples.push_back({path.label, {}});
  for (int round = 0; round < warmup + runs; ++round) {
    for (size_t k = 0; k < paths.size(); ++k) {
      const size_t i = (k + round) % paths.size();
      absl::StatusOr<std::string> out = CaptureStdout(paths[i].command);
      if (!out.ok()) {
        return absl::InternalError(absl::StrCat(paths[i].label, ": ", out.status().message(),
                                                "\n  command: ", CommandLine(paths[i].command)));
      }
      ZYGO_ASSIGN_OR_RETURN(double ms, StreamMs(*out));
      if (round < warmup) continue;
      samples[i].mib_per_s.push_back(static_cast<double>(bytes) / (1 << 20) / (ms / 1000));
    }
  }
  return samples;
}

absl::Status PrintStreams(const std::vector<StreamSamples>& samples, const std::string& what) {
  printf("\n%s, MiB/s\n", what.c_str());
  printf("%-52s %5s %9s %9s %s\n", "path", "runs", "median", "slowest", "median / machine's");
  double reference = 0;
  for (const StreamSamples& path : samples) {
    ZYGO_ASSIGN_OR_RETURN(Summary summary, Summarize(path.mib_per_s));
    if (reference == 0) reference = summary.p50;
    printf("%s", absl::StrFormat("%-52s %5d %9.1f %9.1f %.2fx\n", path.label, summary.count,
                                 summary.p50, summary.min, summary.p50 / reference)
                     .c_str());
  }
  return absl::OkStatus();
}

}  // namespace zygo::bench
