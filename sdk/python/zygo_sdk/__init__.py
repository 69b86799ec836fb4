"""Zygo's Python SDK: a client for the supervisor's HTTP/JSON API on its unix socket
(`zygo serve`). Standard library only.

    import zygo_sdk
    client = zygo_sdk.Client()
    reply = client.exec("hello", {"name": "world"})
"""
import http.client
import json
import os
import socket
import urllib.parse

__all__ = ["Client", "ZygoError", "default_socket_path"]


def default_socket_path():
    """$ZYGO_SOCKET, else /run/zygo/zygo.sock for root, else
    $XDG_RUNTIME_DIR/zygo/zygo.sock, or /tmp/zygo-<uid>/zygo.sock without XDG_RUNTIME_DIR
    (the same rule as `zygo` and `zygo serve`)."""
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


class ZygoError(Exception):
    """An API error. `code` is the API's error code ("not_found", "invalid_argument",
    "resource_exhausted", ...), or "unavailable" when the supervisor cannot be reached;
    `http_status` is 0 when there was no HTTP reply."""

    def __init__(self, code, message, http_status=0):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, socket_path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Client:
    """One supervisor. Each call opens its own connection, so a Client may be shared
    between threads. `timeout` (seconds, None for none) bounds each call; an exec is
    already bounded by its function's own timeout."""

    def __init__(self, socket_path=None, timeout=None):
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout

    def health(self):
        """True when the supervisor answers."""
        return bool(self._call("GET", "/v1/health").get("ok"))

    def up(self, spec_toml, origin="request", base_dir=""):
        """Registers (or replaces) the function the TOML text describes and returns its
        info (name, image, runtime, entry, pool, state, ...). `origin` names the text in
        errors; `base_dir` resolves relative paths in it."""
        query = urllib.parse.urlencode({"origin": origin, "base_dir": base_dir})
        return self._call("POST", f"/v1/functions?{query}", _encode(spec_toml),
                          "application/toml")

    def up_file(self, path):
        """up() of a spec file, named by its file name, relative to its directory."""
        with open(path, "rb") as f:
            text = f.read()
        path = os.path.abspath(path)
        return self.up(text, os.path.basename(path), os.path.realpath(os.path.dirname(path)))

    def down(self, name):
        """Removes a function (or runtime pool)."""
        self._call("DELETE", f"/v1/functions/{_quote(name)}")

    def list(self):
        """The functions and runtime pools, as a list of dicts."""
        return self._call("GET", "/v1/functions")["functions"]

    def put_script(self, source):
        """Stores a runtime-pool script (str or bytes) and returns its digest."""
        return self._call("PUT", "/v1/scripts", _encode(source), "text/plain; charset=utf-8")[
            "digest"]

    def exec(self, name, event=None, script=None, stdin=None):
        """Runs one request and returns the reply: {ok, result, error, stdout, stderr,
        stdout_truncated, stderr_truncated, outcome, timings_us}. A handler that raised or
        a request that was killed is a reply with ok False, not an exception; ZygoError is
        for requests that could not run (unknown function, bad event, over capacity).
        `event` is any JSON-serialisable value; an exec function's standard input is
        `stdin` (bytes or str) instead."""
        if stdin is not None and event is not None:
            raise ValueError("give an event or stdin, not both")
        if stdin is not None:
            body, content_type = _encode(stdin), "application/octet-stream"
        elif event is not None:
            body, content_type = json.dumps(event).encode(), "application/json"
        else:
            body, content_type = b"", None  # an empty body is the null event
        path = f"/v1/functions/{_quote(name)}/exec"
        if script is not None:
            path += "?" + urllib.parse.urlencode({"script": script})
        return self._call("POST", path, body, content_type)

    def _call(self, method, path, body=None, content_type=None):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if body is None and method in ("POST", "PUT"):
            body = b""
        conn = _UnixConnection(self.socket_path, self.timeout)
        try:
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (FileNotFoundError, ConnectionRefusedError) as e:
                raise ZygoError("unavailable", f"cannot reach the supervisor at "
                                f"{self.socket_path}: is `zygo serve` running? ({e.strerror})")
            except OSError as e:
                raise ZygoError("unavailable", f"{method} {path} on {self.socket_path}: {e}")
        finally:
            conn.close()
        return _decode(method, path, response.status, data)


def _encode(text):
    return text.encode() if isinstance(text, str) else bytes(text)


def _quote(segment):
    return urllib.parse.quote(segment, safe="")


def _decode(method, path, status, data):
    try:
        reply = json.loads(data) if data else {}
    except ValueError:
        reply = None
    if 200 <= status < 300:
        if not isinstance(reply, dict):
            raise ZygoError("internal", f"{method} {path}: the reply is not a JSON object",
                            status)
        return reply
    error = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(error, dict):
        raise ZygoError(error.get("code") or "unknown", error.get("message") or "", status)
    raise ZygoError("unknown", f"{method} {path}: HTTP {status}: {data[:200]!r}", status)
