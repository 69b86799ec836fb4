#!/usr/bin/env bash
# The Python SDK as a user gets it, against a real supervisor: a fresh venv, `pip install`
# of a copy of sdk/python (offline: its build backend is in the tree), then
# real_supervisor_test.py over HTTP. Then a venv that sees Debian's grpcio and protobuf
# (--system-site-packages), `pip install ./python[grpc]`, and the same test over gRPC.
# Last, zygo_sdk/_proto/zygo_pb2.py must be what protoc makes of the proto today.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
python=/usr/bin/python3  # Debian's, as a user has it (not a pyenv shim)
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sdk-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ZYGO_TEST_SUPERVISOR="$root/supervisor/supervisor"
# No index and no find-links: everything must come from the copy itself.
export PIP_NO_INDEX=1 PIP_FIND_LINKS= PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

# A copy, as a fresh clone has it: runfiles are symlinks, and the build writes nothing
# into the source tree anyway.
cp -rL "$here" "$work/python"
rm -f "$work/python"/*_test.* "$work/python/BUILD.bazel"
# The test beside neither copy: Python puts a script's own directory first on sys.path.
mkdir "$work/test"
cp -L "$here/real_supervisor_test.py" "$work/test/"
test="$work/test/real_supervisor_test.py"

echo "== pip install into a fresh venv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install "$work/python" >"$work/pip.log" 2>&1 || {
  cat "$work/pip.log"
  exit 1
}
# Run from elsewhere, so the import is the installed package, not the copy.
cd "$work"
"$work/venv/bin/python" - <<'EOF'
import os, zygo_sdk
assert "site-packages" in zygo_sdk.__file__, zygo_sdk.__file__
assert os.path.exists(os.path.join(os.path.dirname(zygo_sdk.__file__), "py.typed"))
try:
    zygo_sdk.Client("/nonexistent.sock", transport="grpc")
    raise SystemExit("transport='grpc' without grpcio should raise ImportError")
except ImportError as e:
    said = str(e)
assert "pip install 'zygo-sdk[grpc]'" in said, said
print("installed:", zygo_sdk.__file__, "\nwithout grpcio, transport='grpc' says:", said)
EOF
ZYGO_TEST_TRANSPORT=http "$work/venv/bin/python" "$test"

echo "== pip install [grpc] into a venv with Debian's grpcio"
if ! "$python" -c 'import grpc, google.protobuf' 2>/dev/null; then
  echo "SKIPPED: Debian's python3-grpcio and python3-protobuf are not installed (tools/setup)"
else
  "$python" -m venv --system-site-packages "$work/venv-grpc"
  "$work/venv-grpc/bin/pip" install "$work/python[grpc]" >"$work/pip-grpc.log" 2>&1 || {
    cat "$work/pip-grpc.log"
    exit 1
  }
  ZYGO_TEST_TRANSPORT=grpc "$work/venv-grpc/bin/python" "$test"
fi

echo "== zygo_pb2.py matches sdk/proto/zygo/v1/zygo.proto"
mkdir "$work/gen"
/usr/bin/protoc --proto_path="$root/sdk/proto" --python_out="$work/gen" \
  "$root/sdk/proto/zygo/v1/zygo.proto"
if ! diff -q "$work/gen/zygo/v1/zygo_pb2.py" "$here/zygo_sdk/_proto/zygo_pb2.py"; then
  echo "zygo_sdk/_proto/zygo_pb2.py is stale: regenerate it (see its package's docstring)"
  exit 1
fi
echo PASS
