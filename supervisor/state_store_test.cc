// Tests for the state store: round trips, restarts, atomic writes and crash leftovers,
// digest checks, script caching.
#include "supervisor/state_store.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/digest.h"

namespace zygo::supervisor {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteAll(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Every name in `dir` (hidden ones too), sorted.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/state-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern).string();
    code_ = root_ + "/code";
    fs::create_directories(code_);
    WriteAll(code_ + "/handler.py", "def main(event):\n    return event\n");
    state_ = root_ + "/state/nested";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<StateStore> OpenStore() {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(state_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  FunctionSpec Spec(const std::string& name, const std::string& extra = "") {
    absl::StatusOr<FunctionSpec> spec =
        ParseFunctionSpec(absl::StrCat("name = \"", name,
                                       "\"\nentry = \"handler.py:main\"\ncode = \"code\"\n", extra),
                          name + ".toml", root_, CodePolicy{});
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : FunctionSpec{};
  }

  std::string root_;
  std::string code_;
  std::string state_;
};

TEST_F(StateStoreTest, OpenCreatesPrivateDirectories) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->dir(), state_);
  for (const std::string& dir : {state_, state_ + "/functions", state_ + "/scripts"}) {
    struct stat st;
    ASSERT_EQ(stat(dir.c_str(), &st), 0) << dir;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u) << dir;
  }
  // An existing state dir with looser permissions is tightened.
  store.reset();
  ASSERT_EQ(chmod(state_.c_str(), 0755), 0);
  store = OpenStore();
  struct stat st;
  ASSERT_EQ(stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(StateStoreTest, OpenRefusesAFile) {
  WriteAll(root_ + "/file", "x");
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(root_ + "/file");
  EXPECT_FALSE(store.ok());
}

TEST_F(StateStoreTest, OpenRefusesADirectoryOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  fs::create_directories(state_);
  ASSERT_EQ(chown(state_.c_str(), 65534, 65534), 0);
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(state_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(store.status().message(), HasSubstr("belongs to uid 65534"));
}

TEST_F(StateStoreTest, FunctionsRoundTripAndSurviveARestart) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  FunctionSpec hello = Spec("hello", "[limits]\nmemory = \"64M\"\n");
  FunctionSpec other = Spec("other");
  ASSERT_TRUE(store->SaveFunction(hello).ok());
  ASSERT_TRUE(store->SaveFunction(other).ok());
  EXPECT_EQ(ReadAll(state_ + "/functions/hello.toml"), hello.source_toml);
  EXPECT_EQ(ReadAll(state_ + "/functions/hello.origin"), "hello.toml\n" + root_ + "\n");
  EXPECT_THAT(Names(state_ + "/functions"),
              ElementsAre("hello.origin", "hello.toml", "other.origin", "other.toml"));

  store.reset();  // the supervisor restarts
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<LoadedFunctions> loaded = store->LoadFunctions(CodePolicy{});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->warnings, IsEmpty());
  ASSERT_THAT(loaded->functions, SizeIs(2));
  const FunctionSpec& back = loaded->functions[0];
  EXPECT_EQ(back.name, "hello");
  EXPECT_EQ(back.memory_bytes, 64LL << 20);
  EXPECT_EQ(back.code, code_);
  EXPECT_EQ(back.origin, "hello.toml");
  EXPECT_EQ(back.base_dir, root_);
  EXPECT_EQ(back.source_toml, hello.source_toml);
  EXPECT_EQ(loaded->functions[1].name, "other");
}

TEST_F(StateStoreTest, SaveReplacesAndRemoveDeletes) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveFunction(Spec("hello")).ok());
  ASSERT_TRUE(store->SaveFunction(Spec("hello", "spares = 5\n")).ok());
  absl::StatusOr<LoadedFunctions> loaded = store->LoadFunctions(CodePolicy{});
  ASSERT_TRUE(loaded.ok());
  ASSERT_THAT(loaded->functions, SizeIs(1));
  EXPECT_EQ(loaded->functions[0].spares, 5);

  EXPECT_TRUE(store->RemoveFunction("hello").ok());
  EXPECT_THAT(Names(state_ + "/functions"), IsEmpty());
  EXPECT_EQ(store->RemoveFunction("hello").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->RemoveFunction("../scripts/x").code(), absl::StatusCode::kInvalidArgument);
  loaded = store->LoadFunctions(CodePolicy{});
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(loaded->functions, IsEmpty());
}

TEST_F(StateStoreTest, SaveRefusesBadNamesAndMultiLineOrigins) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  FunctionSpec spec = Spec("hello");
  spec.name = "../escape";
  EXPECT_EQ(store->SaveFunction(spec).code(), absl::StatusCode::kInvalidArgument);
  spec = Spec("hello");
  spec.origin = "a\nb";
  EXPECT_EQ(store->SaveFunction(spec).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Names(state_ + "/functions"), IsEmpty());
  EXPECT_THAT(Names(root_), ElementsAre("code", "state"));  // nothing escaped either
}

TEST_F(StateStoreTest, BrokenFilesAreWarningsNotFatal) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveFunction(Spec("good")).ok());
  ASSERT_TRUE(store->SaveFunction(Spec("gone")).ok());
  ASSERT_TRUE(store->SaveFunction(Spec("renamed")).ok());
  const std::string dir = state_ + "/functions";
  WriteAll(dir + "/bad.toml", "name = \"bad\"\nentry = 3\n");
  WriteAll(dir + "/bad.origin", "bad.toml\n" + root_ + "\n");
  WriteAll(dir + "/noorigin.toml", "name = \"noorigin\"\n");
  fs::remove(dir + "/gone.origin");
  WriteAll(dir + "/renamed.toml",
           "name = \"good\"\nentry = \"handler.py:main\"\ncode = \"code\"\n");
  WriteAll(dir + "/stray.origin", "x\ny\n");  // a crash between RemoveFunction's two unlinks

  absl::StatusOr<LoadedFunctions> loaded = store->LoadFunctions(CodePolicy{});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(loaded->functions, SizeIs(1));
  EXPECT_EQ(loaded->functions[0].name, "good");
  ASSERT_THAT(loaded->warnings, SizeIs(4));
  EXPECT_THAT(loaded->warnings[0], HasSubstr("bad.toml: not loaded: bad.toml:2: entry: "));
  EXPECT_THAT(loaded->warnings[1], HasSubstr("gone.toml: not loaded: "));
  EXPECT_THAT(loaded->warnings[2], HasSubstr("noorigin.toml: not loaded: "));
  EXPECT_THAT(loaded->warnings[3],
              HasSubstr("renamed.toml: not loaded: renamed.toml names the function \"good\""));
}

// A function registered before its code was refused (code = "/", or inside the state dir)
// is not served again after a restart; the others are.
TEST_F(StateStoreTest, LoadSkipsStoredSpecsWhoseCodeIsNowRefused) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveFunction(Spec("good")).ok());
  const std::string dir = state_ + "/functions";
  WriteAll(dir + "/root.toml", "name = \"root\"\nentry = \"handler.py:main\"\ncode = \"/\"\n");
  WriteAll(dir + "/root.origin", "root.toml\n" + root_ + "\n");
  fs::create_directories(state_ + "/peek");
  WriteAll(state_ + "/peek/handler.py", "def main(event):\n    return 1\n");
  WriteAll(dir + "/peek.toml", "name = \"peek\"\nentry = \"handler.py:main\"\ncode = \"peek\"\n");
  WriteAll(dir + "/peek.origin", "peek.toml\n" + state_ + "\n");
  CodePolicy policy;
  policy.private_dirs.push_back({state_, "the state directory", true});

  absl::StatusOr<LoadedFunctions> loaded = store->LoadFunctions(policy);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(loaded->functions, SizeIs(1));
  EXPECT_EQ(loaded->functions[0].name, "good");
  ASSERT_THAT(loaded->warnings, SizeIs(2));
  EXPECT_THAT(loaded->warnings[0],
              HasSubstr("peek.toml: not loaded: peek.toml:3: code: \"peek\": " + state_ +
                        "/peek lies inside the state directory"));
  EXPECT_THAT(loaded->warnings[1],
              HasSubstr("root.toml: not loaded: root.toml:3: code: \"/\": / is the host's root"));
}

// A pid that no process has any more: a child that has exited and been reaped.
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status;
  waitpid(pid, &status, 0);
  return pid;
}

TEST_F(StateStoreTest, NoTempFilesLeftAndDeadWritersLeftoversAreCleaned) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->SaveFunction(Spec("hello")).ok());
  absl::StatusOr<std::string> digest = store->PutScript("print(1)\n");
  ASSERT_TRUE(digest.ok());
  EXPECT_THAT(Names(state_ + "/functions"), ElementsAre("hello.origin", "hello.toml"));
  EXPECT_THAT(Names(state_ + "/scripts"), ElementsAre(images::DigestHex(*digest) + ".py"));

  // A supervisor killed mid-write leaves its temp files; one still running does not
  // lose its own (this process's start time is read the way the store reads it).
  store.reset();
  const std::string dead = absl::StrCat(".tmp-", DeadPid(), "-12345-00000000deadbeef-hello.toml");
  const std::string garbled = ".tmp-garbled";
  WriteAll(state_ + "/functions/" + dead, "name = \"half");
  WriteAll(state_ + "/functions/" + garbled, "");
  WriteAll(state_ + "/scripts/" + dead, "half a script");
  std::string stat_line = ReadAll("/proc/self/stat");
  std::vector<std::string> fields = absl::StrSplit(stat_line.substr(stat_line.rfind(')') + 2), ' ');
  const std::string live =
      absl::StrCat(".tmp-", getpid(), "-", fields[19], "-00000000cafef00d-other.toml");
  WriteAll(state_ + "/functions/" + live, "in progress");

  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Names(state_ + "/functions"), ElementsAre(live, "hello.origin", "hello.toml"));
  EXPECT_THAT(Names(state_ + "/scripts"), ElementsAre(images::DigestHex(*digest) + ".py"));
  absl::StatusOr<LoadedFunctions> loaded = store->LoadFunctions(CodePolicy{});
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(loaded->warnings, IsEmpty());  // temp files are never taken for specs
  ASSERT_THAT(loaded->functions, SizeIs(1));
  EXPECT_EQ(store->ScriptCount(), 1u);
}

TEST_F(StateStoreTest, ScriptsRoundTripIdempotentlyAndSurviveARestart) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string source = "def main(event):\n    return 42\n";
  absl::StatusOr<std::string> digest = store->PutScript(source);
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, images::Sha256Digest(source));
  EXPECT_TRUE(images::ValidateDigest(*digest).ok());
  const std::string path = state_ + "/scripts/" + images::DigestHex(*digest) + ".py";
  EXPECT_EQ(ReadAll(path), source);
  struct stat first;
  ASSERT_EQ(stat(path.c_str(), &first), 0);
  EXPECT_EQ(first.st_mode & 0777, 0600u);

  absl::StatusOr<std::string> again = store->PutScript(source);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *digest);
  struct stat second;
  ASSERT_EQ(stat(path.c_str(), &second), 0);
  EXPECT_EQ(second.st_ino, first.st_ino);  // not rewritten
  EXPECT_EQ(store->ScriptCount(), 1u);

  absl::StatusOr<std::string> empty = store->PutScript("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(store->ScriptCount(), 2u);

  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->ScriptCount(), 2u);
  absl::StatusOr<std::string> back = store->GetScript(*digest);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, source);
  back = store->GetScript(*empty);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "");
}

TEST_F(StateStoreTest, ScriptsAreServedFromMemoryAfterTheFirstRead) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::string> digest = store->PutScript("x = 1\n");
  ASSERT_TRUE(digest.ok());
  const std::string path = state_ + "/scripts/" + images::DigestHex(*digest) + ".py";

  // A fresh store has read nothing yet; its first GetScript reads the disk.
  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->GetScript(*digest).ok());
  ASSERT_TRUE(fs::remove(path));
  absl::StatusOr<std::string> cached = store->GetScript(*digest);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(*cached, "x = 1\n");

  // Another fresh store finds neither file nor cache.
  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->ScriptCount(), 0u);
  EXPECT_EQ(store->GetScript(*digest).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StateStoreTest, ACorruptedScriptIsDataLoss) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::string> digest = store->PutScript("x = 1\n");
  ASSERT_TRUE(digest.ok());
  store.reset();
  WriteAll(state_ + "/scripts/" + images::DigestHex(*digest) + ".py", "import os\n");
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetScript(*digest).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StateStoreTest, BadDigestsAreRefused) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  WriteAll(state_ + "/secret.py", "secret");
  const std::string hex(64, 'a');
  for (const std::string& bad :
       {std::string(""), hex, "sha256:" + hex.substr(1), "sha256:" + std::string(64, 'A'),
        "sha512:" + hex, std::string("sha256:../secret"), "sha256:" + hex.substr(2) + "/.",
        "sha256:../../" + hex.substr(6), "sha256:" + hex + ".py"}) {
    EXPECT_EQ(store->GetScript(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(store->GetScript("sha256:" + hex).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StateStoreTest, OversizedScriptsAreRefused) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->PutScript(std::string(kMaxScriptBytes, '#')).ok());
  EXPECT_EQ(store->PutScript(std::string(kMaxScriptBytes + 1, '#')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ScriptCount(), 1u);
}

TEST_F(StateStoreTest, ConcurrentPutsAndGetsAgree) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 20; ++i) {
        std::string source = absl::StrCat("n = ", i % 5, "\n");
        absl::StatusOr<std::string> digest = store->PutScript(source);
        ASSERT_TRUE(digest.ok()) << t;
        absl::StatusOr<std::string> back = store->GetScript(*digest);
        ASSERT_TRUE(back.ok());
        EXPECT_EQ(*back, source);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(store->ScriptCount(), 5u);
  EXPECT_THAT(Names(state_ + "/scripts"), SizeIs(5));
}

TEST(StateDirTest, DefaultsFollowRootThenXdgThenHome) {
  EXPECT_EQ(*StateDirFor(true, "/x", "/home/u"), "/var/lib/zygo/supervisor");
  EXPECT_EQ(*StateDirFor(false, "/x/state", "/home/u"), "/x/state/zygo/supervisor");
  EXPECT_EQ(*StateDirFor(false, "", "/home/u"), "/home/u/.local/state/zygo/supervisor");
  EXPECT_EQ(*StateDirFor(false, "relative", "/home/u"), "/home/u/.local/state/zygo/supervisor");
  EXPECT_EQ(StateDirFor(false, "", "").status().code(), absl::StatusCode::kFailedPrecondition);

  absl::StatusOr<std::string> dir = DefaultStateDir();
  ASSERT_TRUE(dir.ok()) << dir.status();
  if (geteuid() == 0) {
    EXPECT_EQ(*dir, "/var/lib/zygo/supervisor");
  } else {
    EXPECT_TRUE(absl::EndsWith(*dir, "/zygo/supervisor")) << *dir;
  }
}

}  // namespace
}  // namespace zygo::supervisor
