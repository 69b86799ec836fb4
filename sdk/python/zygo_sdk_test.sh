#!/usr/bin/env bash
# Runs zygo_sdk_test.py under Debian's python3: Bazel 4's py_test stub wants a `python` on
# PATH, which these hosts lack, and registering a Python toolchain is a WORKSPACE change.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
export PYTHONPATH="$here/../../testing/python"
exec /usr/bin/python3 -m unittest -v zygo_sdk_test
