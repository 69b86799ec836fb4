"""What the Python tests' fake supervisors share: a unix-socket HTTP server whose handler
answers JSON. A subclass defines route(self), called for every method."""
import http.server
import json
import socketserver


class JsonHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # a unix socket peer has no address to log
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self):
        raise NotImplementedError

    def do_GET(self):
        self.route()

    do_POST = do_PUT = do_DELETE = do_GET


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
