#!/usr/bin/env python3
"""Upstream servers for the network tests, all on addresses the test names
(loopback, or a network namespace the test created):

  --up ADDR       plain HTTP: "upstream-ok", /redirect?to=URL answers 302,
                  /headers echoes the request head it received
  --secret ADDR   plain HTTP: "MOAT-SECRET" (an internal service; reaching
                  it from a sandbox is an escape)
  --tls ADDR      HTTPS with --cert/--key: "tls-upstream-ok"
  --dns ADDR      UDP name server: rebind.test answers --rebind-first the
                  first time and 127.0.0.1 afterwards; every A query is
                  counted in the ports file
  --abstract NAME a unix socket in the abstract namespace

ADDR is IP:PORT, port 0 picks one. Once everything listens, the chosen ports
are written as JSON to --ports FILE."""
import argparse
import http.server
import json
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    body = b"upstream-ok\n"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_text(self, code, text, extra=None):
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(text)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        # Like IIS or Symfony behind a trusted proxy: route by these
        # headers rather than the request line.
        for h in ("X-Original-URL", "X-Rewrite-URL"):
            if self.headers.get(h):
                return self.send_text(200, ("MOAT-SECRET: routed by %s\n" % h).encode())
        if u.path == "/redirect":
            to = urllib.parse.parse_qs(u.query).get("to", ["/"])[0]
            return self.send_text(302, b"moved\n", {"Location": to})
        if u.path == "/headers":
            head = "%s %s %s\n%s" % (self.command, self.path, self.request_version, self.headers)
            return self.send_text(200, head.encode())
        self.send_text(200, self.body)

    do_POST = do_GET

    def do_PUT(self):
        # Reads the body as framed (Content-Length or chunked) and says how
        # much arrived, so a test can tell the whole upload went through.
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                n += len(self.rfile.read(size))
                self.rfile.readline()
            how = "chunked"
        else:
            n = len(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            how = "length"
        self.send_text(200, ("got %d bytes %s\n" % (n, how)).encode())


def read_body(h):
    """The request body as framed: Content-Length or chunked."""
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while True:
            size = int(h.rfile.readline().split(b";")[0], 16)
            if size == 0:
                h.rfile.readline()
                return out
            out += h.rfile.read(size)
            h.rfile.readline()
    return h.rfile.read(int(h.headers.get("Content-Length", "0")))


class FilesHandler(Handler):
    """Static files (a package index), and git's smart HTTP protocol under
    /git/ through git http-backend, pushes included."""
    root = "."

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path.startswith("/git/"):
            return self.git(u)
        rel = os.path.normpath(urllib.parse.unquote(u.path)).lstrip("/")
        full = os.path.join(self.root, rel)
        if os.path.isdir(full):
            full = os.path.join(full, "index.html")
        if ".." in rel.split(os.sep) or not os.path.isfile(full):
            return self.send_text(404, b"not found\n")
        with open(full, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if full.endswith(".html") else "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path.startswith("/git/"):
            return self.git(u)
        self.send_text(405, b"no\n")

    def git(self, u):
        body = read_body(self) if self.command == "POST" else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=self.root, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=u.path[len("/git"):], QUERY_STRING=u.query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)),
                   REMOTE_USER="tester", REMOTE_ADDR="127.0.0.1", GATEWAY_INTERFACE="CGI/1.1")
        env.pop("GIT_DIR", None)
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, data = out.partition(b"\r\n\r\n")
        if not _:
            head, _, data = out.partition(b"\n\n")
        status = 200
        hdrs = []
        for line in head.decode().splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


class SecretHandler(Handler):
    body = b"MOAT-SECRET: internal service\n"


class TlsHandler(Handler):
    body = b"tls-upstream-ok\n"


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Tests open up to 100 connections at once; the default backlog of 5
    # drops the rest on a loaded machine, until the gateway's connect times out.
    request_queue_size = 128

    def __init__(self, addr, handler):
        host, port = addr
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), handler)


class TlsServer(Server):
    """TLS per connection, the handshake in the connection's own thread: a
    listening socket wrapped whole would make every handshake wait in line
    in the accept loop."""

    def finish_request(self, request, client_address):
        try:
            request = self.ctx.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        super().finish_request(request, client_address)


def split(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def serve(srv):
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()


WILD_SPECIAL = {
    "private.wild.test": "10.11.12.13",
    "azure.wild.test": "168.63.129.16",
}


def dns_server(addr, first, counter):
    host, port = split(addr)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, port))

    def loop():
        while True:
            q, peer = s.recvfrom(512)
            if len(q) < 12:
                continue
            # The question: labels up to the root, then type and class.
            i, labels = 12, []
            while i < len(q) and q[i] != 0:
                labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
                i += 1 + q[i]
            qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
            question = q[12:i + 5]
            name = ".".join(labels).lower()
            answers = b""
            if name == "rebind.test" and qtype == 1:
                counter["a_queries"] += 1
                ip = first if counter["a_queries"] == 1 else "127.0.0.1"
                answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + socket.inet_aton(ip)
            # Every name below wild.test is the allowed upstream, so that
            # the rules, not the resolver, decide which of them is reached.
            # A few of them answer special addresses the gateway must refuse
            # without saying what they are.
            wild = name.endswith(".wild.test")
            if wild and qtype == 1:
                ip = WILD_SPECIAL.get(name, "127.0.0.2")
                answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + socket.inet_aton(ip)
            rcode = 0 if name == "rebind.test" or wild else 3
            flags = 0x8180 | rcode
            head = q[:2] + struct.pack("!HHHHH", flags, 1, 1 if answers else 0, 0, 0)
            s.sendto(head + question + answers, peer)
            write_ports()

    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


ports = {}
ports_file = None


def write_ports():
    with open(ports_file + ".tmp", "w") as f:
        json.dump(ports, f)
    import os
    os.replace(ports_file + ".tmp", ports_file)


def main():
    global ports_file
    p = argparse.ArgumentParser()
    p.add_argument("--up")
    p.add_argument("--secret")
    p.add_argument("--tls")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--dns")
    p.add_argument("--rebind-first", default="127.0.0.2")
    p.add_argument("--abstract")
    p.add_argument("--files", help="ADDR: serve --root (static files, git smart HTTP under /git/)")
    p.add_argument("--root", default=".")
    p.add_argument("--ports", required=True)
    a = p.parse_args()
    ports_file = a.ports
    for name, addr, handler in (("up", a.up, Handler), ("secret", a.secret, SecretHandler)):
        if addr:
            srv = Server(split(addr), handler)
            ports[name] = srv.server_address[1]
            serve(srv)
    if a.files:
        FilesHandler.root = os.path.abspath(a.root)
        srv = Server(split(a.files), FilesHandler)
        ports["files"] = srv.server_address[1]
        serve(srv)
    if a.tls:
        srv = TlsServer(split(a.tls), TlsHandler)
        srv.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        srv.ctx.load_cert_chain(a.cert, a.key)
        ports["tls"] = srv.server_address[1]
        serve(srv)
    counter = {"a_queries": 0}
    if a.dns:
        ports["dns"] = dns_server(a.dns, a.rebind_first, counter)
    if a.abstract:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.bind("\0" + a.abstract)
        u.listen(4)

        def accept():
            while True:
                c, _ = u.accept()
                c.sendall(b"MOAT-SECRET: abstract\n")
                c.close()
        threading.Thread(target=accept, daemon=True).start()
    ports["counter"] = counter
    write_ports()
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
