// Limits that hold against a program trying to break them: a fork bomb, a memory
// bomb, and a deadline evader that double-forks, calls setsid, ignores SIGTERM and
// stops itself.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

TEST(LimitsEscape, ForkBombStopsAtThePidsLimit) {
  RunResult attempt = RunProbe({"fork-bomb"}, {"--pids-limit", "32"});
  EXPECT_EQ(Verdict(attempt, "fork-bomb"), "denied EAGAIN") << attempt.out << attempt.err;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"pids_limit\"") << attempt.outcome_json;
  // The probe got some forks (it ran) but fewer than the limit.
  EXPECT_TRUE(absl::StrContains(attempt.out, "INFO forks=")) << attempt.out;
}

TEST(LimitsEscape, MemoryBombIsOomKilled) {
  RunResult control = RunProbe({"memory-bomb", "16"}, {"-m", "64m"});
  ASSERT_EQ(control.exit_code, 0) << control.out << control.err;
  ASSERT_EQ(OutcomeField(control, "oom_killed"), "false");
  RunResult attempt = RunProbe({"memory-bomb", "512"}, {"-m", "64m"});
  EXPECT_EQ(attempt.exit_code, 137) << attempt.out << attempt.err;
  EXPECT_EQ(OutcomeField(attempt, "oom_killed"), "true") << attempt.outcome_json;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"oom\"") << attempt.outcome_json;
  EXPECT_NE(Verdict(attempt, "memory-bomb"), "allowed");
}

// A process of the run is OOM-killed and the command outlives it: the status says oom
// beside oom_killed, and the exit code stays the command's own (0). The status used to
// say "ok" beside "oom_killed": true.
TEST(LimitsEscape, AnOomKillTheCommandOutlivesIsTheRunsStatus) {
  RunResult attempt = RunZygo({"-m", "64m", "-v", ProbePath() + ":/probe:ro"}, "host",
                              {"/bin/sh", "-c", "/probe memory-bomb 512; echo outlived"});
  EXPECT_TRUE(absl::StrContains(attempt.out, "outlived")) << attempt.out << attempt.err;
  EXPECT_EQ(attempt.exit_code, 0) << attempt.err;
  EXPECT_EQ(OutcomeField(attempt, "oom_killed"), "true") << attempt.outcome_json;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"oom\"") << attempt.outcome_json;
}

TEST(LimitsEscape, DeadlineEvadersLeaveNothingBehind) {
  auto start = std::chrono::steady_clock::now();
  std::string marker = "ZYGO_EVADE_MARKER=" + std::to_string(getpid());
  RunResult attempt = RunProbe({"deadline-evade"}, {"--timeout", "1500ms", "-e", marker});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The evaders started (the probe really ran), then the deadline ended them all.
  ASSERT_TRUE(absl::StrContains(attempt.out, "evaders started")) << attempt.out << attempt.err;
  EXPECT_EQ(attempt.exit_code, 137);
  EXPECT_EQ(OutcomeField(attempt, "timed_out"), "true") << attempt.outcome_json;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"timeout\"");
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(ProcessesMatching(marker).empty());
}

TEST(LimitsEscape, KilledZygoTakesTheSandboxWithIt) {
  // zygo is killed with SIGKILL mid-run: its sandbox must not outlive it.
  std::thread killer([] {
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto pids = ProcessesMatching("zygo-orphan-marker");
      for (int pid : pids) {
        // Kill only zygo itself (the command line starts with the zygo binary).
        FILE* f = fopen(("/proc/" + std::to_string(pid) + "/cmdline").c_str(), "r");
        if (f == nullptr) continue;
        char buffer[4096] = {};
        fread(buffer, 1, sizeof(buffer) - 1, f);
        fclose(f);
        if (absl::EndsWith(buffer, "/zygo")) {
          kill(pid, SIGKILL);
          return;
        }
      }
    }
  });
  RunResult run = RunZygo({"--hostname", "zygo-orphan-marker"}, "host", {"/bin/sleep", "31.4159"},
                          RunOptions{.want_outcome = false});
  killer.join();
  EXPECT_EQ(run.term_signal, SIGKILL) << run.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // No sleep of ours remains: it was pid 2 of a namespace whose pid 1 died.
  EXPECT_TRUE(ProcessesMatching("31.4159").empty());
  // The next zygo sweeps the cgroup the killed one could not remove.
  RunResult next = RunZygo({}, "host", {"/bin/true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_TRUE(LeftoverCgroups().empty());
}

}  // namespace
}  // namespace zygo::testing
