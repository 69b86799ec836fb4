// When `zygo run` pulls an OCI image: docker's --pull policies.
#ifndef ZYGO_CLI_PULL_POLICY_H_
#define ZYGO_CLI_PULL_POLICY_H_

namespace zygo::cli {

enum class PullPolicy { kMissing, kAlways, kNever };

}  // namespace zygo::cli

#endif  // ZYGO_CLI_PULL_POLICY_H_
