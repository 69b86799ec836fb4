#!/usr/bin/env python3
"""A workflow engine's script runner, the shape the seeds' embedders have: it takes jobs from
a queue directory and runs each user's script through Zygo's SDK in a warm runtime pool, so
a job costs milliseconds and runs in a sandbox of its own.

    worker.py --queue DIR [--once] [--socket PATH]

A job is DIR/incoming/ID.json: {"language": "python" | "javascript", "code": "...",
"input": <any JSON>}. Its code defines handler(event) (def handler(event) in Python,
function handler(event) in JavaScript); `input` is the event. The worker claims a job by
renaming it into DIR/running/ (so several workers can share a queue), writes
DIR/done/ID.json ({"ok", "result", "error", "stdout", "stderr", "status", "wall_ms"})
through a temporary file and a rename, and removes the claimed job. With --once it stops
when the queue is empty; otherwise it polls it.
"""
import argparse
import json
import os
import sys
import time

import zygo_sdk

POOLS = {"python": "wf-python", "javascript": "wf-javascript"}
HERE = os.path.dirname(os.path.abspath(__file__))


def ensure_pools(zygo):
    """Registers the two pools (pools/*.toml) unless they are already up."""
    present = {f.name for f in zygo.functions()}
    for spec in ("python.toml", "javascript.toml"):
        path = os.path.join(HERE, "pools", spec)
        with open(path) as f:
            text = f.read()
        name = next(line.split('"')[1] for line in text.splitlines() if line.startswith("name"))
        if name not in present:
            zygo.up(text, origin=spec, base_dir=os.path.dirname(path))


def write_atomically(path, value):
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(temporary, path)


def run_job(zygo, job):
    """One job's answer: the script's result, or why it failed (the script's own error, a
    deadline, a memory limit, or a job the worker cannot run)."""
    pool = POOLS.get(job.get("language"))
    if pool is None:
        return {"ok": False, "error": {"type": "JobError",
                                       "message": f"unknown language {job.get('language')!r}"}}
    try:
        result = zygo.pool.run(pool, job.get("code", ""), job.get("input"), raise_on_error=False)
    except zygo_sdk.ZygoError as e:  # the job could not run at all: a bad script, a full queue
        return {"ok": False, "error": {"type": type(e).__name__, "message": str(e)}}
    error = result.error
    return {"ok": result.ok, "result": result.result,
            "error": None if error is None else {"type": error.type, "message": error.message,
                                                 "traceback": error.traceback},
            "stdout": result.stdout, "stderr": result.stderr,
            "status": result.outcome.status, "wall_ms": result.outcome.wall_ms}


def claim(queue):
    """The next job's id and its claimed path, or None when the queue is empty."""
    incoming = os.path.join(queue, "incoming")
    for name in sorted(os.listdir(incoming)):
        if not name.endswith(".json"):
            continue
        claimed = os.path.join(queue, "running", name)
        try:
            os.rename(os.path.join(incoming, name), claimed)
        except FileNotFoundError:
            continue  # another worker took it
        return name[:-len(".json")], claimed
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", required=True, help="the queue directory")
    parser.add_argument("--once", action="store_true", help="stop when the queue is empty")
    parser.add_argument("--socket", help="the supervisor's socket (default: as zygo finds it)")
    args = parser.parse_args()
    for sub in ("incoming", "running", "done"):
        os.makedirs(os.path.join(args.queue, sub), exist_ok=True)
    zygo = zygo_sdk.Client(args.socket)
    ensure_pools(zygo)
    while True:
        job = claim(args.queue)
        if job is None:
            if args.once:
                return 0
            time.sleep(0.2)
            continue
        job_id, claimed = job
        try:
            with open(claimed) as f:
                answer = run_job(zygo, json.load(f))
        except (OSError, ValueError) as e:
            answer = {"ok": False, "error": {"type": "JobError", "message": f"unreadable job: {e}"}}
        write_atomically(os.path.join(args.queue, "done", job_id + ".json"), answer)
        os.unlink(claimed)
        print(f"{job_id}: {'ok' if answer['ok'] else answer['error']['type']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
