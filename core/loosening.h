// Granting what loosens a sandbox (core::Loosening in spec.h). Its Bazel target is visible
// only to what may grant it: the CLI (--allow-unlimited, --allow-host-net), the supervisor
// (--allow-unlimited), and the image builders, which pass on what their caller was given.
#ifndef ZYGO_CORE_LOOSENING_H_
#define ZYGO_CORE_LOOSENING_H_

#include "core/spec.h"

namespace zygo::core {

struct LooseningGrant {
  static void AllowUnlimited(Loosening& loosening) { loosening.unlimited_ = true; }
  static void AllowHostNet(Loosening& loosening) { loosening.host_net_ = true; }
};

}  // namespace zygo::core

#endif  // ZYGO_CORE_LOOSENING_H_
