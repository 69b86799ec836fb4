#!/usr/bin/python3
# The peer of `zygo bench warm` and `zygo bench load`: what one would build without Zygo.
# A plain, unsandboxed Python server on a unix socket that imports the handler module
# (and with it the same sixteen modules) once, then forks a child per request
# (multiprocessing-style: os.fork), which runs the handler and sends its JSON reply back
# through a pipe; the parent writes it to the client. One line of JSON in, one line out.
#
# Usage: prefork_peer.py SOCKET HANDLER_FILE FUNCTION
# Serves any number of connections at once (one selector loop; the children run in
# parallel). Stops on SIGTERM. zygo embeds this file (bench/BUILD.bazel: prefork_peer_source).
import importlib.util
import json
import os
import selectors
import socket
import sys


def load_handler(path, function):
    spec = importlib.util.spec_from_file_location("handler", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def run_child(line, handler, write_fd):
    """In the forked child: run the handler, write the reply line, exit."""
    try:
        reply = {"ok": True, "result": handler(json.loads(line))}
    except Exception as error:  # the handler's failure is the reply, as in Zygo
        reply = {"ok": False, "error": {"type": type(error).__name__, "message": str(error)}}
    view = memoryview((json.dumps(reply) + "\n").encode())
    while view:
        view = view[os.write(write_fd, view):]
    os._exit(0)


class Peer:
    def __init__(self, handler):
        self.handler = handler
        self.selector = selectors.DefaultSelector()
        self.inbox = {}  # client socket -> bytes received, not yet a whole line

    def accept(self, server):
        client, _ = server.accept()
        client.setblocking(False)
        self.inbox[client] = b""
        self.selector.register(client, selectors.EVENT_READ, ("client", client))

    def fork_request(self, client, line):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            run_child(line, self.handler, write_fd)
        os.close(write_fd)
        self.selector.register(read_fd, selectors.EVENT_READ, ("child", (client, pid, [])))

    def read_client(self, client):
        try:
            data = client.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            data = b""
        if not data:
            self.selector.unregister(client)
            del self.inbox[client]
            client.close()
            return
        buffered = self.inbox[client] + data
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            self.fork_request(client, line)
        self.inbox[client] = buffered

    def read_child(self, read_fd, context):
        client, pid, chunks = context
        chunk = os.read(read_fd, 65536)
        if chunk:
            chunks.append(chunk)
            return
        self.selector.unregister(read_fd)
        os.close(read_fd)
        os.waitpid(pid, 0)
        if client in self.inbox:
            client.setblocking(True)
            client.sendall(b"".join(chunks))
            client.setblocking(False)

    def serve(self, server):
        self.selector.register(server, selectors.EVENT_READ, ("server", server))
        while True:
            for key, _ in self.selector.select():
                kind, context = key.data
                if kind == "server":
                    self.accept(server)
                elif kind == "client":
                    self.read_client(context)
                else:
                    self.read_child(key.fileobj, context)


def main():
    socket_path, handler_path, function = sys.argv[1:4]
    handler = load_handler(handler_path, function)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(socket_path)
    server.listen(64)
    print("prefork peer: ready on", socket_path, flush=True)
    Peer(handler).serve(server)


if __name__ == "__main__":
    main()
