"""Client (sync) and AsyncClient (asyncio): the supervisor's API as Python calls, over HTTP
on its unix socket (standard library only) or over gRPC (transport="grpc", with grpcio)."""
from __future__ import annotations

import os
from typing import Any, List, Optional, Set

from . import _wire, errors
from ._wire import Bytes
from .types import ExecResult, FunctionInfo

__all__ = ["Client", "AsyncClient"]

_TRANSPORTS = ("http", "grpc")


def _socket_for(transport: str, socket_path: Optional[str]) -> str:
    if transport not in _TRANSPORTS:
        raise ValueError(f"transport must be 'http' or 'grpc', not {transport!r}")
    if socket_path:
        return socket_path
    return _wire.default_grpc_socket_path() if transport == "grpc" else \
        _wire.default_socket_path()


def _spec_file(path: "os.PathLike[str] | str"):
    """A spec file's text, its name (for errors) and its directory (for relative paths)."""
    with open(path, "rb") as f:
        text = f.read()
    path = os.path.abspath(path)
    return text, os.path.basename(path), os.path.realpath(os.path.dirname(path))


class Client:
    """One supervisor, called synchronously.

    socket_path: the HTTP socket; default $ZYGO_SOCKET, else the default socket, as `zygo`
    finds it. With transport="grpc", the gRPC socket (default zygo-grpc.sock beside it).
    timeout: seconds a call may take before ZygoError("deadline_exceeded"); None (the
    default) waits as long as the function's own timeout lets the request run.

    Over HTTP each call opens its own connection, so one Client may serve many threads;
    over gRPC it holds one channel: close() it (or use `with Client(...) as zygo:`).
    """

    def __init__(self, socket_path: Optional[str] = None, *, transport: str = "http",
                 timeout: Optional[float] = None) -> None:
        self.socket_path = _socket_for(transport, socket_path)
        self.transport = transport
        if transport == "grpc":
            from ._grpc import GrpcTransport
            self._t: Any = GrpcTransport(self.socket_path, timeout)
        else:
            from ._http import HttpTransport
            self._t = HttpTransport(self.socket_path, timeout)
        self.scripts = Scripts(self)
        self.pool = Pool(self)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._t.close()

    def health(self) -> bool:
        """True when the supervisor answers; Unavailable when nothing does."""
        return self._t.health()

    def up(self, spec: Bytes, *, origin: str = "request", base_dir: str = "") -> FunctionInfo:
        """Registers (or replaces) the function the TOML text `spec` describes and starts
        warming it; returns at once (state "warming"), and a call to it waits for the
        warm-up. `origin` names the text in errors ("hello.toml:4: ..."), `base_dir`
        resolves its relative `code`. A bad spec raises InvalidArgument."""
        return FunctionInfo.from_json(self._t.up(_wire.encode(spec), origin, base_dir))

    def up_file(self, path: "os.PathLike[str] | str") -> FunctionInfo:
        """up() of a spec file, named by its file name, relative to its directory, as
        `zygo up FILE` does (without waiting for the warm-up)."""
        text, origin, base_dir = _spec_file(path)
        return self.up(text, origin=origin, base_dir=base_dir)

    def down(self, name: str) -> None:
        """Removes a function or runtime pool; NotFound when there is none by that name."""
        self._t.down(name)

    def functions(self) -> List[FunctionInfo]:
        """Every registered function and runtime pool."""
        return [FunctionInfo.from_json(f) for f in self._t.functions()]

    def exec(self, function: str, event: Any = None, *, stdin: Optional[Bytes] = None,
             script: Optional[str] = None, raise_on_error: bool = True) -> ExecResult:
        """Runs one request of `function` with `event` (any JSON-serialisable value; None
        is null) or, for an exec function, `stdin` bytes; `script` is a runtime pool's
        script digest (see pool.run). Returns the ExecResult. A request that ran and did not
        return raises its ExecError (HandlerError, Timeout, OutOfMemory), the result in
        its `.result`; with raise_on_error=False it is returned with ok False instead.
        Requests that cannot run raise NotFound, InvalidArgument, TooManyRequests or
        Unavailable either way."""
        body = _wire.event_body(event, stdin)
        reply = self._t.exec(function, body, script, stdin is not None)
        return _wire.exec_result(reply, raise_on_error)


class Scripts:
    """client.scripts: the runtime pools' script store."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def put(self, source: Bytes) -> str:
        """Stores a script (str or bytes) and returns its digest, "sha256:<hex>"; putting
        the same source again is harmless and returns the same digest."""
        return self._client._t.put_script(_wire.encode(source))


class Pool:
    """client.pool: running scripts in runtime pools (functions with `pool = true`)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._put: Set[str] = set()  # digests this client has stored

    def run(self, pool: str, script: Bytes, event: Any = None, *,
            raise_on_error: bool = True) -> ExecResult:
        """Runs `script` (its source, which defines handler(event)) in runtime pool `pool`
        with `event`: stores it first unless this client already did (or the supervisor
        lost it), then calls by digest. Results and errors as exec()."""
        digest = _wire.script_digest(script)
        if digest not in self._put:
            self._put.add(self._client.scripts.put(script))
        try:
            return self._client.exec(pool, event, script=digest,
                                     raise_on_error=raise_on_error)
        except errors.NotFound as e:
            if not _wire.is_missing_script(e):
                raise
        self._client.scripts.put(script)
        return self._client.exec(pool, event, script=digest, raise_on_error=raise_on_error)


class AsyncClient:
    """Client's calls as coroutines, for asyncio: the same arguments, results and errors.

        async with zygo_sdk.AsyncClient() as zygo:
            result = await zygo.exec("hello", {"name": "Ada"})

    Over HTTP each call is its own connection (asyncio.open_unix_connection), so
    concurrent calls from many tasks are fine; over gRPC it holds one grpc.aio channel,
    which must be made and closed inside the running event loop.
    """

    def __init__(self, socket_path: Optional[str] = None, *, transport: str = "http",
                 timeout: Optional[float] = None) -> None:
        self.socket_path = _socket_for(transport, socket_path)
        self.transport = transport
        if transport == "grpc":
            from ._grpc import AsyncGrpcTransport
            self._t: Any = AsyncGrpcTransport(self.socket_path, timeout)
        else:
            from ._http import AsyncHttpTransport
            self._t = AsyncHttpTransport(self.socket_path, timeout)
        self.scripts = AsyncScripts(self)
        self.pool = AsyncPool(self)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._t.close()

    async def health(self) -> bool:
        """As Client.health."""
        return await self._t.health()

    async def up(self, spec: Bytes, *, origin: str = "request",
                 base_dir: str = "") -> FunctionInfo:
        """As Client.up."""
        return FunctionInfo.from_json(await self._t.up(_wire.encode(spec), origin, base_dir))

    async def up_file(self, path: "os.PathLike[str] | str") -> FunctionInfo:
        """As Client.up_file (the file is read synchronously: specs are small)."""
        text, origin, base_dir = _spec_file(path)
        return await self.up(text, origin=origin, base_dir=base_dir)

    async def down(self, name: str) -> None:
        """As Client.down."""
        await self._t.down(name)

    async def functions(self) -> List[FunctionInfo]:
        """As Client.functions."""
        return [FunctionInfo.from_json(f) for f in await self._t.functions()]

    async def exec(self, function: str, event: Any = None, *, stdin: Optional[Bytes] = None,
                   script: Optional[str] = None, raise_on_error: bool = True) -> ExecResult:
        """As Client.exec. Cancelling the task abandons the call; over gRPC that also kills
        the request."""
        body = _wire.event_body(event, stdin)
        reply = await self._t.exec(function, body, script, stdin is not None)
        return _wire.exec_result(reply, raise_on_error)


class AsyncScripts:
    """AsyncClient.scripts: as Scripts."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def put(self, source: Bytes) -> str:
        """As Scripts.put."""
        return await self._client._t.put_script(_wire.encode(source))


class AsyncPool:
    """AsyncClient.pool: as Pool."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._put: Set[str] = set()

    async def run(self, pool: str, script: Bytes, event: Any = None, *,
                  raise_on_error: bool = True) -> ExecResult:
        """As Pool.run."""
        digest = _wire.script_digest(script)
        if digest not in self._put:
            self._put.add(await self._client.scripts.put(script))
        try:
            return await self._client.exec(pool, event, script=digest,
                                           raise_on_error=raise_on_error)
        except errors.NotFound as e:
            if not _wire.is_missing_script(e):
                raise
        await self._client.scripts.put(script)
        return await self._client.exec(pool, event, script=digest,
                                       raise_on_error=raise_on_error)
