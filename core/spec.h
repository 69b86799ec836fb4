// What a user asked for: the sandbox as flags or a function spec describe it, before
// any checking. BuildPlan (plan.h) validates a Spec and turns it into a Plan.
#ifndef ZYGO_CORE_SPEC_H_
#define ZYGO_CORE_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zygo::core {

// How the sandbox reaches the network (`zygo run --net MODE`).
enum class NetMode {
  kNone,    // a network namespace of its own with only loopback (the default)
  kEgress,  // pasta, with nftables and Zygo's resolver admitting only `allow` entries
  kFull,    // pasta, with nftables refusing only private and special ranges
  kHost,    // the host's network namespace; needs Loosening::host_net()
};

// "none", "egress", "full", "host".
inline const char* NetModeName(NetMode mode) {
  switch (mode) {
    case NetMode::kNone:
      return "none";
    case NetMode::kEgress:
      return "egress";
    case NetMode::kFull:
      return "full";
    case NetMode::kHost:
      return "host";
  }
  return "none";
}

struct VolumeSpec {
  std::string source;       // host path
  std::string destination;  // path inside the sandbox
  bool read_only = false;
  // Refuse the source unless it resolves to itself: a path checked once (a function's
  // code, at `zygo up`) whose part has since become a symlink is not followed.
  bool must_resolve_to_itself = false;
  // What errors call the source ("its code directory"); "volume source" when empty.
  std::string name;
};

// Where the sandbox's root filesystem comes from. An OCI image is resolved to its
// flattened root in the store (runtime/) before it gets here.
struct RootFs {
  enum class Kind {
    kHost,       // the built-in image: the host's /usr and a few files, read-only
    kDirectory,  // a directory, bound read-only as the root
  };
  Kind kind = Kind::kHost;
  std::string directory;  // kDirectory: an absolute path

  static RootFs Host() { return {}; }
  static RootFs Directory(std::string path) { return {Kind::kDirectory, std::move(path)}; }
  bool host() const { return kind == Kind::kHost; }
  // "host" or "dir:PATH", the way `zygo run` takes it.
  std::string Describe() const { return host() ? "host" : "dir:" + directory; }
};

// What only the operator may loosen. Anyone reads it; only core/loosening.h's
// LooseningGrant sets it, and that target is visible to the CLI (its flags), the
// supervisor (its own settings) and the image builders, which pass a caller's on.
class Loosening {
 public:
  // Run without a cgroup when none can be made (rootless without delegation).
  bool unlimited() const { return unlimited_; }
  // Share the host's network namespace instead of a loopback-only one of its own.
  bool host_net() const { return host_net_; }

 private:
  friend struct LooseningGrant;
  bool unlimited_ = false;
  bool host_net_ = false;
};

struct Spec {
  RootFs root;
  std::vector<std::string> argv;  // the command; argv[0] is looked up on the image's PATH
  std::vector<std::string> env;   // "KEY=VALUE" from -e, applied over the image's defaults
  // The image's own environment (an OCI config's Env); empty for host and dir: images,
  // which get PATH and HOME defaults instead.
  std::vector<std::string> image_env;
  // What the user called the image, for --dry-run and errors (an OCI reference, whose
  // root is a directory in the store); empty: root.Describe().
  std::string image_name;
  std::string ImageLabel() const { return image_name.empty() ? root.Describe() : image_name; }
  std::string workdir = "/";
  std::vector<VolumeSpec> volumes;
  std::string hostname = "zygo";
  uint32_t uid = 0;  // inside the sandbox
  uint32_t gid = 0;

  int64_t memory_bytes = 256LL << 20;
  double cpus = 1.0;
  int64_t pids_limit = 128;
  int64_t timeout_ms = 60'000;
  int64_t tmp_size_bytes = 64LL << 20;
  // How many user namespaces (each with its own mount namespace) the sandbox may make at
  // once: 0 for a one-shot run; a warm zygote's spares each take one for their own /tmp
  // (core/nested_tmp.h). Writes inside stay refused: Landlock's rule on "/" then covers
  // every mount a spare is given, but the read-only mounts still hold (docs/security-model.md).
  int nested_namespaces = 0;
  // A runtime zygote (issue 19): how many function zygotes its agent may hold at once,
  // each forked into namespaces of its own and sealed by core/forked_zygote.h, each with
  // `nested_namespaces` for its own spares. 0 for every other sandbox. Non-zero lets
  // unshare of a function zygote's namespaces through seccomp (SeccompProfile::
  // kRuntimeZygote), sizes the sandbox's user namespace limits for all of them
  // (RuntimeUsernsLimits), and gives "/" the Landlock rule nested mounts need.
  int function_zygotes = 0;

  Loosening loosening;
  // Every call the seccomp allowlist refuses is still refused (EPERM), and also counted
  // by name into the outcome (zygo run --explain-denials).
  bool explain_denials = false;
  NetMode net = NetMode::kNone;
  // --allow HOST:PORT entries for NetMode::kEgress, as given (net/allowlist.h parses them).
  std::vector<std::string> allow;
};

}  // namespace zygo::core

#endif  // ZYGO_CORE_SPEC_H_
