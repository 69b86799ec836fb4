// Volume sources swapped between zygo's check and its mount. Another sandbox that holds a
// volume's parent directory read-write swaps a component of the path (atomically, with
// renameat2 RENAME_EXCHANGE) for a symlink to the host's root as the setup child sees it
// (/oldroot/...). Resolved again by path in the child, the swap bound a host directory
// outside the volume (in 59 of 300 runs, read-write). Opened once without following any
// symlink and checked to be the inode the parent saw, the swap is refused instead.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

namespace fs = std::filesystem;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

struct Tally {
  int inside = 0;           // the victim saw its own volume
  int escaped = 0;          // the victim saw the host directory outside it
  int refused_changed = 0;  // zygo saw the swap between check and mount, and refused
  int refused_other = 0;    // refused before any clone (the parent saw the symlink)
};

class VolumeRace : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/zygo-race-XXXXXX";
    ASSERT_NE(mkdtemp(root_.data()), nullptr);
    chmod(root_.c_str(), 0755);
    // The attacker's volume, with the victim's sources under the component it swaps.
    fs::create_directories(root_ + "/shared/a/vol");
    WriteFile(root_ + "/shared/a/vol/inside-marker", "");
    WriteFile(root_ + "/shared/a/file-vol", "inside\n");
    // What the symlink leads to in the setup child's view: a host directory outside it.
    fs::create_directories(root_ + "/outside/vol");
    WriteFile(root_ + "/outside/vol/outside-marker", "");
    WriteFile(root_ + "/outside/file-vol", "OUTSIDE\n");
    fs::create_directory_symlink(absl::StrCat("/oldroot", root_, "/outside"),
                                 root_ + "/shared/swap");
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // The attacker swaps /shared/a and /shared/swap until /shared/stop exists.
  void StartAttacker() {
    attacker_ = std::thread([this] {
      attack_ = RunProbe({"exchange-loop", "/shared/a", "/shared/swap", "600000", "/shared/stop"},
                         {"-v", root_ + "/shared:/shared:rw"}, RunOptions{.want_outcome = false});
    });
    // Running once the swaps have begun.
    for (int i = 0; i < 400; ++i) {
      if (fs::is_symlink(root_ + "/shared/a")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "the attacker never swapped";
  }
  void StopAttacker() {
    WriteFile(root_ + "/shared/stop", "");
    attacker_.join();
  }

  void Count(const RunResult& run, const std::string& inside, const std::string& outside,
             Tally* tally) {
    if (absl::StrContains(run.out, outside)) {
      ++tally->escaped;
    } else if (absl::StrContains(run.out, inside)) {
      ++tally->inside;
    } else if (absl::StrContains(run.err, "it changed after zygo checked it")) {
      ++tally->refused_changed;
    } else {
      EXPECT_EQ(run.exit_code, 125) << run.out << run.err;
      ++tally->refused_other;
    }
  }

  std::string root_;
  std::thread attacker_;
  RunResult attack_;
};

TEST_F(VolumeRace, ASwappedComponentNeverBindsAHostPathOutsideTheVolume) {
  // Control: with the component swapped for good, the same source path leads outside the
  // volume in the setup child's view; zygo refuses it before any clone, as the parent sees
  // a symlink that leads nowhere on the host.
  fs::rename(root_ + "/shared/a", root_ + "/shared/a.real");
  fs::rename(root_ + "/shared/swap", root_ + "/shared/a");
  RunResult swapped = RunZygo({"-v", root_ + "/shared/a/vol:/v:ro"}, "host", {"/bin/ls", "/v"});
  EXPECT_EQ(swapped.exit_code, 125) << swapped.out << swapped.err;
  fs::rename(root_ + "/shared/a", root_ + "/shared/swap");
  fs::rename(root_ + "/shared/a.real", root_ + "/shared/a");

  StartAttacker();
  Tally dirs, files;
  for (int i = 0; i < 300; ++i) {
    // Every other run read-write, writing into what it got: the worst the old path allowed.
    bool rw = i % 2 == 1;
    RunResult run = RunZygo({"-v", root_ + "/shared/a/vol:/v:" + (rw ? "rw" : "ro")}, "host",
                            {"/bin/sh", "-c", rw ? "ls /v; touch /v/victim-wrote" : "ls /v"},
                            RunOptions{.want_outcome = false});
    Count(run, "inside-marker", "outside-marker", &dirs);
  }
  for (int i = 0; i < 200; ++i) {
    RunResult run = RunZygo({"-v", root_ + "/shared/a/file-vol:/f:ro"}, "host", {"/bin/cat", "/f"},
                            RunOptions{.want_outcome = false});
    Count(run, "inside", "OUTSIDE", &files);
  }
  StopAttacker();
  EXPECT_TRUE(absl::StrContains(attack_.out, "INFO swaps=")) << attack_.out << attack_.err;
  // The race was run: some runs got their own volume, and in some the swap fell between
  // the check and the mount (before the fix, those were the escapes).
  EXPECT_GT(dirs.inside, 0);
  EXPECT_GT(files.inside, 0);
  EXPECT_GT(dirs.refused_changed + files.refused_changed, 0)
      << "no run hit the window between check and mount";
  EXPECT_EQ(dirs.escaped, 0) << "host directory bound in " << dirs.escaped << " of 300 runs";
  EXPECT_EQ(files.escaped, 0) << "host file bound in " << files.escaped << " of 200 runs";
  // Nothing was written outside the volume.
  int outside_entries = 0;
  for (const auto& entry : fs::directory_iterator(root_ + "/outside/vol")) {
    EXPECT_EQ(entry.path().filename(), "outside-marker");
    ++outside_entries;
  }
  EXPECT_EQ(outside_entries, 1);
  RecordProperty("dirs_inside", dirs.inside);
  RecordProperty("dirs_refused_changed", dirs.refused_changed);
  RecordProperty("files_refused_changed", files.refused_changed);
  printf("dirs: %d inside, %d refused as changed, %d refused early, %d escaped\n", dirs.inside,
         dirs.refused_changed, dirs.refused_other, dirs.escaped);
  printf("files: %d inside, %d refused as changed, %d refused early, %d escaped\n", files.inside,
         files.refused_changed, files.refused_other, files.escaped);
}

}  // namespace
}  // namespace zygo::testing
