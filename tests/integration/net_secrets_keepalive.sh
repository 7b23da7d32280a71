#!/bin/bash
# Keep-alive inside terminated TLS, and the gateway's pool of upstream
# connections: several requests on one connection from the sandbox, each
# read, decided, injected and logged on its own; the upstream connection
# (and its TLS session) kept for the next request. Against an HTTPS
# upstream this script starts (in a network namespace it makes, as root)
# that keeps its connections open and logs which one each request came on.
# The attacks net_tls_secret_pipeline and net_tls_secret_smuggle run here,
# where there is such an upstream.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

upstream_certs api.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-ka-$$" 2>/dev/null; then
		NS="moat-ka-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the keep-alive tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports.json --keep-alive &
UPSTREAM=$!
# A second one that closes a connection idle for half a second.
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports2.json --keep-alive --idle 0.5 &
UPSTREAM2=$!
cleanup() {
	kill "$UPSTREAM" "$UPSTREAM2" 2>/dev/null
	wait "$UPSTREAM" "$UPSTREAM2" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
for _ in $(seq 100); do [ -s ports2.json ] && break; sleep 0.1; done
P=$(json ports.json 'j["port"]')
P2=$(json ports2.json 'j["port"]')
touch up.log

GH_VALUE="ghp_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export HOST_GH="$GH_VALUE"
cat >policy.yaml <<EOF
version: 1
network:
  allow:
    - {host: api.example.test, ports: [$P, $P2]}
  allow_private: [127.0.0.2/32]
  hosts: {api.example.test: 127.0.0.2}
secrets:
  - name: github
    from: env:HOST_GH
    env: GITHUB_TOKEN
    inject: {host: api.example.test, methods: [GET, POST], paths: ["/repos/myorg/*"]}
EOF
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
RUN=(run --policy policy.yaml --net-log "$MOAT_TDIR/net.jsonl" --audit "$MOAT_TDIR/audit.jsonl" --time 60s)
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}
# up FIELD PATH: a field of the last request the upstream got for PATH
# ("-" when none arrived): auth (the Authorization header), conn or resumed.
up() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
field, want = sys.argv[1], sys.argv[2]
last = "-"
for line in open("up.log"):
    r = json.loads(line)
    if r["path"] == want:
        last = str(r[field]) if field in ("conn", "resumed") else next((v for k, v in r["headers"] if k.lower() == "authorization"), "")
print(last)
EOF
}
# events PATH: the net.request events for PATH, one "decision secret
# status-line-reason" per line.
events() {
	python3 - "$1" <<'EOF'
import json, sys
for line in open("net.jsonl"):
    e = json.loads(line)
    if e.get("path") == sys.argv[1]:
        print(e["decision"], e.get("secret", "-"), e.get("reason", "")[:80])
EOF
}
# The client inside: raw TLS through CONNECT, so that requests can be
# written together; prints every byte the gateway answered until it closed.
RAW='
import os, socket, ssl, sys
host, port = sys.argv[1], sys.argv[2]
ph = os.environ["GITHUB_TOKEN"]
proxy = os.environ["HTTPS_PROXY"].split("://", 1)[-1].rstrip("/").rsplit(":", 1)
s = socket.create_connection((proxy[0], int(proxy[1])))
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
b = b""
while b"\r\n\r\n" not in b:
    b += s.recv(1)
t = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]).wrap_socket(s, server_hostname=host)
t.settimeout(20)
t.sendall(sys.stdin.read().replace("PH", ph).replace("HOST", host + ":" + port).replace("\n", "\r\n").encode())
out = b""
while True:
    d = t.recv(65536)
    if not d:
        break
    out += d
sys.stdout.write(out.decode(errors="replace"))'
raw() { mrun "${RUN[@]}" -- python3 -c "$RAW" api.example.test "$P"; }

# Keep-alive: three requests on one connection, then one on a new
# connection; each got the value, each is logged on its own, and all went
# on one upstream connection (the pool outlives the client's connection).
mrun "${RUN[@]}" -- python3 -c "
import http.client, os, ssl
ctx = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])
proxy = os.environ['HTTPS_PROXY'].split('://', 1)[-1].rstrip('/').rsplit(':', 1)
def conn():
    c = http.client.HTTPSConnection(proxy[0], int(proxy[1]), context=ctx)
    c.set_tunnel('api.example.test', $P)
    return c
c = conn()
socks = set()
for i in (1, 2, 3):
    c.request('GET', '/repos/myorg/ka-%d' % i, headers={'Authorization': 'Bearer ' + os.environ['GITHUB_TOKEN']})
    r = c.getresponse()
    print(r.status, r.read().decode().strip())
    socks.add(id(c.sock))
print('client connections:', len(socks))
c.close()
c = conn()
c.request('GET', '/repos/myorg/ka-4', headers={'Authorization': 'Bearer ' + os.environ['GITHUB_TOKEN']})
print(c.getresponse().status)"
t_eq "keep-alive: three requests on one client connection, then one on another" \
	"200 tls-upstream-ok GET /repos/myorg/ka-1|200 tls-upstream-ok GET /repos/myorg/ka-2|200 tls-upstream-ok GET /repos/myorg/ka-3|client connections: 1|200" \
	"$(printf '%s\n' "$OUT" | paste -sd'|')"
t_eq "keep-alive: the upstream got the value in each" \
	"Bearer $GH_VALUE|Bearer $GH_VALUE|Bearer $GH_VALUE|Bearer $GH_VALUE" \
	"$(up auth /repos/myorg/ka-1)|$(up auth /repos/myorg/ka-2)|$(up auth /repos/myorg/ka-3)|$(up auth /repos/myorg/ka-4)"
c1=$(up conn /repos/myorg/ka-1)
t_eq "pool: the four requests went on one upstream connection" "$c1 $c1 $c1 $c1" \
	"$(up conn /repos/myorg/ka-1) $(up conn /repos/myorg/ka-2) $(up conn /repos/myorg/ka-3) $(up conn /repos/myorg/ka-4)"
for i in 1 2 3 4; do
	t_eq "keep-alive: request $i is logged on its own, with the secret" "allow github" \
		"$(events /repos/myorg/ka-$i | cut -d' ' -f1,2)"
done
t_eq "keep-alive: the audit log has one net.request per request" "1 1 1 1" "$(python3 -c 'import json
n = {}
for l in open("audit.jsonl"):
    e = json.loads(l)
    if e.get("type") == "net.request" and e.get("path", "").startswith("/repos/myorg/ka-"):
        n[e["path"]] = n.get(e["path"], 0) + 1
print(*[n.get("/repos/myorg/ka-%d" % i, 0) for i in (1, 2, 3, 4)])')"

# An upstream that closes idle connections: the pooled one is dropped when
# it does, and the next request on the client's connection goes on a new
# one (or, had the close crossed the request, is sent again).
mrun "${RUN[@]}" -- python3 -c "
import http.client, os, ssl, time
ctx = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])
proxy = os.environ['HTTPS_PROXY'].split('://', 1)[-1].rstrip('/').rsplit(':', 1)
c = http.client.HTTPSConnection(proxy[0], int(proxy[1]), context=ctx)
c.set_tunnel('api.example.test', $P2)
for i in (1, 2):
    c.request('GET', '/repos/myorg/idle-%d' % i, headers={'Authorization': 'Bearer ' + os.environ['GITHUB_TOKEN']})
    r = c.getresponse()
    print(r.status, r.read().decode().strip())
    time.sleep(1.5)"
t_eq "idle upstream: both requests answered on one client connection" \
	"200 tls-upstream-ok GET /repos/myorg/idle-1|200 tls-upstream-ok GET /repos/myorg/idle-2" "$(printf '%s\n' "$OUT" | paste -sd'|')"
t_eq "idle upstream: the second went on a new upstream connection, with the value" "different Bearer $GH_VALUE" \
	"$([ "$(up conn /repos/myorg/idle-1)" != "$(up conn /repos/myorg/idle-2)" ] && echo different || echo same) $(up auth /repos/myorg/idle-2)"
t_eq "idle upstream: the new connection resumed the first one's TLS session" "False True" \
	"$(up resumed /repos/myorg/idle-1) $(up resumed /repos/myorg/idle-2)"

# Pipelined: two requests written together, both bound: both answered in
# order, both with the value. Then a response the upstream echoes: the value
# masked in each, and each response whole.
raw <<'EOF'
GET /repos/myorg/pipe-1 HTTP/1.1
Host: HOST
Authorization: Bearer PH

GET /repos/myorg/echo-pipe-2 HTTP/1.1
Host: HOST
Authorization: Bearer PH

GET /repos/myorg/echo-pipe-3 HTTP/1.1
Host: HOST
Authorization: Bearer PH
Connection: close

EOF
t_eq "pipelined: three answers, in order" "200 200 200" "$(printf '%s\n' "$OUT" | grep '^HTTP/1.1' | cut -d' ' -f2 | paste -sd' ')"
t_match "pipelined: the second is the echo of its own request" "GET /repos/myorg/echo-pipe-2 HTTP/1.1" "$OUT"
t_eq "pipelined: the upstream got the value in each" "Bearer $GH_VALUE|Bearer $GH_VALUE|Bearer $GH_VALUE" \
	"$(up auth /repos/myorg/pipe-1)|$(up auth /repos/myorg/echo-pipe-2)|$(up auth /repos/myorg/echo-pipe-3)"
t_nomatch "pipelined: the echoed value is masked in every response" "$GH_VALUE" "$OUT"

# Ambiguous framing on a kept-alive connection: a clear 400 and a logged
# refusal, after the first request was served.
: >net.jsonl
raw <<'EOF'
GET /repos/myorg/frame-ok HTTP/1.1
Host: HOST

POST /repos/myorg/frame-te-cl HTTP/1.1
Host: HOST
Content-Length: 5
Transfer-Encoding: chunked

0

EOF
t_eq "framing: the first request is answered" 200 "$(printf '%s\n' "$OUT" | grep -m1 '^HTTP/1.1' | cut -d' ' -f2)"
t_match "framing: Content-Length with Transfer-Encoding is a 400 with the reason" \
	"HTTP/1.1 400 .*both Content-Length and Transfer-Encoding" "$(printf '%s\n' "$OUT" | tr -d '\r' | paste -sd' ')"
t_match "framing: the refusal is logged" '"decision":"deny".*both Content-Length and Transfer-Encoding' "$(cat net.jsonl)"
raw <<'EOF'
GET /repos/myorg/frame-ok2 HTTP/1.1
Host: HOST

POST /repos/myorg/frame-cl-cl HTTP/1.1
Host: HOST
Content-Length: 1
Content-Length: 20

x
EOF
t_match "framing: two Content-Length headers are a 400 with the reason" \
	"HTTP/1.1 400 .*more than one Content-Length" "$(printf '%s\n' "$OUT" | tr -d '\r' | paste -sd' ')"
t_eq "framing: neither ambiguous request reached the upstream" "- -" \
	"$(up conn /repos/myorg/frame-te-cl) $(up conn /repos/myorg/frame-cl-cl)"

# HTTP/1.0, and Connection: close: the gateway ends the connection after
# the response (the client reads to its end, and the test would time out
# otherwise).
raw <<'EOF'
GET /repos/myorg/h10 HTTP/1.0
Host: HOST
Authorization: Bearer PH

EOF
t_match "HTTP/1.0: answered, then the connection ends" "tls-upstream-ok GET /repos/myorg/h10" "$OUT"

# The attacks: a pipelined request the secret is not bound to, requests
# smuggled in bodies.
: >net.jsonl
for a in net_tls_secret_pipeline net_tls_secret_smuggle; do
	mrun "${RUN[@]}" --env "MOAT_T_TLS=api.example.test:$P" --ro "$MOAT_ATTACKS/attack_$a:/tmp/attack" -- /tmp/attack
	t_eq "$a: $OUT" 0 "$RC"
done
t_eq "attacks: the pipelined DELETE and /admin requests were refused, naming the secret" \
	"deny github|deny github" \
	"$(events /repos/myorg/echo-second | cut -d' ' -f1,2)|$(events /admin/echo-second | cut -d' ' -f1,2)"
t_eq "attacks: neither reached the upstream" "- -" "$(up conn /repos/myorg/echo-second) $(up conn /admin/echo-second)"
t_eq "attacks: the smuggled request never reached the upstream as one" "-" "$(up conn /admin/echo-smuggled)"
t_eq "attacks: the value went only to paths it is bound to" "" \
	"$(grep "$GH_VALUE" up.log | python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if not r["path"].startswith("/repos/myorg/") or r["method"] not in ("GET", "POST"):
        print(r["method"], r["path"])')"
t_eq "no value in the audit log or the net log" "" "$(grep -l "$GH_VALUE" audit.jsonl net.jsonl)"
