"""Project macros: the C++ standard and warnings every Zygo target builds with.

A target named after its file needs no srcs or hdrs: a library NAME takes NAME.cc and
NAME.h where they exist, a test NAME takes NAME.cc. Name them when they differ.
"""

_COPTS = [
    "-std=c++20",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
]

def zygo_cc_library(name, srcs = None, hdrs = None, copts = [], **kwargs):
    native.cc_library(
        name = name,
        srcs = native.glob([name + ".cc"]) if srcs == None else srcs,
        hdrs = native.glob([name + ".h"]) if hdrs == None else hdrs,
        copts = _COPTS + copts,
        **kwargs
    )

def zygo_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = _COPTS + copts, **kwargs)

def zygo_cc_test(name, srcs = None, copts = [], deps = [], **kwargs):
    native.cc_test(
        name = name,
        srcs = [name + ".cc"] if srcs == None else srcs,
        copts = _COPTS + copts,
        deps = deps + ["//third_party:gtest_main"],
        **kwargs
    )
