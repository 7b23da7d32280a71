#!/usr/bin/env python3
"""An HTTPS upstream for the secrets and TLS termination tests, on an
address the test names (loopback, or a network namespace the test made).

  secret_upstream.py --listen IP:PORT --cert CERT --key KEY --log FILE --ports FILE

Serves every method on every path with "tls-upstream-ok <METHOD> <PATH>",
and a path holding "echo" with the request head it received and the
Authorization token in base64, base64url and percent-encoding (an API that
reflects its request headers). Every request is appended to --log as one JSON line:
method, path, headers, body, the number of the TLS connection it came on
(conn), and whether that connection resumed a TLS session (resumed). Once listening, {"port": N} goes to --ports. With --keep-alive the
answers leave the connection open for the next request, and --idle SECONDS
closes one that waits longer than that for it (as Node and Apache do after
5 s); without, each says "Connection: close"."""
import argparse
import base64
import http.server
import json
import socket
import socketserver
import ssl
import sys
import threading
import urllib.parse

LOCK = threading.Lock()
CONNS = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        with LOCK:
            CONNS[0] += 1
            self.conn_no = CONNS[0]
        super().setup()

    def handle_any(self):
        body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        elif self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        with LOCK, open(self.server.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "version": self.request_version,
                                "conn": self.conn_no,
                                "resumed": bool(getattr(self.request, "session_reused", False)),
                                "headers": [[k, v] for k, v in self.headers.items()],
                                "body": body.decode(errors="replace")}) + "\n")
        if "echo" in self.path:
            text = ("%s %s %s\n%s" % (self.command, self.path, self.request_version, self.headers)).encode()
            # As an API that reflects a token in other encodings would.
            tok = self.headers.get("Authorization", "").split(" ")[-1].encode()
            text += b"b64: " + base64.b64encode(tok) + b"\nb64url: " + base64.urlsafe_b64encode(tok).rstrip(b"=")
            text += b"\npct: " + urllib.parse.quote(tok, safe="").encode() + b"\n"
        else:
            text = ("tls-upstream-ok %s %s\n" % (self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        if not self.server.keep_alive:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(text)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        # The handshake in the connection's own thread.
        try:
            request = self.ctx.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        super().finish_request(request, client_address)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--ports", required=True)
    p.add_argument("--keep-alive", action="store_true")
    p.add_argument("--idle", type=float)
    a = p.parse_args()
    host, _, port = a.listen.rpartition(":")
    srv = Server((host.strip("[]"), int(port)), Handler)
    srv.log = a.log
    srv.keep_alive = a.keep_alive
    if a.idle:
        # socketserver sets it on each connection's socket; a read that
        # waits longer ends the connection.
        Handler.timeout = a.idle
    srv.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.ctx.load_cert_chain(a.cert, a.key)
    srv.ctx.set_alpn_protocols(["http/1.1"])
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with open(a.ports + ".tmp", "w") as f:
        json.dump({"port": srv.server_address[1]}, f)
    import os
    os.rename(a.ports + ".tmp", a.ports)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
