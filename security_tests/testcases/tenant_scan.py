# A tenant looking for another function's data: every process it can see, by /proc/PID
# environ, cmdline and mem. As a warm Python function (tenant_scan.py:main) it scans once
# at import time, when the zygote is made (the supervisor's fork, once, was pid 1), and
# again in each request; as a warm-exec command it scans once, per request, and prints the
# same JSON (import_scan and import_found null).
# The needles are in /code/needles.json, which the test writes before registering it.
import json
import os
import sys


def _needles():
    with open('/code/needles.json') as f:
        return [n.encode() for n in json.load(f)]


# Mappings larger than this are address space a runtime reserved, not data worth the time.
MAX_MAPPING = 256 << 20


def _regions(pid):
    """The bytes of each readable mapping of `pid`, one mapping at a time."""
    with open('/proc/%d/maps' % pid) as maps, open('/proc/%d/mem' % pid, 'rb', 0) as mem:
        for line in maps:
            parts = line.split()
            start, end = (int(x, 16) for x in parts[0].split('-'))
            if not parts[1].startswith('r') or '[vvar' in line or '[vsyscall' in line:
                continue
            if end - start > MAX_MAPPING:
                continue
            try:
                mem.seek(start)
                yield mem.read(end - start)
            except OSError:
                pass


def _mem_has(pid, needles):
    return any(n in region for region in _regions(pid) for n in needles)


def _what(error):
    import errno
    return errno.errorcode.get(error.errno, str(error))


def scan(needles):
    """{pid: {"environ"|"cmdline"|"mem": "read"|"found"|ERRNO}}, and whether any needle."""
    report, found_any = {}, False
    me = os.getpid()
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) == me:
            continue
        pid, entry = int(name), {}
        for what in ('environ', 'cmdline', 'mem'):
            try:
                if what == 'mem':
                    hit = _mem_has(pid, needles)
                else:
                    with open('/proc/%d/%s' % (pid, what), 'rb') as f:
                        data = f.read()
                    hit = any(n in data for n in needles)
                found_any = found_any or hit
                entry[what] = 'found' if hit else 'read'
            except OSError as e:
                entry[what] = _what(e)
        report[str(pid)] = entry
    return report, found_any


def own_child_control(needle):
    """The scanner on a process it may read (a child of its own holding `needle`)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        held = bytearray(needle)  # noqa: F841 (kept alive on the heap)
        os.close(read_end)
        os.write(write_end, b'r')
        import signal
        signal.pause()
        os._exit(0)
    os.close(write_end)
    os.read(read_end, 1)
    try:
        return _mem_has(pid, [needle])
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


NEEDLES = _needles()
# Imported by a zygote: the scan of its import time. Run as a command, main()'s scan is
# the one of its request and there is no import time of its own.
IMPORT_SCAN, IMPORT_FOUND = scan(NEEDLES) if __name__ != '__main__' else (None, None)


def main(event):
    report, found = scan(NEEDLES)
    return {'import_scan': IMPORT_SCAN, 'import_found': IMPORT_FOUND,
            'request_scan': report, 'request_found': found,
            'control': own_child_control(b'zygo-own-child-needle-' + os.urandom(8).hex().encode())}


if __name__ == '__main__':
    print(json.dumps(main(None)))
