#include "supervisor/service_fixture.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/base/sys/fs.h"
#include "supervisor/state_store.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

int ParentOf(int pid) { return base::sys::ReadParentPid(pid).value_or(0); }

std::vector<int> AllPids() {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (struct dirent* entry = readdir(proc)) {
    int pid = atoi(entry->d_name);
    if (pid > 0) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

void ListCgroups(const std::string& dir, const std::string& prefix, bool below,
                 std::vector<std::string>* out) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return;
  while (struct dirent* entry = readdir(handle)) {
    std::string name = entry->d_name;
    if (entry->d_type != DT_DIR || name == "." || name == "..") continue;
    bool ours = below || name.rfind(prefix, 0) == 0;
    if (ours) out->push_back(absl::StrCat(dir, "/", name));
    if (ours) ListCgroups(absl::StrCat(dir, "/", name), prefix, true, out);
  }
  closedir(handle);
}

}  // namespace

void ServiceFixture::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for cgroups";
  // As zygo serve does at its start (main.cc): a thousand requests in flight hold an
  // eventfd each, and a sandbox's launch needs free fds above them.
  struct rlimit open_files;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &open_files), 0);
  open_files.rlim_cur = open_files.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &open_files), 0);
  auto cgroups = core::ProbeCgroupDriver();
  if (!cgroups.ok()) GTEST_SKIP() << "no usable cgroups: " << cgroups.status();
  cgroups_ = *std::move(cgroups);
  // A fresh state dir per test: a stored function would be served again (on purpose).
  std::string pattern = absl::StrCat(getenv("TEST_TMPDIR"), "/service-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  // Code and state side by side: code must not contain the state dir (code_policy.h).
  dir_ = pattern + "/code";
  state_dir_ = pattern + "/state";
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  StartService();
}

void ServiceFixture::StartService() {
  auto store = StateStore::Open(state_dir_);
  ASSERT_TRUE(store.ok()) << store.status();
  SupervisorOptions options;
  options.host.cgroups = cgroups_.get();
  options.host.exec_agent = testing::Runfile("agents/exec/zygo-agent-exec");
  options.host.python_agent = testing::Runfile("agents/python/zygo-agent-python");
  options.host.node_agent = testing::Runfile("agents/node/zygo-agent-node");
  options.workers = workers_;
  options.zygote_tree = zygote_tree_;
  std::vector<std::string> warnings;
  auto service = SupervisorService::Create(*std::move(store), options, &warnings);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  service_ = *std::move(service);
}

void ServiceFixture::TearDown() {
  if (service_) service_->Shutdown();
  service_.reset();
  if (!image_store_.empty()) unsetenv("ZYGO_HOME");
}

void ServiceFixture::UseOwnImageStore() {
  image_store_ = dir_ + "/store";
  ASSERT_EQ(setenv("ZYGO_HOME", image_store_.c_str(), 1), 0);
}

void ServiceFixture::LoadTestImage(const std::string& name, const std::string& ref) {
  ASSERT_FALSE(image_store_.empty()) << "UseOwnImageStore first";
  absl::StatusOr<testing::TestImage> image = testing::BuildTestImage(name);
  ASSERT_TRUE(image.ok()) << image.status();
  testing::RunOptions options;
  options.env = {"ZYGO_HOME=" + image_store_};
  options.want_outcome = false;
  testing::RunResult loaded =
      testing::RunOnHost({testing::ZygoPath(), "load", image->layout, ref}, options);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
}

void ServiceFixture::WriteCode(const std::string& name, const std::string& content) {
  std::ofstream(absl::StrCat(dir_, "/", name)) << content;
}

void ServiceFixture::Up(const std::string& toml) {
  auto up = service_->Up(toml, "test.toml", dir_);
  ASSERT_TRUE(up.ok()) << up.status();
}

ExecReply ServiceFixture::Call(const std::string& name, const std::string& event,
                               const std::string& script) {
  std::promise<ExecReply> promise;
  ExecRequest request;
  request.function = name;
  request.event_json = event;
  request.stdin_data = event;
  request.script_digest = script;
  service_->Exec(request, [&](ExecReply reply) { promise.set_value(std::move(reply)); });
  return promise.get_future().get();
}

namespace {

// An agent process whose sandbox's init is a child of ours: a function's zygote (in a sandbox
// of its own, or forked by a runtime zygote, whose init then inherited it) or a runtime
// zygote. A forked zygote keeps the runtime's command line; it is a pid namespace deeper.
std::vector<int> AgentsOfOurSandboxes(bool runtimes) {
  std::vector<int> found;
  for (int pid : testing::ProcessesMatching("/.zygo-agent")) {
    if (ParentOf(ParentOf(pid)) != getpid()) continue;
    absl::StatusOr<std::vector<pid_t>> levels = base::sys::ReadNamespacePids(pid);
    const bool runtime = levels.ok() && levels->size() == 2 &&
                         base::sys::ReadFile(absl::StrCat("/proc/", pid, "/cmdline"))
                                 .value_or("")
                                 .find(std::string("--runtime\0", 10)) != std::string::npos;
    if (runtime == runtimes) found.push_back(pid);
  }
  return found;
}

}  // namespace

std::vector<int> ServiceFixture::OurAgents() { return AgentsOfOurSandboxes(false); }

std::vector<int> ServiceFixture::OurRuntimeZygotes() { return AgentsOfOurSandboxes(true); }

std::vector<int> ServiceFixture::DescendantsOf(const std::vector<int>& roots) {
  std::set<int> found(roots.begin(), roots.end());
  bool grew = true;
  std::vector<int> pids = AllPids();
  while (grew) {
    grew = false;
    for (int pid : pids) {
      if (!found.count(pid) && found.count(ParentOf(pid))) {
        found.insert(pid);
        grew = true;
      }
    }
  }
  for (int root : roots) found.erase(root);
  return std::vector<int>(found.begin(), found.end());
}

std::vector<std::string> ServiceFixture::OurCgroups() {
  std::ifstream self("/proc/self/cgroup");
  std::string line, memory;
  while (std::getline(self, line)) {
    if (line.find(":memory:") != std::string::npos) memory = line.substr(line.rfind(':') + 1);
  }
  std::string parent = absl::StrCat("/sys/fs/cgroup/memory", memory == "/" ? "" : memory);
  std::vector<std::string> out;
  ListCgroups(parent, absl::StrCat("zygo-", getpid(), "-"), false, &out);
  return out;
}

int ServiceFixture::OpenFdCount() {
  int count = 0;
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return -1;
  while (struct dirent* entry = readdir(fds)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(fds);
  return count;
}

}  // namespace zygo::supervisor
