"""The gRPC transport (transport="grpc"): the zygo.v1.Zygo service on the supervisor's gRPC
socket, through grpcio and protobuf, which only this module imports. Replies become the
HTTP API's JSON shape, so the clients build the same results and errors from either."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

try:
    import grpc
    import grpc.aio
    from ._proto import zygo_pb2 as pb
except ImportError as e:  # pragma: no cover: depends on what is installed
    raise ImportError(
        f"transport='grpc' needs grpcio and protobuf ({e}): pip install 'zygo-sdk[grpc]', "
        "or on Debian apt-get install python3-grpcio python3-protobuf (a venv then needs "
        "--system-site-packages); the default transport, HTTP, needs neither") from e

from . import errors

_SERVICE = "/zygo.v1.Zygo/"
# A reply holds up to 1 MiB each of stdout and stderr and a result; gRPC's default 4 MiB
# receive limit fits that, but events go up to 16 MiB each way and so may replies later.
_OPTIONS = [("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", 64 << 20)]
_METHODS = {
    "Up": (pb.UpRequest, pb.FunctionInfo),
    "Down": (pb.DownRequest, pb.DownReply),
    "List": (pb.ListRequest, pb.ListReply),
    "PutScript": (pb.PutScriptRequest, pb.PutScriptReply),
    "Exec": (pb.ExecRequest, pb.ExecReply),
    "Health": (pb.HealthRequest, pb.HealthReply),
}


def _retry_after(e: "grpc.RpcError") -> Optional[float]:
    """The supervisor's retry-after trailer (seconds) on a full queue, as HTTP's header."""
    try:
        for key, value in e.trailing_metadata() or ():
            if key == "retry-after":
                return float(value)
    except (AttributeError, TypeError, ValueError):
        pass
    return None


def _error(e: "grpc.RpcError", socket_path: str) -> errors.ZygoError:
    code = e.code()
    message = e.details() or ""
    name = code.name.lower() if code is not None else "unknown"
    if code == grpc.StatusCode.NOT_FOUND:
        return errors.NotFound(name, message)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return errors.InvalidArgument(name, message)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        # An event over the limit shares the code with a full queue (HTTP tells them
        # apart as 413 and 429); the words do here: "event is N bytes; the limit is ...".
        if message.startswith("event is ") or "message larger than max" in message:
            return errors.InvalidArgument(name, message)
        return errors.TooManyRequests(name, message, retry_after=_retry_after(e))
    if code == grpc.StatusCode.UNAVAILABLE:
        # gRPC's own words when nothing listens ("failed to connect to all addresses").
        if "failed to connect" in message:
            message = (f"cannot reach the supervisor at {socket_path}: is `zygo serve` "
                       f"running? ({message})")
        return errors.Unavailable(name, message)
    return errors.ZygoError(name, message)


def _function_json(info: "pb.FunctionInfo") -> Dict[str, Any]:
    return {field: getattr(info, field) for field in (
        "name", "image", "runtime", "entry", "pool", "state", "requests", "memory_bytes",
        "timeout_ms", "cold_after_ms", "spec_path")}


def _result_value(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:  # as the HTTP API shows a result that is not JSON: a string
        return data.decode("utf-8", "replace")


def _exec_json(reply: "pb.ExecReply") -> Dict[str, Any]:
    error = None
    if reply.error.type or reply.error.message or reply.error.traceback:
        error = {"type": reply.error.type, "message": reply.error.message,
                 "traceback": reply.error.traceback}
    o = reply.outcome
    outcome = {"status": o.status, "exit_code": o.exit_code, "signal": o.signal,
               "timed_out": o.timed_out, "oom_killed": o.oom_killed,
               "peak_rss_kb": o.peak_rss_kb, "wall_ms": o.wall_ms,
               "limits_applied": o.limits_applied}
    if o.seccomp_syscall:
        outcome["seccomp_kill"] = {"syscall": o.seccomp_syscall, "arch": o.seccomp_arch}
    t = reply.timings_us
    return {"ok": reply.ok, "result": _result_value(reply.result_json), "error": error,
            "stdout": reply.stdout.decode("utf-8", "replace"),
            "stderr": reply.stderr.decode("utf-8", "replace"),
            "stdout_truncated": reply.stdout_truncated,
            "stderr_truncated": reply.stderr_truncated, "outcome": outcome,
            "timings_us": {"fork": t.fork, "admit": t.admit, "run": t.run, "reply": t.reply,
                           "total": t.total}}


def _exec_request(function: str, body: bytes, script: Optional[str]) -> "pb.ExecRequest":
    # As over HTTP, the one body is both the event and stdin; the function's runtime
    # decides which it reads.
    return pb.ExecRequest(function=function, script_digest=script or "", event_json=body,
                          stdin_data=body)


def _callables(channel: Any) -> Dict[str, Callable[..., Any]]:
    return {name: channel.unary_unary(_SERVICE + name,
                                      request_serializer=request.SerializeToString,
                                      response_deserializer=reply.FromString)
            for name, (request, reply) in _METHODS.items()}


class GrpcTransport:
    """The sync client's calls as RPCs on one channel (thread-safe, as gRPC's are)."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._channel = grpc.insecure_channel(f"unix:{socket_path}", options=_OPTIONS)
        self._rpc = _callables(self._channel)

    def _call(self, method: str, request: Any) -> Any:
        try:
            return self._rpc[method](request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise _error(e, self.socket_path) from None

    def health(self) -> bool:
        return bool(self._call("Health", pb.HealthRequest()).ok)

    def up(self, spec: bytes, origin: str, base_dir: str) -> Dict[str, Any]:
        request = pb.UpRequest(spec_toml=spec.decode("utf-8", "replace"), origin=origin,
                               base_dir=base_dir)
        return _function_json(self._call("Up", request))

    def down(self, name: str) -> None:
        self._call("Down", pb.DownRequest(name=name))

    def functions(self) -> List[Dict[str, Any]]:
        return [_function_json(f) for f in self._call("List", pb.ListRequest()).functions]

    def put_script(self, source: bytes) -> str:
        return str(self._call("PutScript", pb.PutScriptRequest(source=source)).digest)

    def exec(self, function: str, body: bytes, script: Optional[str],
             is_stdin: bool) -> Dict[str, Any]:
        return _exec_json(self._call("Exec", _exec_request(function, body, script)))

    def close(self) -> None:
        self._channel.close()


class AsyncGrpcTransport:
    """GrpcTransport's calls on a grpc.aio channel; made inside the running event loop."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._channel = grpc.aio.insecure_channel(f"unix:{socket_path}", options=_OPTIONS)
        self._rpc = _callables(self._channel)

    async def _call(self, method: str, request: Any) -> Any:
        try:
            return await self._rpc[method](request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise _error(e, self.socket_path) from None

    async def health(self) -> bool:
        return bool((await self._call("Health", pb.HealthRequest())).ok)

    async def up(self, spec: bytes, origin: str, base_dir: str) -> Dict[str, Any]:
        request = pb.UpRequest(spec_toml=spec.decode("utf-8", "replace"), origin=origin,
                               base_dir=base_dir)
        return _function_json(await self._call("Up", request))

    async def down(self, name: str) -> None:
        await self._call("Down", pb.DownRequest(name=name))

    async def functions(self) -> List[Dict[str, Any]]:
        return [_function_json(f)
                for f in (await self._call("List", pb.ListRequest())).functions]

    async def put_script(self, source: bytes) -> str:
        return str((await self._call("PutScript", pb.PutScriptRequest(source=source))).digest)

    async def exec(self, function: str, body: bytes, script: Optional[str],
                   is_stdin: bool) -> Dict[str, Any]:
        return _exec_json(await self._call("Exec", _exec_request(function, body, script)))

    async def close(self) -> None:
        await self._channel.close()
