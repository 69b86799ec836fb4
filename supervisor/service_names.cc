// The API's words for the service's enums (service.h), as JSON, gRPC and `zygo ls` show them.
#include "supervisor/service.h"

namespace zygo::supervisor {

const char* RuntimeName(Runtime runtime) {
  switch (runtime) {
    case Runtime::kPython:
      return "python";
    case Runtime::kExec:
      return "exec";
    case Runtime::kNode:
      return "node";
  }
  return "python";
}

std::optional<Runtime> ParseRuntime(absl::string_view name) {
  if (name == "python") return Runtime::kPython;
  if (name == "exec") return Runtime::kExec;
  if (name == "node") return Runtime::kNode;
  return std::nullopt;
}

const char* FunctionStateName(FunctionState state) {
  switch (state) {
    case FunctionState::kCold:
      return "cold";
    case FunctionState::kWarming:
      return "warming";
    case FunctionState::kWarm:
      return "warm";
  }
  return "cold";
}

}  // namespace zygo::supervisor
