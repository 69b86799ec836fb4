#!/usr/bin/env bash
# The TypeScript SDK's test under Bazel: a writable copy of the package, npm ci (the npm
# registry), tsc, then node --test (npm test) against supervisors started from the
# runfiles' zygo.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${TEST_TMPDIR:-$(mktemp -d)}/sdk

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAILED: no $tool on PATH: install Debian's nodejs and npm (NodeSource's nodejs has npm)" >&2
    exit 1
  fi
done
node -e 'if (+process.versions.node.split(".")[0] < 18) { console.error("node " + process.version + " is older than 18"); process.exit(1); }'

# The package's build reads the proto from ../proto, as in the source tree.
mkdir -p "$work/typescript" "$work/proto/zygo/v1"
(cd "$here" && cp -RL README.md package.json package-lock.json tsconfig*.json scripts src test "$work/typescript/")
cp -L "$here/../proto/zygo/v1/zygo.proto" "$work/proto/zygo/v1/"
cd "$work/typescript"
# A cache kept between runs, so only the first run downloads typescript.
export npm_config_cache=/tmp/zygo-sdk-npm-cache-$(id -u)
export npm_config_update_notifier=false
npm ci --no-audit --no-fund --prefer-offline
npm run build
ZYGO_BIN=$here/../../cli/zygo npm test
