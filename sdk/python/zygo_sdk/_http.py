"""HTTP/1.1 over the supervisor's unix socket, standard library only: http.client for the
sync client, the event loop's socket calls (sock_connect, sock_sendall, sock_recv) for
the async one. One connection per call, so
a client may be shared between threads (sync) or tasks (async)."""
from __future__ import annotations

import asyncio
import http.client
import socket
from typing import Any, Dict, List, Optional, Tuple

from . import _wire, errors

# The supervisor's reply heads are a few lines; anything longer is not it.
_MAX_HEAD_BYTES = 64 << 10


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _headers(request: _wire.HttpRequest) -> Dict[str, str]:
    headers = {"Accept": "application/json"}
    if request.content_type:
        headers["Content-Type"] = request.content_type
    return headers


class HttpTransport:
    """The sync client's calls, each one HTTP request (see _wire for their shapes)."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def health(self) -> bool:
        return bool(self.call(_wire.health_request()).get("ok"))

    def up(self, spec: bytes, origin: str, base_dir: str) -> Dict[str, Any]:
        return self.call(_wire.up_request(spec, origin, base_dir))

    def down(self, name: str) -> None:
        self.call(_wire.down_request(name))

    def functions(self) -> List[Dict[str, Any]]:
        return list(self.call(_wire.functions_request()).get("functions") or [])

    def put_script(self, source: bytes) -> str:
        return str(self.call(_wire.put_script_request(source))["digest"])

    def exec(self, function: str, body: bytes, script: Optional[str],
             is_stdin: bool) -> Dict[str, Any]:
        return self.call(_wire.exec_request(function, body, script, is_stdin))

    def call(self, request: _wire.HttpRequest) -> Dict[str, Any]:
        conn = _UnixConnection(self.socket_path, self.timeout)
        try:
            try:
                conn.connect()
            except OSError as e:
                raise _wire.unreachable(self.socket_path, e) from None
            try:
                body = request.body
                if body is None and request.method in ("POST", "PUT"):
                    body = b""
                try:
                    conn.request(request.method, request.path, body=body,
                                 headers=_headers(request))
                except (BrokenPipeError, ConnectionResetError):
                    # A body over the limit is answered 413 at its headers and the
                    # connection closed while we still send: the answer is waiting.
                    pass
                response = conn.getresponse()
                data = response.read()
            except socket.timeout:
                raise _wire.no_reply_in_time(self.socket_path, self.timeout) from None
            except (OSError, http.client.HTTPException) as e:
                raise errors.Unavailable(
                    "unavailable", f"{request.method} {request.path} on "
                    f"{self.socket_path}: {e}") from None
        finally:
            conn.close()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return _wire.decode_reply(request, response.status, headers, data)

    def close(self) -> None:
        pass


class AsyncHttpTransport:
    """HttpTransport's calls as coroutines."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    async def health(self) -> bool:
        return bool((await self.call(_wire.health_request())).get("ok"))

    async def up(self, spec: bytes, origin: str, base_dir: str) -> Dict[str, Any]:
        return await self.call(_wire.up_request(spec, origin, base_dir))

    async def down(self, name: str) -> None:
        await self.call(_wire.down_request(name))

    async def functions(self) -> List[Dict[str, Any]]:
        return list((await self.call(_wire.functions_request())).get("functions") or [])

    async def put_script(self, source: bytes) -> str:
        return str((await self.call(_wire.put_script_request(source)))["digest"])

    async def exec(self, function: str, body: bytes, script: Optional[str],
                   is_stdin: bool) -> Dict[str, Any]:
        return await self.call(_wire.exec_request(function, body, script, is_stdin))

    async def call(self, request: _wire.HttpRequest) -> Dict[str, Any]:
        try:
            return await asyncio.wait_for(self._call(request), self.timeout)
        except asyncio.TimeoutError:
            raise _wire.no_reply_in_time(self.socket_path, self.timeout) from None

    async def _call(self, request: _wire.HttpRequest) -> Dict[str, Any]:
        # The loop's socket calls, not open_unix_connection's streams: a stream whose write
        # fails (a body over the limit, answered 413 and closed before it is all sent)
        # drops the reply already received, while the socket still holds it to be read.
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            try:
                await loop.sock_connect(sock, self.socket_path)
            except OSError as e:
                raise _wire.unreachable(self.socket_path, e) from None
            try:
                status, headers, data = await self._exchange(loop, sock, request)
            except (OSError, ValueError) as e:
                raise errors.Unavailable(
                    "unavailable", f"{request.method} {request.path} on "
                    f"{self.socket_path}: {e!r}") from None
        finally:
            sock.close()
        return _wire.decode_reply(request, status, headers, data)

    @staticmethod
    async def _exchange(loop: asyncio.AbstractEventLoop, sock: socket.socket,
                        request: _wire.HttpRequest) -> Tuple[int, Dict[str, str], bytes]:
        body = request.body or b""
        head = [f"{request.method} {request.path} HTTP/1.1", "Host: localhost",
                "Connection: close", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in _headers(request).items()]
        try:
            await loop.sock_sendall(sock, ("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            await loop.sock_sendall(sock, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered before the body was read (413): read the answer
        received = bytearray()
        while b"\r\n\r\n" not in received:
            if len(received) > _MAX_HEAD_BYTES:
                raise ValueError("the reply's head is too long")
            chunk = await loop.sock_recv(sock, 65536)
            if not chunk:
                raise ValueError(f"the connection closed mid-reply: {bytes(received[:80])!r}")
            received += chunk
        head_end = received.index(b"\r\n\r\n")
        lines = received[:head_end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError(f"not an HTTP reply: {lines[0][:80]!r}")
        headers: Dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        data = received[head_end + 4:]
        length = headers.get("content-length")
        want = int(length) if length is not None else None
        while want is None or len(data) < want:
            chunk = await loop.sock_recv(sock, 1 << 20)
            if not chunk:
                if want is None:
                    break
                raise ValueError(f"the connection closed {want - len(data)} bytes short")
            data += chunk
        return int(parts[1]), headers, bytes(data)

    async def close(self) -> None:
        pass
