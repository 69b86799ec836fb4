// The commands `zygo bench pull` times: pulls into a cold and a warm store against
// skopeo copy + umoci unpack, and one-shot runs in the image through zygo against
// bubblewrap on the same root. Building them touches nothing; no privileges.
#ifndef ZYGO_BENCH_PULL_PULL_CASES_H_
#define ZYGO_BENCH_PULL_PULL_CASES_H_

#include <string>
#include <vector>

#include "bench/common/interleaved.h"

namespace zygo::bench {

inline constexpr char kVariantZygoCold[] = "zygo cold";
inline constexpr char kVariantZygoWarm[] = "zygo warm";
inline constexpr char kVariantPullPeer[] = "skopeo+umoci";
inline constexpr char kVariantZygoNoBytecode[] = "zygo ZYGO_BYTECODE=0";
inline constexpr char kVariantZygoDefault[] = "zygo default";
inline constexpr char kVariantRunPeer[] = "bwrap";

// zygo's environment: the caller's without ZYGO_HOME (the store is given by --root) and
// without ZYGO_BYTECODE, then ZYGO_BYTECODE=0 when `bytecode_off`.
std::vector<std::string> ZygoEnvironment(const std::vector<std::string>& caller_env,
                                         bool bytecode_off);

struct PullCommandsInput {
  std::string zygo, skopeo, umoci;
  std::string reference;   // "127.0.0.1:PORT/python:bench"
  std::string cold_store;  // absent before each cold run, which creates it
  std::string warm_store;  // holds the image already
  std::string peer_dir;    // absent before each peer run, which creates it
  std::vector<std::string> caller_env;
};

// The steps of each pull variant, by variant name: zygo cold and zygo warm (each one
// `zygo --root STORE pull --tls-verify=false REF`, ZYGO_BYTECODE=0 so the pull does
// only what skopeo and umoci do: fetch and unpack) and skopeo+umoci (two steps:
// `skopeo copy --src-tls-verify=false docker://REF oci:PEER/layout:bench`, then
// `umoci unpack --rootless --image PEER/layout:bench PEER/bundle`). With
// `with_default_cold`, also "zygo cold default": the cold pull with ZYGO_BYTECODE
// unset, for a zygo whose pull builds a bytecode layer.
std::vector<std::pair<std::string, std::vector<TimedStep>>> PullSteps(
    const PullCommandsInput& input, bool with_default_cold);

// Where the peer's unpacked root ends up under `peer_dir`.
std::string PeerRootfs(const std::string& peer_dir);

struct OneShotCommandsInput {
  std::string zygo, bwrap;
  std::string store;                   // holds `image`
  std::string image;                   // "python:bench"
  std::string rootfs;                  // that image's flattened root in the store
  std::vector<std::string> image_env;  // the image config's Env
  std::string working_dir;             // the image config's WorkingDir ("" is /)
  std::vector<std::string> argv;       // {"python3", "-c", "pass"}
  std::vector<std::string> caller_env;
};

// One step each: "zygo ZYGO_BYTECODE=0" and "zygo default" (`zygo --root STORE run
// IMAGE ARGV...` with and without ZYGO_BYTECODE=0) and "bwrap" (`bwrap --unshare-all
// --unshare-user --die-with-parent --new-session --ro-bind ROOTFS / --proc /proc
// --dev /dev --tmpfs /tmp --hostname zygo --chdir WORKDIR --clearenv --setenv ...
// ARGV...`, with exactly the environment zygo gives the image: its Env over zygo's
// PATH, HOME and HOSTNAME defaults).
std::vector<std::pair<std::string, std::vector<TimedStep>>> OneShotSteps(
    const OneShotCommandsInput& input);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_CASES_H_
