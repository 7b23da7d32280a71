#!/usr/bin/env python3
"""Malformed and oversized messages through `moat mcp wrap`, from the client
and from a wrapped server (mcp_bad_server.py): each is refused and logged
(and audited), never passed on, and the relay stays up.
Usage: mcp_wrap_raw.py MOAT TDIR LABEL; prints TAP lines."""
import json
import os
import subprocess
import sys
import threading

moat, tdir, label = sys.argv[1:4]
failed = 0


def ok(cond, name, detail=None):
    global failed
    print(("ok" if cond else "not ok") + f" - {label}: {name}", flush=True)
    if not cond:
        failed += 1
        if detail is not None:
            print("#   " + repr(detail)[:1500], flush=True)


p = subprocess.Popen([moat, "mcp", "wrap", "--policy", f"{tdir}/bad.yaml", "--tools", f"{tdir}/tools-bad.yaml",
                      "--audit", f"{tdir}/audit-bad.log", "--name", "bad", "--",
                      "python3", "/srv/bad/mcp_bad_server.py"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
err_lines = []
threading.Thread(target=lambda: err_lines.extend(l.decode(errors="replace") for l in p.stderr), daemon=True).start()


def send(raw):
    p.stdin.write(raw)
    p.stdin.flush()


def recv():
    line = p.stdout.readline()
    return json.loads(line) if line else None


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    send(json.dumps(m).encode() + b"\n")
    return recv()


r = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})
ok(r and r["result"]["serverInfo"]["name"] == "bad", "initialize relayed", r)
r = req(2, "tools/list")
ok(r and [t["name"] for t in r["result"]["tools"]] == ["garble", "garble_only", "fetch", "echo", "flood", "big"],
   "tools/list: the denied tool hidden", r)

send(b'{"jsonrpc":"2.0","id":3,"method":"tools/ca\n')
r = recv()
ok(r and r["error"]["code"] == -32700, "client: truncated JSON refused (-32700)", r)
send(b'{"jsonrpc":"2.0","id":4,"method":"p\xffing"}\n')
r = recv()
ok(r and r["error"]["code"] == -32700, "client: invalid UTF-8 refused", r)
send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' + b"a" * (100 << 20) + b'"}}\n')
r = recv()
ok(r and r["error"]["code"] == -32600 and r["id"] is None, "client: a 100 MB message refused, not passed on", r)
send(json.dumps([{"jsonrpc": "2.0", "id": 100 + i, "method": "ping"} for i in range(10000)]).encode() + b"\n")
r = recv()
ok(r and r["error"]["code"] == -32600, "client: a batch of 10,000 refused", r)
r = req(6, "ping")
ok(r == {"jsonrpc": "2.0", "id": 6, "result": {}}, "the relay and the server are up after the client's bad input", r)

r = req(7, "tools/call", {"name": "garble", "arguments": {}})
ok(r and r.get("id") == 7 and r["result"]["content"][0]["text"] == "survived",
   "server: an oversized line, invalid UTF-8 and a non-JSON line are dropped; its real answer comes through", r)
r = req(8, "tools/call", {"name": "garble_only", "arguments": {}})
ok(r and r["error"]["code"] == -32603 and r["id"] == 8, "server: a malformed answer is replaced by an error for its request", r)
r = req(9, "tools/call", {"name": "secret", "arguments": {}})
ok(r and r["result"]["isError"], "a denied tool of the server is refused", r)
r = req(10, "ping")
ok(r and r["id"] == 10, "still up", r)
p.stdin.close()
rc = p.wait(timeout=60)
ok(rc == 0, "the client gone: the server ends and wrap exits with its status", rc)
log = "".join(err_lines)
ok(all(w in log for w in ("from the client: parse error", "from the client: invalid UTF-8", "from the client: larger than",
                          "from the server: larger than", "from the server: invalid UTF-8", "from the server: parse error")),
   "each refusal is a log line naming its side", log)
ev = [json.loads(l) for l in open(f"{tdir}/audit-bad.log")]
refused = [e for e in ev if e["type"] == "mcp.refused"]
calls = [e for e in ev if e["type"] == "mcp.tool_call"]
ok(len(refused) >= 7 and {e["from"] for e in refused} == {"client", "server"}, f"the refusals are audit events ({len(refused)})",
   [e["type"] for e in ev])
ok(len(calls) == 3 and [c["tool"] for c in calls] == ["garble", "garble_only", "secret"], "the three calls are audit events", calls)

# A wrapped server reaching for the network through the gateway (the policy
# allows example.com only) and straight at the host's loopback, where this
# script serves and counts requests.
import http.server

hits = []


class Count(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, *a):
        pass


hs = http.server.HTTPServer(("127.0.0.1", 0), Count)
threading.Thread(target=hs.serve_forever, daemon=True).start()
port = hs.server_address[1]
p = subprocess.Popen([moat, "mcp", "wrap", "--policy", f"{tdir}/net.yaml", "--name", "net", "--audit", f"{tdir}/audit-net.log", "--",
                      "python3", "/srv/bad/mcp_bad_server.py"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
r = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})
ok(r and "result" in r, "net: a server under the proxy policy starts", r)
r = req(2, "tools/call", {"name": "fetch", "arguments": {"url": "http://not-allowed.example.net/x"}})
ok(r and r["result"]["isError"] and "403" in r["result"]["content"][0]["text"], "net: a host outside the allowlist is refused by the gateway (403)", r)
r = req(3, "tools/call", {"name": "fetch", "arguments": {"url": f"http://127.0.0.1:{port}/from-the-sandbox"}})
ok(r and r["result"]["isError"], "net: the host's loopback is out of reach", r)
secret = os.environ["MCP_TEST_SECRET"]
r = req(4, "tools/call", {"name": "fetch", "arguments": {"url": f"http://not-allowed.example.net/?key={secret}"}})
ok(r and r["result"]["isError"], "net: a call with the secret's value in its arguments", r)
p.stdin.close()
p.wait(timeout=60)
hs.shutdown()
log = open(f"{tdir}/audit-net.log").read()
ok(secret not in log and "[REDACTED:apikey]" in log, "the secret's value is redacted in the audit event of the call", log[-600:])
ok(hits == [], "net: nothing reached the host's server", hits)
ev = [json.loads(l) for l in open(f"{tdir}/net-run.log")]
deny = [e for e in ev if e["type"] == "net.request" and e.get("decision") == "deny" and e.get("host") == "not-allowed.example.net"]
ok(len(deny) == 2, "net: the gateway's two refusals are in the run's audit log", [e["type"] for e in ev])

# The relay reads the server's stdout itself (moat run --direct-stdout): it
# redacts the policy's secrets from what it passes on, in every form the
# JSON may carry them, and caps what the server writes between two
# messages of the client at limits.output (1M here), not over its life.
p = subprocess.Popen([moat, "mcp", "wrap", "--policy", f"{tdir}/cap.yaml", "--name", "cap", "--audit", f"{tdir}/audit-cap.log", "--",
                      "python3", "/srv/bad/mcp_bad_server.py"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
err_lines = []
threading.Thread(target=lambda: err_lines.extend(l.decode(errors="replace") for l in p.stderr), daemon=True).start()
r = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})
ok(r and "result" in r, "relay: a server with a secret and limits.output 1M starts", r)
filesecret = open(f"{tdir}/filekey.txt").read().strip()
send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"{secret} {filesecret}"}}}).encode() + b"\n")
line = p.stdout.readline()
r = json.loads(line) if line else None
texts = [c["text"] for c in r["result"]["content"]] if r and "result" in r else []
ok(len(texts) == 3 and all("[REDACTED:apikey]" in t for t in texts[:2]) and secret.encode() not in line and secret not in json.dumps(r),
   "relay: the secret's value printed by the server is redacted, plain and \\u-escaped", (line[:300], texts))
ok(len(texts) == 3 and all("[REDACTED:filekey]" in t for t in texts[:2]) and filesecret.encode() not in line and filesecret not in json.dumps(r),
   "relay: ... and a secret read from a file", (line[:300], texts))
b64 = [__import__("base64").b64encode(s.encode()).decode() for s in (secret, filesecret)]
ok(len(texts) == 3 and texts[2] == "base64 [REDACTED:apikey] [REDACTED:filekey]" and not any(b in line.decode() for b in b64),
   "relay: ... and in base64", texts[2:])
sizes = []
for i in range(10):
    r = req(10 + i, "tools/call", {"name": "big", "arguments": {}})
    sizes.append(len(r["result"]["content"][0]["text"]) if r and "result" in r else -1)
ok(sizes == [200000] * 10, "relay: ten answers of 200 KB, 2 MB in all, past limits.output: the cap is between the client's messages", sizes)
send(b'{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"flood","arguments":{}}}\n')
got, notes = 0, 0
while True:
    line = p.stdout.readline()
    if not line:
        break
    got += len(line)
    m = json.loads(line)
    if m.get("id") == 30:
        break
    notes += 1
ok(m.get("id") == 30 and m["error"]["code"] == -32603 and got < (1 << 20) + (200 << 10),
   f"relay: a server flooding notifications is ended past limits.output ({notes} notifications, {got} bytes passed on), its call answered -32603", m)
p.stdin.close()
p.wait(timeout=60)
ok(any("more than limits.output" in l for l in err_lines), "relay: the output limit is a log line", err_lines[-5:])
ev = [json.loads(l) for l in open(f"{tdir}/audit-cap.log")]
end = [e for e in ev if e["type"] == "mcp.server.end"]
ok([e["type"] for e in ev if e["type"] == "mcp.server.output_limit"] == ["mcp.server.output_limit"] and end and end[0]["output_limit"] is True
   and end[0]["output_bytes"] > 2000000, "relay: the limit and the server's output in all are audit events", end)
log = open(f"{tdir}/audit-cap.log").read()
ok(secret not in log and filesecret not in log, "relay: no secret value in the audit log")

# With no --policy, the agent profile: the server runs (its code passed
# inline, since the profile binds nothing) and its network allows nothing.
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_bad_server.py")).read()
p = subprocess.Popen([moat, "mcp", "wrap", "--", "python3", "-c", src],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
r = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})
ok(r and r["result"]["serverInfo"]["name"] == "bad", "agent profile by default: the server runs", r)
r = req(2, "tools/call", {"name": "fetch", "arguments": {"url": "http://example.com/"}})
ok(r and r["result"]["isError"] and "403" in r["result"]["content"][0]["text"], "agent profile by default: its gateway allows no host", r)
p.stdin.close()
ok(p.wait(timeout=60) == 0, "agent profile by default: ends with its client")
sys.exit(1 if failed else 0)
