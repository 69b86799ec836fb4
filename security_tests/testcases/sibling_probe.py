"""One request of a warm function attacking another request of the same function.

Run as a warm-exec command (`python3 sibling_probe.py`: the event as JSON on stdin, the
answer as JSON on stdout) or as a Python handler (`sibling_probe.py:main`). Every attempt
is harmless if it succeeds: it reads, writes a file into another request's /tmp, or
signals processes of the test's own function.

{"mode": "hold", "memory_secret": M, "environ_secret": E, "hold_s": N}
    The victim. Keeps M in its memory; with E (warm-exec), first re-execs itself with E in
    its environment, as a handler does that runs a tool with a credential. Writes a file
    into its temp dir ($TMPDIR: a request's own /tmp), then names itself "@<that dir
    without /tmp>" (its comm, which any process of the sandbox may read) and holds until an
    attacker came and went, or N seconds. Answers what it held and whether anything
    appeared in its dir meanwhile.

{"mode": "attack", "memory_secret": M, "environ_secret": E, "kill_zygote": "0" | "KILL"}
    The attacker. Starts a holder of its own as a child (the control: the same attempts on
    a process nothing protects from it), finds the sibling holder, and on both tries to
    find M in /proc/PID/mem, E in /proc/PID/environ, to write into and read from the
    holder's dir through /proc/PID/root (the way into another mount namespace's /tmp), and
    signal 0. Lists its own /tmp, where the sibling's file must not be. Then opens its zygote's (its parent's) /proc/PID/mem and
    sends the zygote signal 0 or SIGKILL; SIGKILLs its own child as that signal's control.
    Each result is what happened: "found", "not found", "written", "read", "sent", or the
    errno's name.
"""
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import time

ATTACKER_NAME = b"zygo-attacker"
PR_SET_NAME = 15


def _name_self(name):
    # prctl, not a write to /proc/self/comm: a request may write only beneath its temp dir.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name[:15], 0, 0, 0)


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().rstrip(b"\n")
    except OSError:
        return b""


def _pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _error(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) else repr(e)


def _python():
    exe = sys.executable or ""
    return exe if os.path.basename(exe).startswith("python") else "/usr/bin/python3"


# --- the victim ---------------------------------------------------------------------------

def _hold(memory_secret, hold_s):
    held = bytearray(memory_secret.encode())  # what a handler keeps while it works
    own_dir = os.environ.get("TMPDIR") or "/tmp"
    with open(os.path.join(own_dir, "secret"), "w") as f:
        f.write("victim's file")
    tag = own_dir[len("/tmp"):] if own_dir.startswith("/tmp") else "?"
    _name_self(b"@" + tag.encode())
    saw_attacker = False
    deadline = time.monotonic() + hold_s
    while time.monotonic() < deadline:
        attacker_here = any(_comm(p) == ATTACKER_NAME for p in _pids())
        if saw_attacker and not attacker_here:
            break
        saw_attacker = saw_attacker or attacker_here
        time.sleep(0.05)
    return {"held": len(held), "saw_attacker": saw_attacker, "dir": own_dir,
            "dir_now": sorted(os.listdir(own_dir))}


def _hold_with_environ(event):
    # Re-exec with the secret in the environment; the memory secret crosses through a pipe
    # (never argv, which any process of the sandbox may read).
    r, w = os.pipe()
    os.write(w, event["memory_secret"].encode())
    os.close(w)
    os.set_inheritable(r, True)
    env = dict(os.environ, ZYGO_PROBE_SECRET=event["environ_secret"])
    exe = _python()
    os.execve(exe, [exe, os.path.abspath(__file__), "--held", str(r),
                    str(event.get("hold_s", 20))], env)


def _held_after_exec(fd, hold_s):
    chunks = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return _hold(b"".join(chunks).decode(), hold_s)


# --- the attacker -------------------------------------------------------------------------

def _find_in_memory(pid, needle):
    try:
        mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    except OSError as e:
        return _error(e)
    with mem:
        try:
            with open("/proc/%d/maps" % pid) as f:
                maps = f.read().splitlines()
        except OSError as e:
            return "maps: " + _error(e)
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5] == "[vvar]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return "found"
            except OSError:
                continue  # a region the kernel will not read (a guard page)
    return "not found"


def _find_in_environ(pid, needle):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return "found" if needle in f.read() else "not found"
    except OSError as e:
        return _error(e)


def _attempt(action):
    try:
        return action()
    except OSError as e:
        return _error(e)


def _write_into(directory):
    with open(os.path.join(directory, "intruder"), "w") as f:
        f.write("an attacker's file")
    return "written"


def _read_from(directory):
    with open(os.path.join(directory, "secret")) as f:
        return "read" if f.read() else "empty"


def _signal(pid, number):
    os.kill(pid, number)
    return "sent"


def _attempts_on(pid, directory, event):
    result = {"pid": pid, "mem": _find_in_memory(pid, event["memory_secret"].encode())}
    if event.get("environ_secret"):
        result["environ"] = _find_in_environ(pid, event["environ_secret"].encode())
    result["write"] = _attempt(lambda: _write_into(directory))
    result["read"] = _attempt(lambda: _read_from(directory))
    result["signal0"] = _attempt(lambda: _signal(pid, 0))
    return result


def _wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.02)
    return None


def _holder_dir(pid):
    """The holder's dir as reached from another process: through its /proc root."""
    return "/proc/%d/root/tmp%s" % (pid, _comm(pid)[1:].decode())


def _start_own_holder(event):
    control_dir = "/tmp/control"
    os.makedirs(control_dir, 0o700)
    hold = {"mode": "hold", "memory_secret": event["memory_secret"],
            "environ_secret": event.get("environ_secret") or "", "hold_s": 30}
    env = dict(os.environ, TMPDIR=control_dir)
    child = subprocess.Popen([_python(), os.path.abspath(__file__)], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, env=env)
    child.stdin.write(json.dumps(hold).encode())
    child.stdin.close()
    return child, control_dir


def _attack(event):
    _name_self(ATTACKER_NAME)
    child, control_dir = _start_own_holder(event)
    answer = {}
    try:
        if not _wait_for(lambda: _comm(child.pid).startswith(b"@"), 10):
            return {"error": "the control holder never held"}
        answer["own_child"] = dict(_attempts_on(child.pid, _holder_dir(child.pid), event),
                                   dir=_holder_dir(child.pid))
        me = os.getpid()
        victim = _wait_for(lambda: next((p for p in _pids() if p not in (me, child.pid) and
                                         _comm(p).startswith(b"@")), None), 10)
        if victim is None:
            return dict(answer, error="no sibling holder found")
        victim_dir = _holder_dir(victim)
        answer["sibling"] = dict(_attempts_on(victim, victim_dir, event), dir=victim_dir)
        answer["own_tmp"] = sorted(os.listdir("/tmp"))
        zygote = os.getppid()
        answer["zygote"] = {"pid": zygote,
                            "mem": _attempt(lambda: open("/proc/%d/mem" % zygote, "rb").close()
                                            or "opened")}
        number = signal.SIGKILL if event.get("kill_zygote") == "KILL" else 0
        answer["own_child"]["kill"] = _attempt(lambda: _signal(child.pid, signal.SIGKILL))
        # Last: if it gets through, the zygote's death takes this request along.
        answer["zygote"]["kill"] = _attempt(lambda: _signal(zygote, number))
        return answer
    finally:
        child.kill()
        child.wait()
        # The victim looks for this attacker every 50 ms; an attack can be over sooner.
        time.sleep(0.5)


def main(event):
    if event.get("mode") == "hold":
        if event.get("environ_secret"):
            _hold_with_environ(event)
        return _hold(event["memory_secret"], event.get("hold_s", 20))
    if event.get("mode") == "attack":
        return _attack(event)
    return {"error": "unknown mode %r" % event.get("mode")}


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--held":
        reply = _held_after_exec(int(sys.argv[2]), float(sys.argv[3]))
    else:
        reply = main(json.load(sys.stdin))
    print(json.dumps(reply), flush=True)
