"""The smoke test of a bench that starts its own supervisor.

It runs the built bench with tiny counts (through //bench/common:warm_smoke_testing) and
checks what it reports, never how fast or how big: benchmarks are not timed tests.
"""

load("//bazel:zygo.bzl", "zygo_cc_test")

# The bench runs as `zygo bench ...`, and starts the supervisor found next to zygo.
_BINARIES = [
    "//cli:zygo",
    "//supervisor",
]

def warm_smoke_test(name):
    zygo_cc_test(
        name = name,
        size = "medium",
        data = _BINARIES,
        tags = ["requires_root"],
        deps = [
            "//bench/common:warm_smoke_testing",
            "//testing:harness",
        ],
    )
