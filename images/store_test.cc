// The store's layout, atomic commits under races, images.json records, and Prune.
#include "images/store.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// Sets a path's mtime `seconds` into the past, as if a crashed pull had left it long ago.
void Age(const std::string& path, int seconds) {
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = time(nullptr) - seconds;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// Removes a tree that may hold read-only directories.
void ForceRemove(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
  }
  chmod(path.c_str(), 0755);
  fs::remove_all(path, ec);
}

// Runs `body` in a child process and returns its exit code (1 for a failed Status).
template <typename Body>
pid_t Fork(Body body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Makes this process obey file permissions as an ordinary owner does, even as root (the
// tests run as root in CI): drops the capabilities that bypass them. Then checks that a
// read-only directory really refuses a new entry, so a test run under it cannot pass
// vacuously.
bool ObeyPermissions(const std::string& scratch) {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
    data[cap / 32].effective &= ~(1u << (cap % 32));
  }
  if (syscall(SYS_capset, &header, data) != 0) return false;
  std::string dir = scratch + "/read_only_control";
  if (mkdir(dir.c_str(), 0555) != 0) return false;
  int fd = open((dir + "/file").c_str(), O_WRONLY | O_CREAT, 0644);
  return fd < 0 && errno == EACCES;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/store_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    base_ = fs::path(pattern).lexically_normal().string();  // TempDir() ends in '/'

    root_ = base_ + "/home/zygo";
    absl::StatusOr<Store> store = Store::Open(root_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_.emplace(*std::move(store));
  }
  void TearDown() override { ForceRemove(base_); }

  Store& store() { return *store_; }

  // A layer directory as an unpacker leaves it: a file, and a read-only directory.
  std::string MakeLayerTemp(const std::string& content) {
    std::string temp = store().TempPath("layer");
    EXPECT_EQ(mkdir(temp.c_str(), 0755), 0);
    WriteFile(temp + "/content", content);
    EXPECT_EQ(mkdir((temp + "/ro").c_str(), 0755), 0);
    WriteFile(temp + "/ro/file", "12345");
    EXPECT_EQ(chmod((temp + "/ro").c_str(), 0555), 0);
    return temp;
  }

  // Puts a whole image into the store: manifest, config and layer blobs, unpacked
  // layers and a rootfs, then records it.
  ImageRecord AddImage(const std::string& reference, const std::vector<std::string>& layers) {
    ImageRecord record;
    record.reference = reference;
    std::string config = absl::StrCat("{\"config-of\":\"", reference, "\"}");
    record.config_digest = Sha256Digest(config);
    EXPECT_TRUE(store().PutBlob(record.config_digest, config).ok());
    record.size_bytes = config.size();
    for (const std::string& layer : layers) {
      std::string blob = "compressed:" + layer;
      record.layer_digests.push_back(Sha256Digest(blob));
      EXPECT_TRUE(store().PutBlob(record.layer_digests.back(), blob).ok());
      record.size_bytes += blob.size();
      record.diff_ids.push_back(Sha256Digest("uncompressed:" + layer));
      if (!store().HasLayer(record.diff_ids.back())) {
        EXPECT_TRUE(store().CommitLayerDir(record.diff_ids.back(), MakeLayerTemp(layer)).ok());
      }
    }
    std::string manifest = absl::StrCat("{\"manifest-of\":\"", reference, "\"}");
    record.manifest_digest = Sha256Digest(manifest);
    EXPECT_TRUE(store().PutBlob(record.manifest_digest, manifest).ok());
    EXPECT_TRUE(store().CommitRootfsDir(record.manifest_digest, MakeLayerTemp("rootfs")).ok());
    record.created_unix = 1700000000;
    absl::Status recorded = store().Record(record);
    EXPECT_TRUE(recorded.ok()) << recorded;
    return record;
  }

  std::string base_, root_;
  std::optional<Store> store_;
};

TEST_F(StoreTest, OpenCreatesTheLayoutPrivately) {
  for (const char* dir : {"", "/blobs/sha256", "/layers/sha256", "/rootfs/sha256", "/tmp"}) {
    EXPECT_TRUE(fs::is_directory(root_ + dir)) << dir;
  }
  struct stat st;
  ASSERT_EQ(stat(root_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(store().root(), root_);

  // Opening again, through a relative path with a trailing slash, is the same store.
  std::string cwd = fs::current_path().string();
  fs::current_path(base_);
  absl::StatusOr<Store> again = Store::Open("home/./zygo/");
  fs::current_path(cwd);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->root(), root_);

  EXPECT_THAT(Store::Open("").status().message(), HasSubstr("ZYGO_HOME"));
  WriteFile(base_ + "/file", "x");
  EXPECT_FALSE(Store::Open(base_ + "/file").ok());
}

class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    const char* value = getenv(name);
    if (value != nullptr) saved_ = value;
  }
  ~ScopedEnv() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  void Set(const char* value) { value ? setenv(name_, value, 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(StoreDefaultRootTest, FollowsTheDocumentedOrder) {
  ScopedEnv zygo_home("ZYGO_HOME"), xdg("XDG_DATA_HOME"), home("HOME");
  zygo_home.Set("/srv/zygo");
  xdg.Set("/xdg");
  home.Set("/home/u");
  EXPECT_EQ(Store::DefaultRoot(), "/srv/zygo");
  zygo_home.Set(nullptr);
  EXPECT_EQ(Store::DefaultRoot(), "/xdg/zygo");
  xdg.Set("relative/ignored");
  EXPECT_EQ(Store::DefaultRoot(), geteuid() == 0 ? "/var/lib/zygo" : "/home/u/.local/share/zygo");
  xdg.Set(nullptr);
  EXPECT_EQ(Store::DefaultRoot(), geteuid() == 0 ? "/var/lib/zygo" : "/home/u/.local/share/zygo");
  home.Set(nullptr);
  EXPECT_EQ(Store::DefaultRoot(), geteuid() == 0 ? "/var/lib/zygo" : "");
}

TEST_F(StoreTest, PathsAreByDigestAndNeverEscape) {
  std::string digest = Sha256Digest("abc");
  std::string hex = DigestHex(digest);
  EXPECT_EQ(store().BlobPath(digest), root_ + "/blobs/sha256/" + hex);
  EXPECT_EQ(store().LayerPath(digest), root_ + "/layers/sha256/" + hex);
  EXPECT_EQ(store().RootfsPath(digest), root_ + "/rootfs/sha256/" + hex);
  for (const char* bad : {"", "sha256:../../../etc", "sha256:", "md5:abc"}) {
    EXPECT_TRUE(absl::StartsWith(store().BlobPath(bad), root_ + "/blobs/sha256/")) << bad;
    EXPECT_FALSE(absl::StrContains(store().LayerPath(bad), "..")) << bad;
    EXPECT_FALSE(store().HasBlob(bad));
    EXPECT_FALSE(store().HasLayer(bad));
    EXPECT_FALSE(store().HasRootfs(bad));
  }
  std::string a = store().TempPath("blob");
  std::string b = store().TempPath("blob");
  EXPECT_NE(a, b);
  EXPECT_TRUE(absl::StartsWith(a, root_ + "/tmp/blob-"));
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(absl::StartsWith(store().TempPath("../x/y"), root_ + "/tmp/.._x_y-"));
}

TEST_F(StoreTest, PutBlobStoresVerifiedBytes) {
  std::string digest = Sha256Digest("hello");
  EXPECT_FALSE(store().HasBlob(digest));
  EXPECT_EQ(store().ReadBlob(digest).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store().PutBlob(digest, "hello").ok());
  EXPECT_TRUE(store().HasBlob(digest));
  EXPECT_EQ(*store().ReadBlob(digest), "hello");
  ASSERT_TRUE(store().PutBlob(digest, "hello").ok());  // idempotent
  EXPECT_EQ(*store().ReadBlob(digest), "hello");
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());
}

TEST_F(StoreTest, PutBlobRejectsADigestMismatch) {
  std::string digest = Sha256Digest("expected");
  absl::Status status = store().PutBlob(digest, "tampered");
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("digest mismatch"));
  EXPECT_THAT(status.message(), HasSubstr(digest));
  EXPECT_THAT(status.message(), HasSubstr(Sha256Digest("tampered")));
  EXPECT_FALSE(store().HasBlob(digest));
  EXPECT_TRUE(Entries(root_ + "/blobs/sha256").empty());
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());
  EXPECT_EQ(store().PutBlob("sha256:1234", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().ReadBlob("sha256:1234").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, CommitBlobFileMovesOnlyTempFiles) {
  std::string digest = Sha256Digest("downloaded");
  std::string temp = store().TempPath("blob");
  WriteFile(temp, "downloaded");
  ASSERT_TRUE(store().CommitBlobFile(digest, temp).ok());
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(*store().ReadBlob(digest), "downloaded");

  // A second copy of the same blob: the first stays, the temp file goes.
  std::string again = store().TempPath("blob");
  WriteFile(again, "downloaded");
  ASSERT_TRUE(store().CommitBlobFile(digest, again).ok());
  EXPECT_FALSE(fs::exists(again));

  std::string outside = base_ + "/outside";
  WriteFile(outside, "x");
  EXPECT_THAT(store().CommitBlobFile(Sha256Digest("x"), outside).message(),
              HasSubstr("not under the store's tmp/"));
  EXPECT_THAT(store().CommitBlobFile(Sha256Digest("x"), root_ + "/tmp/../../outside").message(),
              HasSubstr("not under the store's tmp/"));
  std::string link = store().TempPath("link");
  ASSERT_EQ(symlink(outside.c_str(), link.c_str()), 0);
  EXPECT_THAT(store().CommitBlobFile(Sha256Digest("x"), link).message(),
              HasSubstr("not a regular file"));
  EXPECT_FALSE(store().HasBlob(Sha256Digest("x")));
  EXPECT_EQ(store().CommitBlobFile(digest, store().TempPath("none")).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, CommitLayerDirRaceBetweenThreadsKeepsOneWholeEntry) {
  for (int round = 0; round < 5; ++round) {
    std::string diff_id = Sha256Digest(absl::StrCat("layer ", round));
    constexpr int kThreads = 8;
    std::vector<std::string> temps;
    for (int i = 0; i < kThreads; ++i) temps.push_back(MakeLayerTemp(absl::StrCat("thread ", i)));
    std::vector<absl::Status> results(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] { results[i] = store().CommitLayerDir(diff_id, temps[i]); });
    }
    for (std::thread& thread : threads) thread.join();
    for (const absl::Status& result : results) EXPECT_TRUE(result.ok()) << result;
    ASSERT_TRUE(store().HasLayer(diff_id));
    EXPECT_THAT(ReadFile(store().LayerPath(diff_id) + "/content"), HasSubstr("thread "));
    EXPECT_EQ(ReadFile(store().LayerPath(diff_id) + "/ro/file"), "12345");
    EXPECT_TRUE(Entries(root_ + "/tmp").empty()) << "round " << round;
  }
}

TEST_F(StoreTest, CommitRaceBetweenProcesses) {
  std::string diff_id = Sha256Digest("shared layer");
  std::string manifest = Sha256Digest("shared manifest");
  std::string blob = "shared blob";
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 6; ++i) {
    std::string layer_temp = MakeLayerTemp(absl::StrCat("process ", i));
    std::string rootfs_temp = MakeLayerTemp(absl::StrCat("process ", i));
    children.push_back(Fork([&] {
      close(go[1]);
      char byte;
      if (read(go[0], &byte, 1) != 0) return false;  // EOF: everyone starts together
      absl::StatusOr<Store> store = Store::Open(root_);
      return store.ok() && store->CommitLayerDir(diff_id, layer_temp).ok() &&
             store->CommitRootfsDir(manifest, rootfs_temp).ok() &&
             store->PutBlob(Sha256Digest(blob), blob).ok();
    }));
  }
  close(go[0]);
  close(go[1]);
  for (pid_t child : children) EXPECT_EQ(Wait(child), 0);
  EXPECT_TRUE(store().HasLayer(diff_id));
  EXPECT_TRUE(store().HasRootfs(manifest));
  EXPECT_EQ(*store().ReadBlob(Sha256Digest(blob)), blob);
  EXPECT_EQ(ReadFile(store().LayerPath(diff_id) + "/ro/file"), "12345");
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());
}

TEST_F(StoreTest, CommitLayerDirRefusesWhatIsNotATempDirectory) {
  std::string diff_id = Sha256Digest("x");
  std::string file = store().TempPath("file");
  WriteFile(file, "x");
  EXPECT_THAT(store().CommitLayerDir(diff_id, file).message(), HasSubstr("not a directory"));
  std::string outside = base_ + "/outside_dir";
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  EXPECT_THAT(store().CommitRootfsDir(diff_id, outside).message(), HasSubstr("not under"));
  std::string link = store().TempPath("link");
  ASSERT_EQ(symlink(outside.c_str(), link.c_str()), 0);
  EXPECT_THAT(store().CommitLayerDir(diff_id, link).message(), HasSubstr("not a directory"));
  EXPECT_EQ(store().CommitLayerDir("sha256:zz", MakeLayerTemp("x")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(store().HasLayer(diff_id));
  EXPECT_FALSE(store().HasRootfs(diff_id));
}

TEST_F(StoreTest, RecordsRoundTrip) {
  EXPECT_TRUE(store().List()->empty());
  EXPECT_FALSE(store().Find("docker.io/library/a:1")->has_value());
  ImageRecord a = AddImage("docker.io/library/a:1", {"base", "a"});
  ImageRecord b = AddImage("127.0.0.1:5000/b:2", {"base"});

  absl::StatusOr<std::optional<ImageRecord>> found = store().Find("docker.io/library/a:1");
  ASSERT_TRUE(found.ok() && found->has_value());
  const ImageRecord& got = **found;
  EXPECT_EQ(got.reference, a.reference);
  EXPECT_EQ(got.manifest_digest, a.manifest_digest);
  EXPECT_EQ(got.config_digest, a.config_digest);
  EXPECT_EQ(got.layer_digests, a.layer_digests);
  EXPECT_EQ(got.diff_ids, a.diff_ids);
  EXPECT_EQ(got.size_bytes, a.size_bytes);
  EXPECT_EQ(got.created_unix, a.created_unix);
  EXPECT_FALSE(store().Find("a:1")->has_value());  // callers canonicalise

  // Recording a reference again replaces its record.
  ImageRecord a2 = AddImage("docker.io/library/a:1", {"base", "a2"});
  absl::StatusOr<std::vector<ImageRecord>> list = store().List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].manifest_digest, a2.manifest_digest);
  EXPECT_EQ((*list)[1].reference, b.reference);

  // Another Store on the same root sees the same records; the file is version 1 JSON.
  absl::StatusOr<Store> other = Store::Open(root_);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->List()->size(), 2u);
  nlohmann::json json = nlohmann::json::parse(ReadFile(root_ + "/images.json"));
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["images"].size(), 2u);

  ASSERT_TRUE(store().Remove("docker.io/library/a:1").ok());
  EXPECT_FALSE(store().Find("docker.io/library/a:1")->has_value());
  EXPECT_TRUE(store().Find("127.0.0.1:5000/b:2")->has_value());
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());
}

TEST_F(StoreTest, RemoveOfAMissingReferenceIsNotFound) {
  absl::Status removed = store().Remove("docker.io/library/nothing:latest");
  EXPECT_EQ(removed.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(removed.message(), HasSubstr("docker.io/library/nothing:latest"));
  AddImage("docker.io/library/x:1", {"x"});
  ASSERT_TRUE(store().Remove("docker.io/library/x:1").ok());
  EXPECT_EQ(store().Remove("docker.io/library/x:1").code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, RecordRefusesAnImageWhoseContentIsMissing) {
  ImageRecord record = AddImage("docker.io/library/x:1", {"x"});
  record.reference = "docker.io/library/y:1";
  record.layer_digests.push_back(Sha256Digest("never stored"));
  absl::Status status = store().Record(record);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(Sha256Digest("never stored")));
  record.layer_digests.pop_back();
  record.diff_ids.push_back(Sha256Digest("never unpacked"));
  EXPECT_EQ(store().Record(record).code(), absl::StatusCode::kFailedPrecondition);
  record.diff_ids.back() = "sha256:bad";
  EXPECT_EQ(store().Record(record).code(), absl::StatusCode::kInvalidArgument);
  record.reference = "";
  EXPECT_EQ(store().Record(record).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().List()->size(), 1u);
}

TEST_F(StoreTest, ConcurrentRecordsFromProcessesAreNotLost) {
  AddImage("docker.io/library/seed:1", {"seed"});
  ImageRecord seed = **store().Find("docker.io/library/seed:1");
  std::vector<pid_t> children;
  for (int i = 0; i < 6; ++i) {
    children.push_back(Fork([&, i] {
      absl::StatusOr<Store> store = Store::Open(root_);
      if (!store.ok()) return false;
      for (int j = 0; j < 10; ++j) {
        ImageRecord record = seed;
        record.reference = absl::StrCat("docker.io/library/p", i, ":", j);
        if (!store->Record(record).ok()) return false;
      }
      return true;
    }));
  }
  for (pid_t child : children) EXPECT_EQ(Wait(child), 0);
  EXPECT_EQ(store().List()->size(), 61u);
}

TEST_F(StoreTest, DamagedImagesJsonIsDataLossAndStopsPrune) {
  std::string blob = Sha256Digest("kept");
  ASSERT_TRUE(store().PutBlob(blob, "kept").ok());
  WriteFile(root_ + "/images.json", "{\"version\": 1, \"images\": [{\"reference\": 5}]}");
  EXPECT_EQ(store().List().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store().Find("x").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store().Prune().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(store().HasBlob(blob));
  WriteFile(root_ + "/images.json", "{\"version\": 2, \"images\": []}");
  EXPECT_THAT(store().List().status().message(), HasSubstr("version 2"));
  WriteFile(root_ + "/images.json", "not json");
  EXPECT_THAT(store().List().status().message(), HasSubstr("images.json is damaged"));
}

TEST_F(StoreTest, PruneFreesUnreferencedEntriesAndKeepsReferencedOnes) {
  ImageRecord kept = AddImage("docker.io/library/kept:1", {"shared", "kept only"});
  ImageRecord gone = AddImage("docker.io/library/gone:1", {"shared", "gone only"});
  // A layer may hold symlinks that point out of the store; Prune must not follow them.
  std::string outside = base_ + "/outside";
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  WriteFile(outside + "/precious", "do not delete");
  std::string gone_layer = store().LayerPath(gone.diff_ids[1]);
  ASSERT_EQ(chmod(gone_layer.c_str(), 0755), 0);
  ASSERT_EQ(symlink(outside.c_str(), (gone_layer + "/escape_dir").c_str()), 0);
  ASSERT_EQ(symlink((outside + "/precious").c_str(), (gone_layer + "/escape_file").c_str()), 0);
  ASSERT_EQ(chmod(gone_layer.c_str(), 0555), 0);

  absl::StatusOr<int64_t> nothing = store().Prune();
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(*nothing, 0);

  ASSERT_TRUE(store().Remove(gone.reference).ok());
  // What only `gone` had: its manifest, config, one layer blob, one layer and its rootfs.
  int64_t expected = 0;
  for (const std::string& digest :
       {gone.manifest_digest, gone.config_digest, gone.layer_digests[1]}) {
    expected += store().ReadBlob(digest)->size();
  }
  expected += std::string("gone only").size() + 5;  // the layer: content + ro/file
  expected += std::string("rootfs").size() + 5;     // the rootfs: content + ro/file
  absl::StatusOr<int64_t> freed = store().Prune();
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, expected);

  EXPECT_FALSE(store().HasBlob(gone.manifest_digest));
  EXPECT_FALSE(store().HasBlob(gone.config_digest));
  EXPECT_FALSE(store().HasBlob(gone.layer_digests[1]));
  EXPECT_FALSE(store().HasLayer(gone.diff_ids[1]));
  EXPECT_FALSE(store().HasRootfs(gone.manifest_digest));
  // Shared with `kept`, and everything of `kept`, stays.
  EXPECT_TRUE(store().HasBlob(gone.layer_digests[0]));
  EXPECT_TRUE(store().HasLayer(gone.diff_ids[0]));
  for (const std::string& digest : {kept.manifest_digest, kept.config_digest}) {
    EXPECT_TRUE(store().HasBlob(digest));
  }
  for (const std::string& digest : kept.layer_digests) EXPECT_TRUE(store().HasBlob(digest));
  for (const std::string& diff_id : kept.diff_ids) EXPECT_TRUE(store().HasLayer(diff_id));
  EXPECT_TRUE(store().HasRootfs(kept.manifest_digest));
  EXPECT_EQ(ReadFile(store().LayerPath(kept.diff_ids[1]) + "/ro/file"), "12345");
  EXPECT_EQ(ReadFile(outside + "/precious"), "do not delete");
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());

  // With no records left, everything goes.
  ASSERT_TRUE(store().Remove(kept.reference).ok());
  ASSERT_TRUE(store().Prune().ok());
  EXPECT_TRUE(Entries(root_ + "/blobs/sha256").empty());
  EXPECT_TRUE(Entries(root_ + "/layers/sha256").empty());
  EXPECT_TRUE(Entries(root_ + "/rootfs/sha256").empty());
}

TEST_F(StoreTest, PruneRemovesACrashedPullsTempFilesOnlyWhenOld) {
  // A pull that dies halfway through writing a blob.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t child = Fork([&] {
    std::string temp = store().TempPath("blob");
    int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || write(fd, "half a bl", 9) != 9) return false;
    return write(report[1], temp.data(), temp.size()) == static_cast<ssize_t>(temp.size());
  });
  close(report[1]);
  char buffer[4096];
  ssize_t n = read(report[0], buffer, sizeof(buffer));
  close(report[0]);
  ASSERT_EQ(Wait(child), 0);
  ASSERT_GT(n, 0);
  std::string crashed(buffer, n);
  ASSERT_TRUE(fs::exists(crashed));

  // Leftovers of no store function, one of them a read-only tree.
  std::string stray = root_ + "/tmp/stray";
  WriteFile(stray, "123");
  std::string stray_dir = root_ + "/tmp/unpack-of-some-old-version";
  ASSERT_EQ(mkdir(stray_dir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((stray_dir + "/ro").c_str(), 0755), 0);
  WriteFile(stray_dir + "/ro/f", "1234");
  ASSERT_EQ(chmod((stray_dir + "/ro").c_str(), 0555), 0);
  ASSERT_EQ(chmod(stray_dir.c_str(), 0555), 0);

  // Work in progress of this (live) process, even with an old mtime such as an unpacked
  // layer's top directory gets from its tarball.
  std::string live = MakeLayerTemp("in progress");

  ASSERT_EQ(*store().Prune(), 0);  // all young
  EXPECT_TRUE(fs::exists(crashed));

  Age(stray, 59 * 60);
  Age(crashed, 59 * 60);
  ASSERT_EQ(*store().Prune(), 0);  // still under an hour
  EXPECT_TRUE(fs::exists(crashed));

  Age(crashed, 2 * 3600);
  Age(stray, 2 * 3600);
  Age(stray_dir, 2 * 3600);
  Age(live, 2 * 3600);
  absl::StatusOr<int64_t> freed = store().Prune();
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, 9 + 3 + 4);
  EXPECT_FALSE(fs::exists(crashed));
  EXPECT_FALSE(fs::exists(stray));
  EXPECT_FALSE(fs::exists(stray_dir));
  EXPECT_TRUE(fs::exists(live + "/ro/file"));
}

TEST_F(StoreTest, PruneRemovesReadOnlyTreesWithoutPrivilege) {
  ImageRecord gone = AddImage("docker.io/library/gone:1", {"gone"});
  ASSERT_TRUE(store().Remove(gone.reference).ok());
  std::string layer = store().LayerPath(gone.diff_ids[0]);
  ASSERT_EQ(chmod(layer.c_str(), 0555), 0);  // even the top directory
  std::string old_temp = root_ + "/tmp/left-behind";
  ASSERT_EQ(mkdir(old_temp.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((old_temp + "/ro").c_str(), 0755), 0);
  WriteFile(old_temp + "/ro/f", "1234");
  ASSERT_EQ(chmod((old_temp + "/ro").c_str(), 0500), 0);
  ASSERT_EQ(chmod(old_temp.c_str(), 0500), 0);
  Age(old_temp, 2 * 3600);
  // A losing commit removes its read-only temp directory too.
  ASSERT_TRUE(store().CommitLayerDir(Sha256Digest("x"), MakeLayerTemp("a")).ok());
  std::string loser = MakeLayerTemp("b");
  // An unpacker may leave the top of a layer read-only too; that mode is the image's.
  std::string read_only_top = MakeLayerTemp("c");
  ASSERT_EQ(chmod(read_only_top.c_str(), 0555), 0);

  pid_t child = Fork([&] {
    if (!ObeyPermissions(base_)) {
      fprintf(stderr, "could not drop the capabilities that bypass file permissions\n");
      return false;
    }
    absl::Status committed = store().CommitLayerDir(Sha256Digest("x"), loser);
    absl::StatusOr<int64_t> freed = store().Prune();
    if (committed.ok()) committed = store().CommitLayerDir(Sha256Digest("y"), read_only_top);
    if (!freed.ok() || !committed.ok()) {
      fprintf(stderr, "Prune: %s\nCommitLayerDir: %s\n", freed.status().ToString().c_str(),
              committed.ToString().c_str());
    }
    return freed.ok() && *freed > 0 && committed.ok();
  });
  EXPECT_EQ(Wait(child), 0);
  EXPECT_FALSE(fs::exists(layer));
  EXPECT_FALSE(fs::exists(old_temp));
  EXPECT_FALSE(fs::exists(loser));
  EXPECT_TRUE(Entries(root_ + "/tmp").empty());
  // "x" was unreferenced, and pruned; "y" came after.
  EXPECT_THAT(Entries(root_ + "/layers/sha256"),
              UnorderedElementsAre(DigestHex(Sha256Digest("y"))));
  struct stat st;
  ASSERT_EQ(stat(store().LayerPath(Sha256Digest("y")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
}

}  // namespace
}  // namespace zygo::images
