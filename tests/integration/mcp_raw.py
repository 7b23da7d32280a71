#!/usr/bin/env python3
"""Bad input to `moat mcp serve` on its stdio: each gets the right JSON-RPC
error (or is dropped with a log line) and the server stays up and answers.
Usage: mcp_raw.py MOAT LABEL; prints TAP lines."""
import json
import os
import subprocess
import sys
import threading
import time

moat, label = sys.argv[1], sys.argv[2]
failed = 0


def ok(cond, name, detail=None):
    global failed
    print(("ok" if cond else "not ok") + f" - {label}: {name}", flush=True)
    if not cond:
        failed += 1
        if detail is not None:
            print("#   " + repr(detail)[:2000], flush=True)


p = subprocess.Popen([moat, "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
err_lines = []
threading.Thread(target=lambda: err_lines.extend(l.decode(errors="replace") for l in p.stderr), daemon=True).start()


def send(raw):
    p.stdin.write(raw)
    p.stdin.flush()


def recv(timeout=60):
    # The server answers in order of the requests here (none runs a tool).
    line = p.stdout.readline()
    return json.loads(line) if line else None


def ping(i):
    send(json.dumps({"jsonrpc": "2.0", "id": f"ping-{i}", "method": "ping"}).encode() + b"\n")
    r = recv()
    return r == {"jsonrpc": "2.0", "id": f"ping-{i}", "result": {}}


send(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}\n')
r = recv()
ok(r and r["result"]["protocolVersion"] == "2025-11-25", "initialize: 2025-11-25 negotiated", r)
ok(r and r["result"]["capabilities"].get("logging") == {}, "initialize: the logging capability declared", r)
send(b'{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"error"}}\n')
r = recv()
ok(r == {"jsonrpc": "2.0", "id": "lvl", "result": {}}, "logging/setLevel error: {}", r)
send(b'{"jsonrpc":"2.0","id":"lvl2","method":"logging/setLevel","params":{"level":"loud"}}\n')
r = recv()
ok(r and r["error"]["code"] == -32602 and "params.level" in r["error"]["message"], "logging/setLevel loud: -32602 naming params.level", r)
send(b'{"jsonrpc":"2.0","id":"old","method":"initialize","params":{"protocolVersion":"1999-01-01"}}\n')
r = recv()
ok(r and r["result"]["protocolVersion"] == "2025-11-25", "initialize with an unknown revision: the latest offered", r)

send(b'{"jsonrpc":"2.0","id":1,"method":"tools/li\n')
r = recv()
ok(r and r["error"]["code"] == -32700 and r["id"] is None, "truncated JSON: -32700, id null", r)
ok(ping(1), "up after truncated JSON")

batch = [{"jsonrpc": "2.0", "id": 1000 + i, "method": "ping"} for i in range(10000)]
t0 = time.monotonic()
send(json.dumps(batch).encode() + b"\n")
r = recv()
ok(r and r["error"]["code"] == -32600 and "batch" in r["error"]["message"], "a batch of 10,000 requests: one -32600", r)
ok(ping(2), f"up after the batch, nothing else answered ({time.monotonic() - t0:.2f} s)")

big = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"' + b"a" * (100 << 20) + b'"}}\n'
t0 = time.monotonic()
send(big)
r = recv()
ok(r and r["error"]["code"] == -32600 and "larger than" in r["error"]["message"], "a 100 MB message: -32600, not held", r)
ok(ping(3), "up after the 100 MB message")
rss = int(open(f"/proc/{p.pid}/status").read().split("VmHWM:")[1].split()[0])
ok(rss < 64 * 1024, f"the server's peak memory stayed small ({rss} kB)")
del big

send(b'{"jsonrpc":"2.0","id":4,"method":"p\xffing"}\n')
r = recv()
ok(r and r["error"]["code"] == -32700 and "UTF-8" in r["error"]["message"], "invalid UTF-8: -32700", r)
ok(ping(4), "up after invalid UTF-8")

send(b'{"jsonrpc":"2.0","id":5,"method":"resources/list"}\n')
r = recv()
ok(r and r["error"]["code"] == -32601 and r["id"] == 5, "an unknown method: -32601 with its id", r)
send(b'{"jsonrpc":"2.0","id":5,"method":"ping"}\n')
r = recv()
ok(r and r["error"]["code"] == -32600 and r["id"] == 5 and "already used" in r["error"]["message"], "a reused id: -32600", r)
send(b'{"jsonrpc":"2.0","method":"no/such/notification"}\n')
send(b'{"jsonrpc":"2.0","id":"x","result":{}}\n')
send(b'42\n{"jsonrpc":"2.0","id":6}\n')
r1, r2 = recv(), recv()
ok(r1 and r1["error"]["code"] == -32600 and r2 and r2["error"]["code"] == -32600 and r2["id"] == 6,
   "an unknown notification and a stray response are dropped; a number and a message with only an id are -32600", (r1, r2))
send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python"}}}\n')
r = recv()
ok(r and r["result"]["isError"] and "misses the required field 'code'" in r["result"]["content"][0]["text"], "a call missing a required argument: a tool error", r)
ok(ping(5), "still up at the end")
p.stdin.close()
rc = p.wait(timeout=30)
ok(rc == 0, "stdin closed: the server exits 0", rc)
time.sleep(0.2)
log = "".join(err_lines)
ok(all(w in log for w in ("parse error", "batches are not supported", "larger than", "invalid UTF-8", "dropped a response")),
   "each refusal is a log line", log)
sys.exit(1 if failed else 0)
