"""Zygo's Python SDK: register functions with a running supervisor (`zygo serve`) and call
them, over its unix socket. HTTP needs only the standard library; transport="grpc" needs
grpcio and protobuf (the `grpc` extra).

    import zygo_sdk

    zygo = zygo_sdk.Client()                      # the socket as `zygo` finds it
    zygo.up_file("hello/hello.toml")
    result = zygo.exec("hello", {"name": "Ada"})  # raises HandlerError, Timeout, ...
    print(result.result, result.stdout, result.timings_us.total)

AsyncClient has the same calls as coroutines. See README.md.
"""
from ._wire import default_grpc_socket_path, default_socket_path
from .client import AsyncClient, Client
from .errors import (ExecError, HandlerError, InvalidArgument, NotFound, OutOfMemory,
                     Timeout, TooManyRequests, Unavailable, ZygoError)
from .types import ErrorInfo, ExecResult, FunctionInfo, Outcome, Timings

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "default_socket_path", "default_grpc_socket_path",
    "ExecResult", "ErrorInfo", "Outcome", "Timings", "FunctionInfo",
    "ZygoError", "NotFound", "InvalidArgument", "TooManyRequests", "Unavailable",
    "ExecError", "HandlerError", "Timeout", "OutOfMemory",
]
