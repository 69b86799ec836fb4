// The warm-path benches' Python sources and specs.
#include "bench/warm/warm_workload.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zygo::bench {
namespace {

// `import json\nimport re\n...`, in SixteenModules() order.
std::string ImportLines() {
  std::string lines;
  for (const std::string& module : SixteenModules())
    absl::StrAppend(&lines, "import ", module, "\n");
  return lines;
}

}  // namespace

const std::vector<std::string>& SixteenModules() {
  static const std::vector<std::string> modules = {
      "json",           "re",      "ssl",         "decimal", "datetime",  "hashlib",
      "urllib.request", "base64",  "collections", "csv",     "functools", "itertools",
      "math",           "pathlib", "statistics",  "uuid"};
  return modules;
}

std::string HandlerSource(int variant) {
  return absl::StrCat(
      "# zygo bench: a handler whose module imports sixteen standard modules.\n", ImportLines(),
      "\nVARIANT = ", variant, "\n\n\n",
      "def main(event):\n"
      "    event = event if isinstance(event, dict) else {}\n"
      "    n = int(event.get(\"n\", 0))\n"
      "    return {\"n\": n, \"twice\": 2 * n, \"name\": str(event.get(\"name\", \"\")),\n"
      "            \"variant\": VARIANT}\n");
}

std::string EmbedScriptSource() {
  return absl::StrCat("# zygo bench embed: sixteen imports, then one line.\n", ImportLines(),
                      "\n\ndef main(event=None):\n"
                      "    print(\"",
                      kEmbedLine,
                      "\", flush=True)\n\n\n"
                      "if __name__ == \"__main__\":\n"
                      "    main()\n");
}

std::string PoolScriptSource(int index) {
  return absl::StrCat("# zygo bench pool script ", index, "\n\n\ndef handler(event):\n",
                      "    return {\"script\": ", index, ", \"constant\": \"constant-", index,
                      "\"}\n");
}

std::string FunctionSpecToml(const FunctionSpecOptions& options) {
  std::string toml = absl::StrCat("name = \"", options.name, "\"\nimage = \"host\"\nruntime = \"",
                                  options.runtime, "\"\n");
  if (options.pool) {
    absl::StrAppend(&toml, "pool = true\n");
  } else {
    absl::StrAppend(&toml, "entry = \"", options.entry, "\"\n");
  }
  if (options.preload_sixteen) {
    absl::StrAppend(&toml, "preload = [\"", absl::StrJoin(SixteenModules(), "\", \""), "\"]\n");
  }
  absl::StrAppend(&toml, "code = \".\"\ncold_after = \"0\"\nspares = ", options.spares,
                  "\n\n[limits]\nmemory = \"256M\"\ntimeout = \"10s\"\n");
  return toml;
}

std::string EventJson(int index) {
  return absl::StrCat("{\"n\": ", index, ", \"name\": \"bench\"}");
}

bool HandlerResultMatches(const nlohmann::json& result, int index) {
  return result.is_object() && result.value("n", -1) == index &&
         result.value("twice", -1) == 2 * index && result.value("name", "") == "bench";
}

bool PoolResultMatches(const nlohmann::json& result, int script) {
  return result.is_object() && result.value("script", -1) == script &&
         result.value("constant", "") == absl::StrCat("constant-", script);
}

}  // namespace zygo::bench
