// The pull benchmark's fixture: a test image from tools/images/build, served by a
// throwaway registry on 127.0.0.1 from testing/registry/serve, which is stopped when
// its owner goes away and also when the benchmark's process dies (serve --watch).
// Parent side; needs what those scripts need (docker-registry, skopeo, and for the
// Debian images mmdebstrap and a mirror).
#ifndef ZYGO_BENCH_PULL_LOCAL_REGISTRY_H_
#define ZYGO_BENCH_PULL_LOCAL_REGISTRY_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::bench {

struct TestImage {
  std::string name;    // "python", "busybox"
  std::string layout;  // an OCI image layout directory; its tag "latest" is the image
  std::string digest;  // the manifest digest, "sha256:..."
};

// Runs `<tree>/tools/images/build NAME [OUT_DIR]` (an empty `out_dir` uses the build
// cache, which a Debian image needs: it takes half a minute the first time).
absl::StatusOr<TestImage> BuildTestImage(const std::string& tree, const std::string& name,
                                         const std::string& out_dir);

// Requests zygo made of a repository, as the registry's access log records them:
// only answered 200, only with zygo's user agent (skopeo's are not counted).
struct ZygoRequests {
  int manifest_gets = 0;
  int blob_gets = 0;
};

class LocalRegistry {
 public:
  // `<tree>/testing/registry/serve anonymous --watch <watch_pid>`.
  static absl::StatusOr<LocalRegistry> Start(const std::string& tree, pid_t watch_pid);

  LocalRegistry(LocalRegistry&& other) noexcept;
  LocalRegistry& operator=(LocalRegistry&&) = delete;
  LocalRegistry(const LocalRegistry&) = delete;
  LocalRegistry& operator=(const LocalRegistry&) = delete;
  ~LocalRegistry();  // runs testing/registry/stop; a failure is printed to stderr

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  const std::string& dir() const { return dir_; }          // serve's state directory
  pid_t pid() const { return pid_; }                       // docker-registry's

  // testing/registry/push of the layout's "latest" to address()/`name_tag`.
  absl::Status Push(const TestImage& image, const std::string& name_tag) const;

  // CPU time the registry process has used so far (it is not the bench's child, so
  // it is not in the bench's own CPU time); nullopt when unreadable.
  std::optional<double> CpuSeconds() const;

  // zygo's requests of `repository` so far. The registry writes its access log line
  // after the response, so a client can exit before its line is there: this waits
  // up to `wait_ms` for `done(counts)` to hold and returns the last counts read.
  template <typename Done>
  ZygoRequests WaitForRequests(const std::string& repository, int wait_ms, Done done) const;
  ZygoRequests Requests(const std::string& repository) const;

 private:
  LocalRegistry(std::string tree, std::string address, std::string dir, pid_t pid)
      : tree_(std::move(tree)), address_(std::move(address)), dir_(std::move(dir)), pid_(pid) {}
  static void SleepMs(int ms);

  std::string tree_;
  std::string address_;
  std::string dir_;
  pid_t pid_ = -1;
};

template <typename Done>
ZygoRequests LocalRegistry::WaitForRequests(const std::string& repository, int wait_ms,
                                            Done done) const {
  constexpr int kStepMs = 10;
  ZygoRequests counts = Requests(repository);
  for (int waited = 0; !done(counts) && waited < wait_ms; waited += kStepMs) {
    SleepMs(kStepMs);
    counts = Requests(repository);
  }
  return counts;
}

// The value of KEY in a "KEY=value KEY2=value2" line such as the scripts print, or
// NotFound.
absl::StatusOr<std::string> ToolValue(const std::string& output, const std::string& key);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_LOCAL_REGISTRY_H_
