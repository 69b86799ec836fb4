"""The Python SDK against a fake supervisor, for what a real one cannot easily be made to
do: the exact requests sent, a Retry-After of any value, 503, a reply that is not JSON, a
script the supervisor lost. The real supervisor's test is real_supervisor_test.py.
The fake: the API over a unix socket, served from a thread by http.server, recording
each request."""
import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import threading
import unittest
import urllib.parse
from unittest import mock

import fake_api_server
import zygo_sdk


class _Handler(fake_api_server.JsonHandler):
    def answer_raw(self, status, data, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = {"method": self.command, "path": url.path,
                   "query": dict(urllib.parse.parse_qsl(url.query)), "body": body,
                   "content_type": self.headers.get("Content-Type")}
        server = self.server
        server.requests.append(request)
        functions = server.functions
        route = (self.command, url.path)
        if route == ("GET", "/v1/health"):
            return self.answer(200, {"ok": True})
        if route == ("GET", "/v1/functions"):
            return self.answer(200, {"functions": list(functions.values())})
        if route == ("POST", "/v1/functions"):
            name = body.decode().split('"')[1]
            functions[name] = {"name": name, "runtime": "python", "image": "host",
                               "state": "warming", "pool": False, "new_field": 1}
            return self.answer(201, functions[name])
        if route == ("PUT", "/v1/scripts"):
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            server.scripts.add(digest)
            return self.answer(201, {"digest": digest})
        parts = url.path.split("/")
        name = urllib.parse.unquote(parts[3]) if len(parts) > 3 else ""
        if name == "busy":
            return self.answer_raw(429, b'{"error":{"code":"resource_exhausted",'
                                   b'"message":"over capacity"}}', [("Retry-After", "7")])
        if name == "dying":
            return self.answer(503, {"error": {"code": "unavailable",
                                               "message": "the zygote died"}})
        if name == "garbled":
            return self.answer_raw(502, b"<html>bad gateway</html>")
        if name not in functions:
            return self.answer(404, {"error": {"code": "not_found",
                                                "message": f"no function named {name}"}})
        if self.command == "DELETE":
            del functions[name]
            return self.answer(200, {"ok": True})
        script = request["query"].get("script")
        if script and script not in server.scripts:
            return self.answer(404, {"error": {"code": "not_found", "message":
                                               f"no script {script} (PutScript it first)"}})
        event = json.loads(body) if body else None
        if name == "raiser":
            return self.answer(200, {
                "ok": False, "result": None, "stdout": "before\n",
                "error": {"type": "ValueError", "message": "bad", "traceback": "Traceback ..."},
                "outcome": {"status": "handler_error", "exit_code": 1}})
        if name == "crasher":
            return self.answer(200, {
                "ok": False, "result": None, "error": {"type": "crashed", "message": "SIGSEGV"},
                "outcome": {"status": "signaled", "signal": 11}})
        return self.answer(200, {"ok": True, "result": {"event": event}, "error": None,
                                  "stdout": "hi\n", "stderr": "",
                                  "outcome": {"status": "ok", "wall_ms": 1.5},
                                  "timings_us": {"total": 42}})


class ClientTest(unittest.TestCase):
    def setUp(self):
        # sun_path holds 108 bytes: keep the socket in a short directory.
        self.dir = tempfile.mkdtemp(prefix="zygo-sdk-", dir="/tmp")
        self.socket_path = os.path.join(self.dir, "zygo.sock")
        self.server = fake_api_server.UnixServer(self.socket_path, _Handler)
        self.server.requests = []
        self.server.scripts = set()
        self.server.functions = {n: {"name": n} for n in ("raiser", "crasher", "a/b", "py")}
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        self.client = zygo_sdk.Client(self.socket_path)

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir)

    def last(self):
        return self.server.requests[-1]

    def test_health(self):
        self.assertTrue(self.client.health())

    def test_up_sends_the_spec_origin_and_base_dir(self):
        info = self.client.up('name = "hello"\n', origin="hello.toml", base_dir="/srv/fn")
        self.assertEqual((info.name, info.state), ("hello", "warming"))
        self.assertEqual(self.last()["query"], {"origin": "hello.toml", "base_dir": "/srv/fn"})
        self.assertEqual(self.last()["body"], b'name = "hello"\n')
        self.assertEqual(self.last()["content_type"], "application/toml")

    def test_up_file_names_the_file_and_its_directory(self):
        spec = os.path.join(self.dir, "hello.toml")
        with open(spec, "w") as f:
            f.write('name = "hello"\n')
        self.client.up_file(spec)
        self.assertEqual(self.last()["query"],
                         {"origin": "hello.toml", "base_dir": os.path.realpath(self.dir)})

    def test_functions_and_down(self):
        self.client.up('name = "hello"\n')
        self.assertIn("hello", [f.name for f in self.client.functions()])
        self.client.down("hello")
        self.assertEqual(self.last()["method"], "DELETE")
        self.assertNotIn("hello", [f.name for f in self.client.functions()])

    def test_exec_sends_the_event_as_json_and_escapes_the_name(self):
        result = self.client.exec("a/b", {"x": [1, 2]})
        self.assertTrue(result.ok)
        self.assertEqual(result.result, {"event": {"x": [1, 2]}})
        self.assertEqual((result.stdout, result.outcome.wall_ms, result.timings_us.total),
                         ("hi\n", 1.5, 42))
        self.assertEqual(result.reply["stdout"], "hi\n")
        self.assertEqual(self.last()["path"], "/v1/functions/a%2Fb/exec")
        self.assertEqual(self.last()["content_type"], "application/json")

    def test_exec_default_event_is_an_empty_body(self):
        self.assertEqual(self.client.exec("a/b").result, {"event": None})
        self.assertEqual(self.last()["body"], b"")

    def test_exec_with_script_and_stdin(self):
        self.server.scripts.add("sha256:abc")
        self.client.exec("a/b", script="sha256:abc")
        self.assertEqual(self.last()["query"], {"script": "sha256:abc"})
        self.client.exec("a/b", stdin=b"[1]")
        self.assertEqual(self.last()["body"], b"[1]")
        self.assertEqual(self.last()["content_type"], "application/octet-stream")
        with self.assertRaises(ValueError):
            self.client.exec("a/b", event=1, stdin=b"x")

    def test_a_handler_error_raises_unless_asked_not_to(self):
        with self.assertRaises(zygo_sdk.HandlerError) as caught:
            self.client.exec("raiser")
        e = caught.exception
        self.assertEqual((e.type, e.message, e.traceback, e.code),
                         ("ValueError", "bad", "Traceback ...", "handler_error"))
        self.assertEqual(e.result.stdout, "before\n")
        self.assertEqual(str(e), "ValueError: bad")
        result = self.client.exec("raiser", raise_on_error=False)
        self.assertFalse(result.ok)
        self.assertEqual(result.error.type, "ValueError")

    def test_another_failure_is_a_plain_exec_error(self):
        with self.assertRaises(zygo_sdk.ExecError) as caught:
            self.client.exec("crasher")
        self.assertIs(type(caught.exception), zygo_sdk.ExecError)
        self.assertEqual(caught.exception.result.outcome.signal, 11)

    def test_http_statuses_become_typed_errors(self):
        with self.assertRaises(zygo_sdk.NotFound) as caught:
            self.client.down("nope")
        self.assertEqual((caught.exception.code, caught.exception.http_status),
                         ("not_found", 404))
        with self.assertRaises(zygo_sdk.TooManyRequests) as caught:
            self.client.exec("busy")
        self.assertEqual(caught.exception.retry_after, 7.0)
        with self.assertRaises(zygo_sdk.Unavailable):
            self.client.exec("dying")
        with self.assertRaises(zygo_sdk.ZygoError) as caught:
            self.client.exec("garbled")
        self.assertEqual(caught.exception.http_status, 502)
        self.assertIn("bad gateway", caught.exception.message)

    def test_scripts_put_returns_the_digest(self):
        source = "def handler(event):\n    return 1\n"
        self.assertEqual(self.client.scripts.put(source),
                         "sha256:" + hashlib.sha256(source.encode()).hexdigest())

    def test_pool_run_puts_once_then_runs_by_digest(self):
        source = "def handler(event):\n    return event\n"
        digest = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
        self.client.pool.run("py", source, 1)
        self.client.pool.run("py", source, 2)
        sent = [(r["method"], r["query"].get("script")) for r in self.server.requests]
        self.assertEqual(sent, [("PUT", None), ("POST", digest), ("POST", digest)])

    def test_pool_run_puts_again_when_the_supervisor_lost_the_script(self):
        source = "def handler(event):\n    return event\n"
        self.client.pool.run("py", source, 1)
        self.server.scripts.clear()
        self.assertTrue(self.client.pool.run("py", source, 2).ok)
        self.assertEqual([r["method"] for r in self.server.requests],
                         ["PUT", "POST", "POST", "PUT", "POST"])

    def test_unreachable_supervisor(self):
        client = zygo_sdk.Client(os.path.join(self.dir, "missing.sock"))
        with self.assertRaises(zygo_sdk.Unavailable) as caught:
            client.health()
        self.assertIn("is `zygo serve` running?", caught.exception.message)

    def test_async_client_reads_the_same(self):
        async def calls():
            async with zygo_sdk.AsyncClient(self.socket_path) as client:
                results = await asyncio.gather(*(client.exec("a/b", i) for i in range(3)))
                self.assertEqual([r.result for r in results],
                                 [{"event": i} for i in range(3)])
                with self.assertRaises(zygo_sdk.TooManyRequests) as caught:
                    await client.exec("busy")
                self.assertEqual(caught.exception.retry_after, 7.0)
                with self.assertRaises(zygo_sdk.HandlerError):
                    await client.exec("raiser")
                self.assertTrue((await client.pool.run("py", "x = 1", None)).ok)
                self.assertIn("a/b", [f.name for f in await client.functions()])
        asyncio.run(calls())


class DefaultSocketPathTest(unittest.TestCase):
    def test_rules(self):
        with mock.patch.dict(os.environ, {"ZYGO_SOCKET": "/x/h.sock"}):
            self.assertEqual(zygo_sdk.default_socket_path(), "/x/h.sock")
            self.assertEqual(zygo_sdk.default_grpc_socket_path(), "/x/zygo-grpc.sock")
        env = {k: v for k, v in os.environ.items() if k not in ("ZYGO_SOCKET", "XDG_RUNTIME_DIR")}
        with mock.patch.dict(os.environ, env, clear=True):
            with mock.patch("os.geteuid", return_value=0):
                self.assertEqual(zygo_sdk.default_socket_path(), "/run/zygo/zygo.sock")
            with mock.patch("os.geteuid", return_value=1000):
                self.assertEqual(zygo_sdk.default_socket_path(), "/tmp/zygo-1000/zygo.sock")
                os.environ["XDG_RUNTIME_DIR"] = "/run/user/1000"
                self.assertEqual(zygo_sdk.default_socket_path(),
                                 "/run/user/1000/zygo/zygo.sock")


if __name__ == "__main__":
    unittest.main()
