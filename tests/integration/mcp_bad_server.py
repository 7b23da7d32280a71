#!/usr/bin/env python3
"""A stdio MCP server that misbehaves on purpose, run inside moat mcp wrap:
for tools/call of "garble" it first writes a 5 MB line, a line of invalid
UTF-8 and a line that is not JSON, then its real answer; for "garble_only"
it answers with a malformed line carrying the request's id; "fetch" gets
its argument url with urllib (which goes through the sandbox's proxy);
"echo" answers with its argument text as is, \\u-escaped in the JSON and in
base64 word by word (a server that learned a secret's value and prints it); "flood"
writes 64 KiB notifications until it is stopped; "big" answers with 200 KB."""
import base64
import json
import sys
import urllib.request

out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    m = json.loads(raw)
    if "id" not in m:
        continue
    mid, method = m["id"], m.get("method")
    if method == "initialize":
        res = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "bad", "version": "1"}}
    elif method == "tools/list":
        res = {"tools": [{"name": n, "inputSchema": {"type": "object"}}
                         for n in ("garble", "garble_only", "secret", "fetch", "echo", "flood", "big")]}
    elif method == "tools/call" and m["params"]["name"] == "fetch":
        try:
            with urllib.request.urlopen(m["params"]["arguments"]["url"], timeout=20) as r:
                text, err = f"{r.status} {r.read(200)!r}", False
        except Exception as e:  # the refusal is the answer
            text, err = f"{type(e).__name__}: {e}", True
        res = {"content": [{"type": "text", "text": text}], "isError": err}
    elif method == "tools/call" and m["params"]["name"] == "garble":
        out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"z" * (5 << 20) + b'"}}\n')
        out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"\xff\xfe"}}\n')
        out.write(b'this is not json\n')
        res = {"content": [{"type": "text", "text": "survived"}]}
    elif method == "tools/call" and m["params"]["name"] == "echo":
        t = m["params"]["arguments"]["text"]
        escaped = "".join(f"\\u{ord(c):04x}" for c in t)
        out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":{"content":['
                  + json.dumps({"type": "text", "text": f"plain {t}"}).encode()
                  + b',{"type":"text","text":"escaped ' + escaped.encode() + b'"},'
                  + json.dumps({"type": "text", "text": "base64 " + " ".join(base64.b64encode(w.encode()).decode() for w in t.split())}).encode()
                  + b']}}\n')
        out.flush()
        continue
    elif method == "tools/call" and m["params"]["name"] == "flood":
        note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + b"f" * 65536 + b'"}}\n'
        try:
            while True:
                out.write(note)
                out.flush()
        except BrokenPipeError:
            sys.exit(0)
    elif method == "tools/call" and m["params"]["name"] == "big":
        res = {"content": [{"type": "text", "text": "b" * 200000}]}
    elif method == "tools/call" and m["params"]["name"] == "garble_only":
        out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":{"x":"\xc0\xaf"}}\n')
        out.flush()
        continue
    elif method == "ping":
        res = {}
    else:
        out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}}).encode() + b"\n")
        out.flush()
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}).encode() + b"\n")
    out.flush()
