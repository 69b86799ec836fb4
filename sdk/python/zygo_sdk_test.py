"""The Python SDK against a fake supervisor: the API over a unix socket, served from a
thread by http.server, which records each request so the tests can check what was sent."""
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
    def route(self):
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = {"method": self.command, "path": url.path,
                   "query": dict(urllib.parse.parse_qsl(url.query)), "body": body,
                   "content_type": self.headers.get("Content-Type")}
        self.server.requests.append(request)
        functions = self.server.functions
        route = (self.command, url.path)
        if route == ("GET", "/v1/health"):
            return self.answer(200, {"ok": True})
        if route == ("GET", "/v1/functions"):
            return self.answer(200, {"functions": list(functions.values())})
        if route == ("POST", "/v1/functions"):
            name = body.decode().split('"')[1]
            functions[name] = {"name": name, "runtime": "python", "image": "host",
                               "state": "warming", "pool": False}
            return self.answer(201, functions[name])
        if route == ("PUT", "/v1/scripts"):
            return self.answer(201, {"digest": "sha256:" + hashlib.sha256(body).hexdigest()})
        parts = url.path.split("/")
        name = urllib.parse.unquote(parts[3]) if len(parts) > 3 else ""
        if name not in functions:
            return self.answer(404, {"error": {"code": "not_found",
                                                "message": f"no function named {name}"}})
        if self.command == "DELETE":
            del functions[name]
            return self.answer(200, {"ok": True})
        event = json.loads(body) if body else None
        if name == "raiser":
            return self.answer(200, {"ok": False, "result": None, "error": {
                "type": "ValueError", "message": "bad", "traceback": "Traceback ..."}})
        return self.answer(200, {"ok": True, "result": {"event": event}, "error": None,
                                  "stdout": "hi\n", "stderr": ""})


class ClientTest(unittest.TestCase):
    def setUp(self):
        # sun_path holds 108 bytes: keep the socket in a short directory.
        self.dir = tempfile.mkdtemp(prefix="zygo-sdk-", dir="/tmp")
        self.socket_path = os.path.join(self.dir, "zygo.sock")
        self.server = fake_api_server.UnixServer(self.socket_path, _Handler)
        self.server.requests = []
        self.server.functions = {"raiser": {"name": "raiser"}, "a/b": {"name": "a/b"}}
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
        info = self.client.up('name = "hello"\n', "hello.toml", "/srv/fn")
        self.assertEqual(info["name"], "hello")
        self.assertEqual(self.last()["query"], {"origin": "hello.toml", "base_dir": "/srv/fn"})
        self.assertEqual(self.last()["body"], b'name = "hello"\n')

    def test_up_file_names_the_file_and_its_directory(self):
        spec = os.path.join(self.dir, "hello.toml")
        with open(spec, "w") as f:
            f.write('name = "hello"\n')
        self.client.up_file(spec)
        self.assertEqual(self.last()["query"],
                         {"origin": "hello.toml", "base_dir": os.path.realpath(self.dir)})

    def test_list_and_down(self):
        self.client.up('name = "hello"\n')
        self.assertIn("hello", [f["name"] for f in self.client.list()])
        self.client.down("hello")
        self.assertEqual(self.last()["method"], "DELETE")
        self.assertNotIn("hello", [f["name"] for f in self.client.list()])

    def test_down_of_an_unknown_function_raises_not_found(self):
        with self.assertRaises(zygo_sdk.ZygoError) as caught:
            self.client.down("nope")
        self.assertEqual(caught.exception.code, "not_found")
        self.assertEqual(caught.exception.message, "no function named nope")
        self.assertEqual(caught.exception.http_status, 404)

    def test_put_script_returns_the_digest(self):
        source = "def handle(event):\n    return 1\n"
        digest = self.client.put_script(source)
        self.assertEqual(digest, "sha256:" + hashlib.sha256(source.encode()).hexdigest())

    def test_exec_sends_the_event_as_json(self):
        reply = self.client.exec("a/b", {"x": [1, 2]})
        self.assertTrue(reply["ok"])
        self.assertEqual(reply["result"], {"event": {"x": [1, 2]}})
        self.assertEqual(self.last()["path"], "/v1/functions/a%2Fb/exec")
        self.assertEqual(self.last()["content_type"], "application/json")

    def test_exec_default_event_is_an_empty_body(self):
        reply = self.client.exec("a/b")
        self.assertEqual(reply["result"], {"event": None})
        self.assertEqual(self.last()["body"], b"")

    def test_exec_with_script_and_stdin(self):
        self.client.exec("a/b", script="sha256:abc")
        self.assertEqual(self.last()["query"], {"script": "sha256:abc"})
        self.client.exec("a/b", stdin=b"[1]")
        self.assertEqual(self.last()["body"], b"[1]")
        with self.assertRaises(ValueError):
            self.client.exec("a/b", event=1, stdin=b"x")

    def test_handler_error_is_a_reply_not_an_exception(self):
        reply = self.client.exec("raiser")
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["type"], "ValueError")

    def test_exec_of_an_unknown_function_raises(self):
        with self.assertRaises(zygo_sdk.ZygoError) as caught:
            self.client.exec("nope")
        self.assertEqual(caught.exception.code, "not_found")

    def test_unreachable_supervisor(self):
        client = zygo_sdk.Client(os.path.join(self.dir, "missing.sock"))
        with self.assertRaises(zygo_sdk.ZygoError) as caught:
            client.health()
        self.assertEqual(caught.exception.code, "unavailable")
        self.assertIn("is `zygo serve` running?", caught.exception.message)


class DefaultSocketPathTest(unittest.TestCase):
    def test_rules(self):
        with mock.patch.dict(os.environ, {"ZYGO_SOCKET": "/x.sock"}):
            self.assertEqual(zygo_sdk.default_socket_path(), "/x.sock")
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
