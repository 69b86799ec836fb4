// The Node handler of `zygo bench warm --runtime node`.
#include "bench/warm/node_workload.h"

#include "absl/strings/str_cat.h"

namespace zygo::bench {

const std::vector<std::string>& SixteenNodeBuiltins() {
  static const std::vector<std::string> builtins = {
      "fs",     "path",   "util",           "events", "url",    "crypto",
      "os",     "http",   "https",          "zlib",   "stream", "querystring",
      "buffer", "assert", "string_decoder", "timers"};
  return builtins;
}

std::string NodeHandlerSource(int variant) {
  std::string source =
      "// zygo bench: a handler whose module requires sixteen Node builtins.\n"
      "\"use strict\";\n";
  for (const std::string& builtin : SixteenNodeBuiltins()) {
    absl::StrAppend(&source, "require(\"", builtin, "\");\n");
  }
  absl::StrAppend(&source, "\nconst VARIANT = ", variant, ";\n\n",
                  "exports.main = async function main(event) {\n"
                  "  event = event !== null && typeof event === \"object\" ? event : {};\n"
                  "  const n = Math.trunc(Number(event.n || 0));\n"
                  "  return { n, twice: 2 * n, name: String(event.name ?? \"\"), variant: "
                  "VARIANT };\n"
                  "};\n");
  return source;
}

}  // namespace zygo::bench
