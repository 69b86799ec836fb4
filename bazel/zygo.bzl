"""Project macros: the C++ standard and warnings every Zygo target builds with."""

_COPTS = [
    "-std=c++20",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
]

def zygo_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = _COPTS + copts, **kwargs)

def zygo_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = _COPTS + copts, **kwargs)

def zygo_cc_test(name, copts = [], deps = [], **kwargs):
    native.cc_test(
        name = name,
        copts = _COPTS + copts,
        deps = deps + ["//third_party:gtest_main"],
        **kwargs
    )
