#!/usr/bin/python3
"""A token server for docker-registry's `auth.token` mode, for tests on 127.0.0.1.

GET /token?service=S&scope=repository:NAME:pull,push issues an RS256 JWT the registry trusts
(its x5c header carries the certificate the registry has as rootcertbundle). As on Docker Hub,
a request without Authorization gets an anonymous token limited to pull; Basic credentials
matching --user/--password get every action asked for; wrong credentials get 401. POST /token
with the OAuth2 password grant is accepted too. Signing runs `openssl dgst -sha256 -sign`,
so nothing beyond the standard library and the openssl CLI is needed.
"""

import argparse
import base64
import binascii
import hmac
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_LIFETIME = 300


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cert_der_b64(cert_path):
    """The certificate as x5c wants it: standard base64 of the DER bytes."""
    with open(cert_path) as f:
        pem = f.read()
    body = pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return "".join(body.split())


def parse_scope(scope):
    """'repository:name:pull,push' -> (type, name, [actions]); names may hold ':' (ports)."""
    kind, rest = scope.split(":", 1)
    name, actions = rest.rsplit(":", 1)
    return kind, name, [a for a in actions.split(",") if a]


class Issuer:
    def __init__(self, args):
        self.key = args.key
        self.issuer = args.issuer
        self.service = args.service
        self.user = args.user
        self.password = args.password
        self.header = {"alg": "RS256", "typ": "JWT", "x5c": [cert_der_b64(args.cert)]}

    def check(self, user, password):
        return (hmac.compare_digest(user.encode(), self.user.encode())
                and hmac.compare_digest(password.encode(), self.password.encode()))

    def grant(self, scopes, user):
        """Every requested action for a known user; only pull on repositories otherwise."""
        access = []
        for scope in scopes:
            try:
                kind, name, actions = parse_scope(scope)
            except ValueError:
                continue
            if not user:
                actions = [a for a in actions if kind == "repository" and a == "pull"]
            if actions:
                access.append({"type": kind, "name": name, "actions": actions})
        return access

    def sign(self, payload):
        signing_input = (b64url(json.dumps(self.header).encode()) + "." +
                         b64url(json.dumps(payload).encode())).encode()
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                                   input=signing_input, capture_output=True, check=True).stdout
        return signing_input.decode() + "." + b64url(signature)

    def token(self, scopes, user, service):
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user,
            "aud": service or self.service,
            "exp": now + TOKEN_LIFETIME,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(16),
            "access": self.grant(scopes, user),
        }
        token = self.sign(claims)
        issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        return claims["access"], {"token": token, "access_token": token,
                                  "expires_in": TOKEN_LIFETIME, "issued_at": issued}


class Handler(BaseHTTPRequestHandler):
    issuer = None  # set in main()

    def reply(self, status, body, extra_headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def deny(self):
        self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]},
                   [("WWW-Authenticate", 'Basic realm="zygo-test-token-server"')])

    def basic_user(self):
        """'' when anonymous, the user name when the credentials match, None when they don't."""
        header = self.headers.get("Authorization", "")
        if not header:
            return ""
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value.strip()).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return user if self.issuer.check(user, password) else None

    def issue(self, scopes, user, service):
        access, body = self.issuer.token(scopes, user, service)
        self.log_message("token for %r: %s", user or "<anonymous>", json.dumps(access))
        self.reply(200, body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            self.reply(404, {"errors": [{"code": "NOT_FOUND"}]})
            return
        query = urllib.parse.parse_qs(url.query)
        user = self.basic_user()
        if user is None:
            self.deny()
            return
        self.issue(query.get("scope", []), user, query.get("service", [""])[0])

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        if url.path != "/token" or form.get("grant_type") != ["password"]:
            self.reply(400, {"error": "unsupported_grant_type"})
            return
        user = form.get("username", [""])[0]
        if not self.issuer.check(user, form.get("password", [""])[0]):
            self.deny()
            return
        scopes = " ".join(form.get("scope", [])).split()
        self.issue(scopes, user, form.get("service", [""])[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--key", required=True, help="PEM RSA private key")
    parser.add_argument("--cert", required=True, help="PEM certificate of that key")
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--port-file", required=True, help="written once listening")
    args = parser.parse_args()

    Handler.issuer = Issuer(args)
    # Port 0: the kernel picks a free port, so parallel tests never collide.
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    print(f"token server listening on 127.0.0.1:{server.server_address[1]}", file=sys.stderr,
          flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
