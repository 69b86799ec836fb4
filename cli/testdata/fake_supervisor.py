"""A stand-in for `zygo serve` in the CLI tests: the supervisor's HTTP/JSON API on a unix
socket, with canned functions whose names pick how a request ends. Every request is logged
as one JSON line (method, path, query, content type, body) for the test to check.

Usage: fake_supervisor.py SOCKET LOG
"""
import hashlib
import json
import os
import re
import sys
import urllib.parse

import fake_api_server


def info(name, runtime="python", entry="handler.py:handle", pool=False):
    return {"name": name, "image": "host", "runtime": runtime, "entry": "" if pool else entry,
            "pool": pool, "state": "warm", "requests": 0, "memory_bytes": 268435456,
            "timeout_ms": 1000, "cold_after_ms": 600000, "spec_path": "", "progress": "",
            "error": "", "warm_ups": 1}


FUNCTIONS = {
    "raiser": info("raiser"),
    "slow": info("slow"),
    "hog": info("hog"),
    "exit3": info("exit3", runtime="exec", entry="sh -c 'exit 3'"),
    "cat": info("cat", runtime="exec", entry="cat"),
    "pool": info("pool", pool=True),
    "unpulled": dict(info("unpulled"), state="cold", warm_ups=0,
                     error="unpulled.toml: manifest unknown: 127.0.0.1:5000/app:2"),
}


def outcome(status="ok", **fields):
    base = {"status": status, "exit_code": 0, "signal": 0, "timed_out": False,
            "oom_killed": False, "peak_rss_kb": 1234, "wall_ms": 1.5}
    base.update(fields)
    return base


def reply(ok=True, result=None, error=None, stdout="", stderr="", **outcome_fields):
    return {"ok": ok, "result": result, "error": error, "stdout": stdout, "stderr": stderr,
            "stdout_truncated": False, "stderr_truncated": False,
            "outcome": outcome(**outcome_fields),
            "timings_us": {"fork": 0, "admit": 0, "run": 100, "reply": 5, "total": 120}}


# Smaller than the real supervisor's 16 MiB, so the test's oversized event stays small.
EVENT_LIMIT = 1 << 20


def error(code, message):
    status = {"not_found": 404, "invalid_argument": 400, "payload_too_large": 413}[code]
    return status, {"error": {"code": code, "message": message}}


def run(name, body, query):
    fn = FUNCTIONS.get(name)
    if fn is None:
        return error("not_found", f"no function named {name}")
    if fn["runtime"] == "exec":
        if name == "exit3":
            return 200, reply(ok=False, error={"type": "nonzero_exit", "message": "exit 3",
                                               "traceback": ""},
                              stderr="exiting 3\n", status="nonzero_exit", exit_code=3)
        return 200, reply(stdout=body.decode("latin-1"))
    try:
        event = json.loads(body) if body else None
    except ValueError as e:
        return error("invalid_argument", f"the event is not JSON: {e}")
    if name == "raiser":
        tb = 'Traceback (most recent call last):\n  File "handler.py", line 2\nValueError: bad input\n'
        return 200, reply(ok=False, error={"type": "ValueError", "message": "bad input",
                                           "traceback": tb}, status="handler_error")
    if name == "slow":
        return 200, reply(ok=False, error={"type": "timeout", "message": "", "traceback": ""},
                          status="timeout", timed_out=True, wall_ms=1000.2)
    if name == "hog":
        return 200, reply(ok=False, error={"type": "oom", "message": "", "traceback": ""},
                          status="oom", oom_killed=True, peak_rss_kb=262144)
    fn["requests"] += 1
    return 200, reply(result={"event": event, "script": query.get("script", [None])[0]},
                      stdout="handler says hi\n", stderr="handler warns\n")


class Handler(fake_api_server.JsonHandler):
    def route(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        length = int(self.headers.get("Content-Length", 0))
        if url.path.endswith("/exec") and length > EVENT_LIMIT:
            # As the real one does: answer at the headers, close without reading the body,
            # so a client still writing it finds the connection gone (EPIPE).
            self.close_connection = True
            return self.answer(*error("payload_too_large",
                                      f"event is {length} bytes; the limit is {EVENT_LIMIT} bytes"))
        body = self.rfile.read(length)
        with open(self.server.log, "a") as log:
            log.write(json.dumps({"method": self.command, "path": url.path, "query": query,
                                  "content_type": self.headers.get("Content-Type"),
                                  "body": body.decode("latin-1")}) + "\n")
        parts = url.path.split("/")[1:]
        key = (self.command, "/".join(parts[:2]), len(parts))
        if key == ("GET", "v1/health", 2):
            return self.answer(200, {"ok": True})
        if key == ("GET", "v1/functions", 2):
            return self.answer(200, {"functions": list(FUNCTIONS.values())})
        if key == ("POST", "v1/functions", 2):
            origin = query.get("origin", ["request"])[0]
            match = re.search(r'^name\s*=\s*"([^"]*)"', body.decode(), re.M)
            if match is None:
                return self.answer(*error("invalid_argument", f"{origin}: name: missing"))
            FUNCTIONS[match.group(1)] = info(match.group(1))
            return self.answer(201, FUNCTIONS[match.group(1)])
        if key == ("DELETE", "v1/functions", 3):
            name = urllib.parse.unquote(parts[2])
            if FUNCTIONS.pop(name, None) is None:
                return self.answer(*error("not_found", f"no function named {name}"))
            return self.answer(200, {"ok": True})
        if key == ("PUT", "v1/scripts", 2):
            return self.answer(201, {"digest": "sha256:" + hashlib.sha256(body).hexdigest()})
        if key == ("POST", "v1/functions", 4) and parts[3] == "exec":
            return self.answer(*run(urllib.parse.unquote(parts[2]), body, query))
        return self.answer(*error("not_found", f"no route for {self.command} {url.path}"))


def main():
    socket_path, log = sys.argv[1], sys.argv[2]
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    with fake_api_server.UnixServer(socket_path, Handler) as server:
        server.log = log
        server.serve_forever()


if __name__ == "__main__":
    main()
