#!/usr/bin/env python3
"""make bench: what TLS termination with a secret injected costs a request,
against a plain tunnel to the same upstream, measured in the same run.

  bench/secret-https.py --moat build/moat [--requests N]

An HTTPS upstream on loopback (a certificate from a CA made for the run,
which the gateway is told to trust the way the test suite does), reached
from one sandbox under two names: term.bench.test, which a secret is bound
to (the gateway terminates TLS and injects the value), and tun.bench.test,
which is a plain CONNECT tunnel. The client inside (Python's http.client
through the gateway) times each request itself with perf_counter, the two
names taking turns; no shell and no start-up is in the timed path. Reported:
the median and p90 per request of

  tunnel, keep-alive             one request on a tunnel kept open
  terminated, keep-alive         one request on a terminated connection kept
                                 open: decided, the value injected, sent on a
                                 pooled upstream connection
  tunnel, new connection         CONNECT + TLS to the upstream, one request
  terminated, new connection     CONNECT + TLS to the gateway (leaf cached) +
                                 injection, on a pooled upstream connection

and what termination adds at the median, kept-alive against kept-alive
(the figure docs/secrets.md promises at most 2 ms for) and new against
new. The four take turns, in both orders."""
import argparse
import http.server
import json
import os
import socketserver
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading

CLIENT = r'''
import http.client, json, os, ssl, sys, time
proxy = os.environ["HTTPS_PROXY"].split("://", 1)[-1].rstrip("/")
ph, pp = proxy.rsplit(":", 1)
port = int(sys.argv[1]); n = int(sys.argv[2])
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
ctx.load_verify_locations("/bench-ca.pem")
token = os.environ["BENCH_TOKEN"]
def once(host, conn=None):
    # A kept-alive connection is reused; otherwise a new one per request.
    t0 = time.perf_counter()
    c = conn or http.client.HTTPSConnection(ph, int(pp), context=ctx)
    if conn is None:
        c.set_tunnel(host, port)
    hdr = {"Authorization": "Bearer " + token} if host.startswith("term") else {}
    c.request("GET", "/bench", headers=hdr)
    r = c.getresponse(); body = r.read()
    if r.status != 200 or body != b"ok":
        sys.exit("%s: %d %r" % (host, r.status, body[:200]))
    if conn is None:
        c.close()
    return (time.perf_counter() - t0) * 1000
for _ in range(10):
    once("term.bench.test"); once("tun.bench.test")
out = {"term": [], "tun": [], "tun_ka": [], "term_ka": []}
ka = {}
for k, host in (("tun_ka", "tun.bench.test"), ("term_ka", "term.bench.test")):
    ka[k] = http.client.HTTPSConnection(ph, int(pp), context=ctx)
    ka[k].set_tunnel(host, port)
    once(host, ka[k])
host = {"term": "term.bench.test", "tun": "tun.bench.test", "tun_ka": "tun.bench.test", "term_ka": "term.bench.test"}
for i in range(n):
    # Both orders, alternating, so that neither kind always runs first.
    order = ["term_ka", "tun_ka", "term", "tun"] if i % 2 == 0 else ["tun", "term", "tun_ka", "term_ka"]
    for k in order:
        out[k].append(once(host[k], ka.get(k)))
print(json.dumps(out))
'''


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body in one write, without Nagle's delay: the upstream's own
    # stalls would otherwise be what is measured.
    disable_nagle_algorithm = True
    seen_value = False

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.headers.get("Authorization", "") == "Bearer " + os.environ["BENCH_SECRET"]:
            Handler.seen_value = True
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moat", required=True)
    ap.add_argument("--requests", type=int, default=200)
    a = ap.parse_args()
    title = "secrets: an HTTPS request terminated with a secret injected, against a plain tunnel"
    with tempfile.TemporaryDirectory(prefix="moatbench-tls.") as d:
        def run(*cmd):
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
        try:
            run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                "-days", "1", "-subj", "/CN=moat bench CA", "-addext", "basicConstraints=critical,CA:TRUE")
            run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
                "-subj", "/CN=term.bench.test")
            with open(os.path.join(d, "ext"), "w") as f:
                f.write("subjectAltName=DNS:term.bench.test,DNS:tun.bench.test\n")
            run("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "srv.pem", "-days", "1", "-extfile", "ext")
        except (OSError, subprocess.CalledProcessError) as e:
            print("\n%s: no test authority (openssl: %s)" % (title, e))
            return 0
        os.chmod(d, 0o755)
        os.chmod(os.path.join(d, "ca.pem"), 0o644)
        os.environ["BENCH_SECRET"] = "sk-bench-" + os.urandom(24).hex()
        srv = Server(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
        # The handshakes the upstream made per name: with the gateway's
        # pool, the terminated requests share a few connections.
        handshakes = {}

        def on_sni(sock, name, c):
            handshakes[name] = handshakes.get(name, 0) + 1
        ctx.sni_callback = on_sni
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        port = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        policy = os.path.join(d, "policy.yaml")
        with open(policy, "w") as f:
            f.write("""version: 1
network:
  allow:
    - {host: term.bench.test, ports: [%d]}
    - {host: tun.bench.test, ports: [%d]}
  allow_private: [127.0.0.1/32]
  hosts: {term.bench.test: 127.0.0.1, tun.bench.test: 127.0.0.1}
secrets:
  - name: bench
    from: env:BENCH_SECRET
    env: BENCH_TOKEN
    inject: {host: term.bench.test, header: Authorization, format: "Bearer {value}"}
""" % (port, port))
        env = dict(os.environ, MOAT_TEST_UPSTREAM_CA=os.path.join(d, "ca.pem"))
        p = subprocess.run([a.moat, "run", "--policy", policy, "--time", "600s",
                            "--ro", os.path.join(d, "ca.pem") + ":/bench-ca.pem", "--",
                            "python3", "-c", CLIENT, str(port), str(a.requests)],
                           env=env, capture_output=True, text=True)
        srv.shutdown()
        if p.returncode != 0:
            print("\n%s: the run failed (exit %d): %s" % (title, p.returncode, p.stderr.strip()[-400:]))
            return 1
        r = json.loads(p.stdout)
    if not Handler.seen_value:
        print("\n%s: the upstream never saw the value injected" % title)
        return 1
    print("\n%s\n(%d requests each, interleaved, timed inside the sandbox)" % (title, a.requests))
    names = [("tun_ka", "tunnel, keep-alive"), ("term_ka", "terminated + injection, keep-alive"),
             ("tun", "tunnel, new connection"), ("term", "terminated + injection, new connection")]
    med = {}
    for k, label in names:
        med[k] = statistics.median(r[k])
        print("  %-40s median %7.3f ms   p90 %7.3f ms" % (label, med[k], pct(r[k], 90)))
    print("  result: terminated adds %.3f ms kept-alive (%.2fx), %.3f ms on new connections (%.2fx)"
          % (med["term_ka"] - med["tun_ka"], med["term_ka"] / med["tun_ka"], med["term"] - med["tun"],
             med["term"] / med["tun"]))
    print("  upstream TLS handshakes for the %d terminated requests: %d (tunnels: %d for %d)"
          % (2 * a.requests + 11, handshakes.get("term.bench.test", 0), handshakes.get("tun.bench.test", 0),
             2 * a.requests + 11))
    return 0


if __name__ == "__main__":
    sys.exit(main())
