"""The SDK's exceptions: one base, ZygoError, and a class per way a call can fail.

Two families. A request the supervisor refused or could not reach never ran: NotFound,
InvalidArgument, TooManyRequests, Unavailable (and ZygoError itself for the rare rest). A
request that ran and did not return is an ExecError, raised by exec() unless
raise_on_error=False, with the whole reply in `.result`: HandlerError, Timeout,
OutOfMemory, or ExecError itself (a non-zero exit, a signal, a seccomp kill).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .types import ExecResult

__all__ = [
    "ZygoError", "NotFound", "InvalidArgument", "TooManyRequests", "Unavailable",
    "ExecError", "HandlerError", "Timeout", "OutOfMemory",
]


class ZygoError(Exception):
    """Any failure of a call. `code` is the API's error code ("not_found",
    "invalid_argument", "resource_exhausted", "unavailable", ...) or, for ExecError, the
    outcome's status ("handler_error", "timeout", "oom", ...); `http_status` is the HTTP
    status (0 over gRPC or when nothing answered)."""

    def __init__(self, code: str, message: str, http_status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


class NotFound(ZygoError):
    """No such function, runtime pool or script (HTTP 404, gRPC NOT_FOUND)."""


class InvalidArgument(ZygoError):
    """The supervisor refused what was sent: a bad spec (the message names the file, line
    and field), a malformed event (400), an event or body over 16 MiB (413)."""


class TooManyRequests(ZygoError):
    """Over capacity: the supervisor's queue is full (HTTP 429, gRPC RESOURCE_EXHAUSTED).
    `retry_after` is the seconds the supervisor asked to wait (its Retry-After header);
    None over gRPC, which carries none."""

    def __init__(self, code: str, message: str, http_status: int = 0,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(code, message, http_status)
        self.retry_after = retry_after


class Unavailable(ZygoError):
    """Nothing answers on the socket (is `zygo serve` running?), or the supervisor said 503:
    the function's zygote died and is re-warmed on the next call, a connection cap, or it
    is shutting down. Worth a retry."""


class ExecError(ZygoError):
    """The request ran and did not return: `result` is the whole reply (stdout, stderr,
    outcome, timings); `type`, `message` and `traceback` are its error's. Raised as is for
    a non-zero exit, a signal or a seccomp kill; the subclasses below for the rest."""

    def __init__(self, result: "ExecResult") -> None:
        error = result.error
        self.result = result
        self.type = error.type if error else ""
        self.traceback = error.traceback if error else ""
        message = (error.message if error else "") or result.outcome.status
        super().__init__(result.outcome.status, message)
        # ZygoError's str() is "code: message"; the handler's own words read better.
        self.args = (f"{self.type or result.outcome.status}: {message}",)


class HandlerError(ExecError):
    """The handler raised: `type` is the exception's class ("ValueError"), `message` its
    text and `traceback` the Python traceback (outcome status "handler_error")."""


class Timeout(ExecError):
    """The request ran past its function's timeout and was killed (outcome "timeout");
    what it printed before is in result.stdout."""


class OutOfMemory(ExecError):
    """The request hit its function's memory limit and was killed (outcome "oom")."""
