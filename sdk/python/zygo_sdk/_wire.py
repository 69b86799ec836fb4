"""What every transport shares: where the sockets are, the HTTP requests each call makes,
how an HTTP reply becomes a value or a typed error, and how a reply that ran but failed
becomes an ExecError."""
from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from typing import Any, Dict, Mapping, NamedTuple, Optional, Union

from . import errors
from .types import ExecResult

Bytes = Union[str, bytes, bytearray, memoryview]


def default_socket_path() -> str:
    """The HTTP socket as `zygo` finds it (sdk/cpp/zygo/socket_path.cc): $ZYGO_SOCKET, else
    /run/zygo/zygo.sock for root, else $XDG_RUNTIME_DIR/zygo/zygo.sock, or
    /tmp/zygo-<uid>/zygo.sock without XDG_RUNTIME_DIR."""
    override = os.environ.get("ZYGO_SOCKET")
    if override:
        return override
    uid = os.geteuid()
    if uid == 0:
        return "/run/zygo/zygo.sock"
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        return os.path.join(runtime_dir, "zygo", "zygo.sock")
    return f"/tmp/zygo-{uid}/zygo.sock"


def default_grpc_socket_path() -> str:
    """zygo-grpc.sock beside the HTTP socket, where `zygo serve` puts it by default."""
    return os.path.join(os.path.dirname(default_socket_path()), "zygo-grpc.sock")


def encode(text: Bytes) -> bytes:
    return text.encode() if isinstance(text, str) else bytes(text)


def script_digest(source: Bytes) -> str:
    """The name the supervisor stores a script under: "sha256:<hex of its bytes>"."""
    return "sha256:" + hashlib.sha256(encode(source)).hexdigest()


def event_body(event: Any, stdin: Optional[Bytes]) -> bytes:
    """An exec's body: the event as JSON, or an exec function's stdin; b"" is null."""
    if stdin is not None:
        if event is not None:
            raise ValueError("give an event or stdin, not both")
        return encode(stdin)
    return b"" if event is None else json.dumps(event).encode()


class HttpRequest(NamedTuple):
    method: str
    path: str
    body: Optional[bytes] = None
    content_type: Optional[str] = None


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def health_request() -> HttpRequest:
    return HttpRequest("GET", "/v1/health")


def up_request(spec: Bytes, origin: str, base_dir: str) -> HttpRequest:
    query = urllib.parse.urlencode({"origin": origin, "base_dir": base_dir})
    return HttpRequest("POST", f"/v1/functions?{query}", encode(spec), "application/toml")


def down_request(name: str) -> HttpRequest:
    return HttpRequest("DELETE", f"/v1/functions/{_quote(name)}")


def functions_request() -> HttpRequest:
    return HttpRequest("GET", "/v1/functions")


def put_script_request(source: Bytes) -> HttpRequest:
    return HttpRequest("PUT", "/v1/scripts", encode(source), "text/plain; charset=utf-8")


def exec_request(function: str, body: bytes, script: Optional[str],
                 is_stdin: bool) -> HttpRequest:
    path = f"/v1/functions/{_quote(function)}/exec"
    if script:
        path += "?" + urllib.parse.urlencode({"script": script})
    content_type = "application/octet-stream" if is_stdin else "application/json"
    return HttpRequest("POST", path, body, content_type if body else None)


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    # RFC 9110 also allows an HTTP date; the supervisor sends seconds.
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def http_error(status: int, code: str, message: str,
               headers: Mapping[str, str]) -> errors.ZygoError:
    """The typed error for an HTTP status; `headers` keyed in lower case."""
    if status == 404:
        return errors.NotFound(code, message, status)
    if status in (400, 413):
        return errors.InvalidArgument(code, message, status)
    if status == 429:
        return errors.TooManyRequests(code, message, status, _retry_after(headers))
    if status == 503:
        return errors.Unavailable(code, message, status)
    return errors.ZygoError(code, message, status)


def decode_reply(request: HttpRequest, status: int, headers: Mapping[str, str],
                 data: bytes) -> Dict[str, Any]:
    """The JSON object of a 2xx reply, or the typed error of any other."""
    try:
        reply = json.loads(data) if data else {}
    except ValueError:
        reply = None
    where = f"{request.method} {request.path.split('?')[0]}"
    if 200 <= status < 300:
        if not isinstance(reply, dict):
            raise errors.ZygoError("internal", f"{where}: the reply is not a JSON object",
                                   status)
        return reply
    error = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(error, dict):
        raise http_error(status, str(error.get("code") or "unknown"),
                         str(error.get("message") or ""), headers)
    raise http_error(status, "unknown", f"{where}: HTTP {status}: {data[:200]!r}", headers)


def unreachable(socket_path: str, error: OSError) -> errors.Unavailable:
    return errors.Unavailable(
        "unavailable", f"cannot reach the supervisor at {socket_path}: is `zygo serve` "
        f"running? ({error.strerror or error})")


def no_reply_in_time(socket_path: str, timeout: Optional[float]) -> errors.ZygoError:
    return errors.ZygoError("deadline_exceeded",
                            f"no reply from {socket_path} within {timeout} s")


def exec_result(reply: Dict[str, Any], raise_on_error: bool) -> ExecResult:
    """The reply as an ExecResult; with raise_on_error, a failed one raises its ExecError."""
    result = ExecResult.from_json(reply)
    if result.ok or not raise_on_error:
        return result
    status = result.outcome.status
    if status == "timeout":
        raise errors.Timeout(result)
    if status == "oom":
        raise errors.OutOfMemory(result)
    if status == "handler_error":
        raise errors.HandlerError(result)
    raise errors.ExecError(result)


def is_missing_script(error: errors.NotFound) -> bool:
    # The store's words: "no script sha256:... (PutScript it first)".
    return error.message.startswith("no script ")
