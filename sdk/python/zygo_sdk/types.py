"""What calls return: a request's ExecResult (with its Outcome, Timings and ErrorInfo) and
a FunctionInfo per registered function. Built from the HTTP reply's JSON; the gRPC
transport converts its messages to the same JSON shape first, so both read alike."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

__all__ = ["ErrorInfo", "Outcome", "Timings", "ExecResult", "FunctionInfo"]


@dataclass(frozen=True)
class ErrorInfo:
    """Why the handler did not return: the exception's class (or "timeout", "oom",
    "crashed", "seccomp", "nonzero_exit"), its message and the Python traceback."""
    type: str
    message: str
    traceback: str

    @staticmethod
    def from_json(value: Any) -> Optional["ErrorInfo"]:
        if not isinstance(value, dict):
            return None
        return ErrorInfo(str(value.get("type") or ""), str(value.get("message") or ""),
                         str(value.get("traceback") or ""))


@dataclass(frozen=True)
class Outcome:
    """How the request's process ended. `status`: "ok", "handler_error", "nonzero_exit",
    "signaled", "timeout", "oom", "pids_limit" or "seccomp_killed"."""
    status: str
    exit_code: int = 0
    signal: int = 0
    timed_out: bool = False
    oom_killed: bool = False
    peak_rss_kb: int = 0
    wall_ms: float = 0.0
    limits_applied: bool = True
    seccomp_kill: Optional[Dict[str, str]] = None  # {"syscall": "getpid", "arch": "i386"}

    @staticmethod
    def from_json(value: Any) -> "Outcome":
        value = value if isinstance(value, dict) else {}
        return Outcome(
            status=str(value.get("status") or ""),
            exit_code=int(value.get("exit_code") or 0),
            signal=int(value.get("signal") or 0),
            timed_out=bool(value.get("timed_out")),
            oom_killed=bool(value.get("oom_killed")),
            peak_rss_kb=int(value.get("peak_rss_kb") or 0),
            wall_ms=float(value.get("wall_ms") or 0.0),
            limits_applied=bool(value.get("limits_applied", True)),
            seccomp_kill=value.get("seccomp_kill"),
        )


@dataclass(frozen=True)
class Timings:
    """Per-phase timings of one request, in microseconds of the supervisor's clock."""
    fork: int = 0
    admit: int = 0
    run: int = 0
    reply: int = 0
    total: int = 0

    @staticmethod
    def from_json(value: Any) -> "Timings":
        value = value if isinstance(value, dict) else {}
        return Timings(**{k: int(value.get(k) or 0)
                          for k in ("fork", "admit", "run", "reply", "total")})


@dataclass(frozen=True)
class ExecResult:
    """One request's reply. `ok`: the handler returned (or the command exited 0);
    `result`: its return value (decoded JSON; None for an exec function); `stdout` and
    `stderr`: what it printed (at most 1 MiB each, the *_truncated flags say if more was
    cut); `reply`: the reply as the API sent it (HTTP's JSON object)."""
    ok: bool
    result: Any
    error: Optional[ErrorInfo]
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    outcome: Outcome
    timings_us: Timings
    reply: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def from_json(reply: Dict[str, Any]) -> "ExecResult":
        return ExecResult(
            ok=bool(reply.get("ok")),
            result=reply.get("result"),
            error=ErrorInfo.from_json(reply.get("error")),
            stdout=str(reply.get("stdout") or ""),
            stderr=str(reply.get("stderr") or ""),
            stdout_truncated=bool(reply.get("stdout_truncated")),
            stderr_truncated=bool(reply.get("stderr_truncated")),
            outcome=Outcome.from_json(reply.get("outcome")),
            timings_us=Timings.from_json(reply.get("timings_us")),
            reply=reply,
        )


@dataclass(frozen=True)
class FunctionInfo:
    """A registered function or runtime pool, as `zygo ls` shows it. `state`: "cold",
    "warming" or "warm". Over gRPC, `progress`, `error`, `warm_ups`, `warm_ms` and `forked`
    are not sent and keep their defaults."""
    name: str
    image: str = ""
    runtime: str = ""
    entry: str = ""
    pool: bool = False
    state: str = ""
    requests: int = 0
    memory_bytes: int = 0
    timeout_ms: int = 0
    cold_after_ms: int = 0
    spec_path: str = ""
    progress: str = ""
    error: str = ""
    warm_ups: int = 0
    warm_ms: float = 0.0
    forked: bool = False

    @staticmethod
    def from_json(value: Dict[str, Any]) -> "FunctionInfo":
        known = FunctionInfo.__dataclass_fields__
        return FunctionInfo(**{k: v for k, v in value.items() if k in known})
