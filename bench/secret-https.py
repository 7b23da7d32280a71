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

  tunnel, new connection      CONNECT + TLS to the upstream, one request
  terminated, new connection  CONNECT + TLS to the gateway (leaf cached) +
                              the gateway's TLS to the upstream + injection
  tunnel, keep-alive          one request on a tunnel kept open

and the terminated request's cost over each tunnel figure. Terminated
connections carry one request each (docs/secrets.md), so the keep-alive
figure exists for the tunnel only."""
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
out = {"term": [], "tun": [], "tun_ka": []}
ka = http.client.HTTPSConnection(ph, int(pp), context=ctx)
ka.set_tunnel("tun.bench.test", port)
once("tun.bench.test", ka)
for i in range(n):
    order = ["term", "tun", "tun_ka"] if i % 2 == 0 else ["tun_ka", "tun", "term"]
    for k in order:
        out[k].append(once("tun.bench.test", ka) if k == "tun_ka" else once(k + ".bench.test"))
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
    names = [("tun", "tunnel, new connection"), ("term", "terminated + injection, new connection"),
             ("tun_ka", "tunnel, keep-alive")]
    med = {}
    for k, label in names:
        med[k] = statistics.median(r[k])
        print("  %-40s median %7.3f ms   p90 %7.3f ms" % (label, med[k], pct(r[k], 90)))
    print("  result: terminated adds %.3f ms over a new tunnel (%.2fx), %.3f ms over a kept-alive one (%.2fx)"
          % (med["term"] - med["tun"], med["term"] / med["tun"], med["term"] - med["tun_ka"],
             med["term"] / med["tun_ka"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
