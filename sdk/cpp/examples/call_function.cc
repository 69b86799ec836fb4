// An embedder's program: registers a function from its spec file and calls it once,
// through the C++ SDK (sdk/cpp/zygo/client.h).
//
//   spec=$PWD/sdk/cpp/examples/hello/hello.toml
//   bazel run //sdk/cpp/examples:call_function -- "$spec" hello '{"name": "Ada"}'
//
// Prints the handler's result (or the error) and exits 0 only when the call succeeded.
#include <stdio.h>
#include <string.h>

#include <string>

#include "sdk/cpp/zygo/client.h"

int main(int argc, char** argv) {
  std::string socket;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--socket") == 0) {
    socket = argv[2];
    first = 3;
  }
  if (argc - first < 2 || argc - first > 3) {
    fprintf(stderr, "usage: call_function [--socket PATH] SPEC.toml NAME [EVENT_JSON]\n");
    return 2;
  }
  zygo::sdk::Client zygo(socket);
  absl::StatusOr<zygo::sdk::Function> up = zygo.UpFile(argv[first]);
  if (!up.ok()) {
    fprintf(stderr, "up: %s\n", std::string(up.status().message()).c_str());
    return 1;
  }
  printf("%s is up (%s, image %s)\n", up->name.c_str(), up->runtime.c_str(), up->image.c_str());
  const char* event = argc - first == 3 ? argv[first + 2] : "null";
  absl::StatusOr<zygo::sdk::Result> result = zygo.Exec(argv[first + 1], event);
  if (!result.ok()) {
    fprintf(stderr, "exec: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  fputs(result->stdout_data.c_str(), stdout);
  if (!result->ok) {
    fprintf(stderr, "%s: %s: %s\n%s", result->status.c_str(), result->error_type.c_str(),
            result->error_message.c_str(), result->traceback.c_str());
    return 1;
  }
  printf("result %s (%.1f ms)\n", result->result_json.c_str(), result->wall_ms);
  return 0;
}
