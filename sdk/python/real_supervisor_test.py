"""The installed SDK against a real supervisor this test starts: every call, sync and async,
and each typed error as the supervisor itself produces it (an unknown function, a bad
spec, an event over the limit, a handler's exception, a timeout, an oom, a 429 from a
queue made full). Run by real_supervisor_test.sh in a venv where `pip install` put
zygo_sdk; ZYGO_TEST_TRANSPORT picks http (default) or grpc, ZYGO_TEST_SUPERVISOR the
binary."""
import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import zygo_sdk

TRANSPORT = os.environ.get("ZYGO_TEST_TRANSPORT", "http")
# At most 2 requests run and 4 wait: a burst of 10 slow ones must meet a full queue, while
# the test's own calls (at most 3 at once) always fit, even before a worker picks one up.
WORKERS, MAX_QUEUED = 2, 4

HANDLERS = '''import time


def hello(event):
    print("saying hello to", event["name"])
    return {"greeting": "hello, " + event["name"]}


def raiser(event):
    raise ValueError("no " + str(event))


def sleeper(event):
    print("going to sleep", flush=True)
    time.sleep(event["seconds"])
    return "woke"


def hog(event):
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))
'''

SPECS = {
    "hello": 'entry = "fns.py:hello"\n',
    "raiser": 'entry = "fns.py:raiser"\n',
    "sleeper": 'entry = "fns.py:sleeper"\n[limits]\ntimeout = "1s"\n',
    "slow": 'entry = "fns.py:sleeper"\n[limits]\ntimeout = "20s"\n',
    "hog": 'entry = "fns.py:hog"\n[limits]\nmemory = "64M"\n',
    "py": 'pool = true\n',
}


class Supervisor:
    """`supervisor --listen ... --no-demo` in a short /tmp directory (sun_path is 108
    bytes), its code in a sibling directory (code may not live beside the sockets)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="zygo-sdk-py-", dir="/tmp")
        self.sockets = os.path.join(self.dir, "run")
        self.code = os.path.join(self.dir, "code")
        os.makedirs(self.sockets)
        os.makedirs(self.code)
        self.http = os.path.join(self.sockets, "http.sock")
        self.grpc = os.path.join(self.sockets, "grpc.sock")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.process = subprocess.Popen(
            [os.environ["ZYGO_TEST_SUPERVISOR"], "--listen", self.http, "--grpc-listen",
             self.grpc, "--state-dir", os.path.join(self.dir, "state"), "--no-demo",
             "--workers", str(WORKERS), "--max-queued", str(MAX_QUEUED)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.grpc) or not os.path.exists(self.http):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the supervisor did not start:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self):
        self.log.seek(0)
        return self.log.read()[-3000:]

    def stop(self):
        self.process.terminate()  # SIGTERM: it removes its cgroups
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def setUpModule():
    global SUPERVISOR
    SUPERVISOR = Supervisor()
    with open(os.path.join(SUPERVISOR.code, "fns.py"), "w") as f:
        f.write(HANDLERS)
    client = new_client()
    for _ in range(100):  # the sockets exist a moment before the API answers
        try:
            client.health()
            break
        except zygo_sdk.Unavailable:
            time.sleep(0.1)
    for name, spec in SPECS.items():
        path = os.path.join(SUPERVISOR.code, f"{name}.toml")
        with open(path, "w") as f:
            f.write(f'name = "{name}"\n{spec}')
        client.up_file(path)
    client.close()


def tearDownModule():
    SUPERVISOR.stop()


def socket_path():
    return SUPERVISOR.grpc if TRANSPORT == "grpc" else SUPERVISOR.http


def new_client(**kwargs):
    return zygo_sdk.Client(socket_path(), transport=TRANSPORT, **kwargs)


class SyncTest(unittest.TestCase):
    def setUp(self):
        self.zygo = new_client()

    def tearDown(self):
        self.zygo.close()

    def fail_with_log(self, message):
        self.fail(f"{message}\nsupervisor log:\n{SUPERVISOR.tail()}")

    def test_health(self):
        self.assertTrue(self.zygo.health())

    def test_exec_returns_the_result_output_outcome_and_timings(self):
        result = self.zygo.exec("hello", {"name": "Ada"})
        self.assertTrue(result.ok, result)
        self.assertEqual(result.result, {"greeting": "hello, Ada"})
        self.assertEqual(result.stdout, "saying hello to Ada\n")
        self.assertEqual(result.outcome.status, "ok")
        self.assertGreater(result.timings_us.total, 0)
        self.assertGreater(result.outcome.wall_ms, 0)
        self.assertIsNone(result.error)

    def test_functions_lists_what_was_registered(self):
        functions = {f.name: f for f in self.zygo.functions()}
        self.assertTrue(set(SPECS) <= set(functions), functions)
        self.assertEqual(functions["hog"].memory_bytes, 64 << 20)
        self.assertEqual(functions["sleeper"].timeout_ms, 1000)
        self.assertTrue(functions["py"].pool)
        self.assertEqual(functions["hello"].entry, "fns.py:hello")

    def test_up_then_down_then_down_again_is_not_found(self):
        info = self.zygo.up('name = "brief"\nentry = "fns.py:hello"\n', origin="brief.toml",
                            base_dir=SUPERVISOR.code)
        self.assertEqual((info.name, info.runtime, info.spec_path),
                         ("brief", "python", "brief.toml"))
        self.assertEqual(self.zygo.exec("brief", {"name": "B"}).result["greeting"], "hello, B")
        self.zygo.down("brief")
        self.assertNotIn("brief", [f.name for f in self.zygo.functions()])
        with self.assertRaises(zygo_sdk.NotFound):
            self.zygo.down("brief")

    def test_unknown_function_is_not_found(self):
        with self.assertRaises(zygo_sdk.NotFound) as caught:
            self.zygo.exec("nope", {})
        self.assertEqual(caught.exception.code, "not_found")
        self.assertIn('no function named "nope"', caught.exception.message)

    def test_bad_spec_is_invalid_argument(self):
        with self.assertRaises(zygo_sdk.InvalidArgument) as caught:
            self.zygo.up('name = "bad"\nentyr = "fns.py:hello"\n', origin="bad.toml",
                         base_dir=SUPERVISOR.code)
        self.assertIn('bad.toml:2: entyr: unknown key (did you mean "entry"?)',
                      caught.exception.message)

    def test_event_over_the_limit_is_invalid_argument(self):
        with self.assertRaises(zygo_sdk.InvalidArgument) as caught:
            self.zygo.exec("hello", "x" * (16 << 20))
        self.assertIn("event is 16777218 bytes; the limit is 16777216 bytes",
                      caught.exception.message)

    def test_handler_exception_is_handler_error_with_its_traceback(self):
        with self.assertRaises(zygo_sdk.HandlerError) as caught:
            self.zygo.exec("raiser", 7)
        e = caught.exception
        self.assertEqual((e.type, e.message, e.code), ("ValueError", "no 7", "handler_error"))
        self.assertIn('raise ValueError("no " + str(event))', e.traceback)
        self.assertFalse(e.result.ok)
        # The same reply, returned instead of raised.
        result = self.zygo.exec("raiser", 8, raise_on_error=False)
        self.assertFalse(result.ok)
        self.assertEqual((result.error.type, result.outcome.status),
                         ("ValueError", "handler_error"))

    def test_deadline_is_timeout_and_keeps_what_was_printed(self):
        with self.assertRaises(zygo_sdk.Timeout) as caught:
            self.zygo.exec("sleeper", {"seconds": 30})
        result = caught.exception.result
        self.assertTrue(result.outcome.timed_out)
        self.assertEqual(result.stdout, "going to sleep\n")
        self.assertLess(result.outcome.wall_ms, 10_000)

    def test_memory_limit_is_out_of_memory(self):
        with self.assertRaises(zygo_sdk.OutOfMemory) as caught:
            self.zygo.exec("hog")
        self.assertTrue(caught.exception.result.outcome.oom_killed)
        self.assertEqual(caught.exception.code, "oom")

    def test_a_full_queue_is_too_many_requests(self):
        self.zygo.exec("slow", {"seconds": 0})  # warm, so the burst all lands at once
        outcomes = []

        def call():
            try:
                outcomes.append(self.zygo.exec("slow", {"seconds": 2}).result)
            except zygo_sdk.TooManyRequests as e:
                outcomes.append(e)

        threads = [threading.Thread(target=call) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        refused = [o for o in outcomes if isinstance(o, zygo_sdk.TooManyRequests)]
        # At most WORKERS run and MAX_QUEUED wait; the rest of the 10 are refused.
        if len(refused) < 10 - WORKERS - MAX_QUEUED:
            self.fail_with_log(f"too few refused: {outcomes}")
        self.assertEqual(outcomes.count("woke"), 10 - len(refused))
        for e in refused:
            self.assertEqual(e.code, "resource_exhausted")
            self.assertIn("over capacity", e.message)
            # Retry-After over HTTP; gRPC's status has no such field.
            self.assertEqual(e.retry_after, 1.0)  # HTTP's Retry-After, gRPC's trailer
            self.assertEqual(e.http_status, 429 if TRANSPORT == "http" else 0)
        # Honoured, the retry is served (the burst has drained by now).
        time.sleep(refused[0].retry_after or 1.0)
        self.assertEqual(self.zygo.exec("slow", {"seconds": 0}).result, "woke")

    def test_pool_run_puts_the_script_and_runs_it_by_digest(self):
        source = f"def handler(event):\n    return [event, {time.time_ns()}]\n"
        result = self.zygo.pool.run("py", source, 21)
        self.assertEqual(result.result[0], 21)
        digest = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
        self.assertEqual(self.zygo.scripts.put(source), digest)
        # Stored now: exec names it by digest.
        self.assertEqual(self.zygo.exec("py", 5, script=digest).result[0], 5)
        with self.assertRaises(zygo_sdk.NotFound) as caught:
            self.zygo.exec("py", 5, script="sha256:" + "0" * 64)
        self.assertIn("no script", caught.exception.message)
        with self.assertRaises(zygo_sdk.HandlerError) as caught:
            self.zygo.pool.run("py", "def handler(event):\n    return 1 / 0\n")
        self.assertEqual(caught.exception.type, "ZeroDivisionError")

    def test_no_supervisor_is_unavailable(self):
        client = zygo_sdk.Client(os.path.join(SUPERVISOR.sockets, "nobody.sock"),
                                 transport=TRANSPORT)
        with self.assertRaises(zygo_sdk.Unavailable) as caught:
            client.health()
        self.assertIn("zygo serve", caught.exception.message)
        client.close()


class AsyncTest(unittest.TestCase):
    def run_async(self, body):
        async def with_client():
            async with zygo_sdk.AsyncClient(socket_path(), transport=TRANSPORT) as zygo:
                await body(zygo)
        asyncio.run(with_client())

    def test_calls_run_concurrently(self):
        async def body(zygo):
            self.assertTrue(await zygo.health())
            results = await asyncio.gather(
                *(zygo.exec("hello", {"name": n}) for n in ("a", "b", "c")))
            self.assertEqual([r.result["greeting"] for r in results],
                             ["hello, a", "hello, b", "hello, c"])
            self.assertIn("hello", [f.name for f in await zygo.functions()])
        self.run_async(body)

    def test_up_pool_and_down(self):
        async def body(zygo):
            await zygo.up('name = "abrief"\nentry = "fns.py:hello"\n',
                          base_dir=SUPERVISOR.code)
            self.assertEqual((await zygo.exec("abrief", {"name": "A"})).result,
                             {"greeting": "hello, A"})
            await zygo.down("abrief")
            result = await zygo.pool.run("py", "def handler(event):\n    return -event\n", 4)
            self.assertEqual(result.result, -4)
            self.assertTrue((await zygo.scripts.put("x = 1\n")).startswith("sha256:"))
        self.run_async(body)

    def test_errors(self):
        async def body(zygo):
            with self.assertRaises(zygo_sdk.NotFound):
                await zygo.exec("nope")
            with self.assertRaises(zygo_sdk.InvalidArgument):
                await zygo.up('name = "bad"\nentyr = "x"\n', base_dir=SUPERVISOR.code)
            with self.assertRaises(zygo_sdk.InvalidArgument):
                await zygo.exec("hello", "x" * (16 << 20))
            with self.assertRaises(zygo_sdk.HandlerError) as caught:
                await zygo.exec("raiser", 1)
            self.assertEqual(caught.exception.type, "ValueError")
            with self.assertRaises(zygo_sdk.Timeout):
                await zygo.exec("sleeper", {"seconds": 30})
            with self.assertRaises(zygo_sdk.OutOfMemory):
                await zygo.exec("hog")
        self.run_async(body)

    def test_no_supervisor_is_unavailable(self):
        async def body():
            async with zygo_sdk.AsyncClient(os.path.join(SUPERVISOR.sockets, "nobody.sock"),
                                            transport=TRANSPORT) as zygo:
                with self.assertRaises(zygo_sdk.Unavailable):
                    await zygo.health()
        asyncio.run(body())


if __name__ == "__main__":
    print(f"zygo_sdk from {zygo_sdk.__file__}, transport {TRANSPORT}", file=sys.stderr)
    if "site-packages" not in zygo_sdk.__file__:
        sys.exit("this test calls the installed package, not a source tree")
    unittest.main(verbosity=2)
