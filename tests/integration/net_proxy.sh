#!/bin/bash
# moat run --net proxy: egress through the gateway, with curl and Python from
# inside the sandbox, against upstream servers this script starts on the
# host's loopback. Nothing is reachable unless named through --net-host and
# opened with --allow-private.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# A certificate for the TLS upstream, made here.
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 \
	-subj /CN=api.example.test -addext subjectAltName=DNS:api.example.test >/dev/null 2>&1
chmod 644 key.pem cert.pem

# As root the TLS upstream listens on 443 itself; rootless on a free port.
# As root, the upstreams and moat run in a network namespace made here, so
# that port 443 is this script's alone, whatever else runs on the host (other
# suites, or this one's other scripts, which run two at a time).
NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-npt-$$" 2>/dev/null; then
		NS="moat-npt-$$"
		ip -n "$NS" link set lo up
		# nsenter --net, not `ip netns exec`: that one also remounts
		# /sys in a mount namespace of its own, where moat finds no
		# cgroup and falls back to rlimits (users get the cgroup).
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_skip "network namespace for the proxy tests" "ip netns add failed"
	fi
fi
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}
if is_root; then tls_addr=127.0.0.2:443; else tls_addr=127.0.0.2:0; fi
"${IN[@]}" python3 "$MOAT_SRC/integration/net_upstream.py" --up 127.0.0.2:0 --secret 127.0.0.1:0 \
	--tls "$tls_addr" --cert cert.pem --key key.pem --ports ports.json &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
UP=$(json ports.json 'j["up"]')
SECRET=$(json ports.json 'j["secret"]')
TLS=$(json ports.json 'j["tls"]')
if [ "$TLS" = 443 ]; then api=api.example.test; else api=api.example.test:$TLS; fi
api_port=api.example.test:$TLS

NET=(--allow-host "up.test:$UP" --allow-host "$api" --allow-private 127.0.0.2/32
	--net-host up.test=127.0.0.2 --net-host api.example.test=127.0.0.2 --net-log "$MOAT_TDIR/net.jsonl"
	--ro "$MOAT_TDIR/cert.pem:/etc/moat-test-ca.pem")

mrun run "${NET[@]}" -- curl -sS "http://up.test:$UP/"
t_eq "curl: allowed host through the proxy" "upstream-ok" "$OUT"

mrun run "${NET[@]}" -- python3 -c "import urllib.request; print(urllib.request.urlopen('http://up.test:$UP/').read().decode().strip())"
t_eq "python urllib: allowed host through the proxy" "upstream-ok" "$OUT"

mrun run "${NET[@]}" -- curl -sS -o /dev/null -w '%{http_code}' "http://api.evil.test/"
t_eq "curl: a host not allowed gets 403" 403 "$OUT"
mrun run "${NET[@]}" -- curl -sS "http://api.evil.test/"
t_eq "curl: the 403 says why" "moat: api.evil.test is not in this sandbox's network allowlist" "$OUT"

mrun run "${NET[@]}" -- python3 -c "
import urllib.request, urllib.error
try:
    urllib.request.urlopen('http://api.evil.test/')
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())"
t_eq "python urllib: 403 with the reason" "403 moat: api.evil.test is not in this sandbox's network allowlist" "$OUT"

# NO_PROXY keeps loopback inside the sandbox; asked through the gateway, the
# host's loopback is refused there too.
mrun run "${NET[@]}" -- env NO_PROXY= no_proxy= curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SECRET/"
t_eq "the host's loopback is refused by the gateway" 403 "$OUT"
mrun run "${NET[@]}" -- curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SECRET/"
t_eq "and, directly (NO_PROXY), it is the sandbox's own loopback, where nothing listens" 000 "$OUT"

mrun run "${NET[@]}" -- curl -sS --cacert /etc/moat-test-ca.pem "https://$api/"
t_eq "curl https: CONNECT tunnel to an allowed host" "tls-upstream-ok" "$OUT"

mrun run "${NET[@]}" -- curl -sS --cacert /etc/moat-test-ca.pem --proxy socks5h://127.0.0.1:3128 "https://$api/"
t_eq "curl https over SOCKS5 on the same port" "tls-upstream-ok" "$OUT"

mrun run "${NET[@]}" -- python3 -c "
import ssl, urllib.request
ctx = ssl.create_default_context(cafile='/etc/moat-test-ca.pem')
print(urllib.request.urlopen('https://$api/', context=ctx).read().decode().strip())"
t_eq "python urllib https through the proxy" "tls-upstream-ok" "$OUT"

# Chunked request bodies (curl -T -, git push of more than 1 MB): forwarded
# chunked to the end of the body.
mrun run "${NET[@]}" -- sh -c "head -c 2000000 /dev/zero | curl -sS -T - http://up.test:$UP/upload"
t_eq "curl -T -: a 2 MB chunked upload reaches the upstream whole" "got 2000000 bytes chunked" "$OUT"

# More clients, each through the proxy variables moat sets.
if command -v wget >/dev/null 2>&1; then
	mrun run "${NET[@]}" -- wget -qO- "http://up.test:$UP/"
	t_eq "wget: http through the proxy" "upstream-ok" "$OUT"
	mrun run "${NET[@]}" -- wget -qO- --ca-certificate=/etc/moat-test-ca.pem "https://$api/"
	t_eq "wget: https through CONNECT" "tls-upstream-ok" "$OUT"
else
	t_na "wget through the proxy" "wget is not installed on this host"
fi
mrun run "${NET[@]}" -- python3 -c "
import http.client, ssl
ctx = ssl.create_default_context(cafile='/etc/moat-test-ca.pem')
host, _, port = '$api'.partition(':')
c = http.client.HTTPSConnection('127.0.0.1', 3128, context=ctx)
c.set_tunnel(host, int(port or 443))
c.request('GET', '/')
print(c.getresponse().read().decode().strip())"
t_eq "python http.client: https through set_tunnel" "tls-upstream-ok" "$OUT"
mrun run "${NET[@]}" -- curl -sS --http2 --cacert /etc/moat-test-ca.pem "https://$api/"
t_eq "curl --http2: https through CONNECT (ALPN is the upstream's business)" "tls-upstream-ok" "$OUT"

# Node and the JVM reserve a large address space at start. Where moat's
# memory limit falls back to RLIMIT_AS (no usable cgroup for this run),
# they cannot start at all: that is reported as not applicable, with the
# reason, and any other failure shows its stderr.
client_check() { # NAME EXPECTED
	if printf '%s\n%s' "$OUT" "$ERR" | grep -q "reserve virtual memory\|Could not reserve enough space\|Cannot allocate memory"; then
		t_na "$1" "the runtime could not reserve its address space under the rlimit fallback for memory"
		return
	fi
	[ "$OUT" = "$2" ] || printf '%s\n' "$ERR" | head -5 | sed 's/^/#   stderr: /'
	t_eq "$1" "$2" "$OUT"
}

# git clone over http (the "dumb" protocol: a static server is all it
# needs), through http_proxy.
if command -v git >/dev/null 2>&1; then
	rm -rf gitsrc repo.git
	git init -q gitsrc && git -C gitsrc -c user.name=t -c user.email=t@t commit -q --allow-empty -m "through the gateway"
	git clone -q --bare gitsrc repo.git && git -C repo.git update-server-info
	chmod -R a+rX repo.git
	# A static server that says which port it got once it listens.
	rm -f git.port
	"${IN[@]}" python3 -c 'import functools, http.server
s = http.server.ThreadingHTTPServer(("127.0.0.2", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory="."))
open("git.port.tmp", "w").write(str(s.server_address[1]))
__import__("os").replace("git.port.tmp", "git.port")
s.serve_forever()' >/dev/null 2>&1 &
	GITSRV=$!
	for _ in $(seq 100); do [ -s git.port ] && break; sleep 0.1; done
	GITPORT=$(cat git.port)
	mrun run "${NET[@]}" --allow-host "up.test:$GITPORT" -- sh -c \
		"git clone -q http://up.test:$GITPORT/repo.git /tmp/clone && git -C /tmp/clone log --format=%s"
	kill "$GITSRV"; wait "$GITSRV" 2>/dev/null
	client_check "git clone over http through the proxy" "through the gateway"
else
	t_na "git clone through the proxy" "git is not installed on this host"
fi

# Java's HttpClient with a ProxySelector (it ignores proxy variables), from
# a single source file.
cat >Client.java <<'EOF'
import java.net.*;
import java.net.http.*;
public class Client {
	public static void main(String[] a) throws Exception {
		HttpClient c = HttpClient.newBuilder().proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", 3128))).build();
		System.out.println(c.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString()).body().trim());
	}
}
EOF
# Debian's JDK keeps its security configuration under /etc/java-*, which
# the sandbox does not show by default.
JAVA_RO=()
for d in /etc/java-*; do [ -d "$d" ] && JAVA_RO+=(--ro "$d"); done
JAVA_OK=$(command -v java >/dev/null 2>&1 && "$MOAT" run -- java -version 2>&1 | grep -c -i openjdk)
if [ "${JAVA_OK:-0}" -gt 0 ]; then
	# Without a cgroup (rootless on cgroup v1) memory is held by
	# RLIMIT_DATA, which counts the heap the JVM commits at start (1/64 of
	# the host's memory) whether it is touched or not: give it room.
	mrun run "${NET[@]}" --mem 1G "${JAVA_RO[@]}" --ro "$MOAT_TDIR/Client.java:/tmp/Client.java" -- java /tmp/Client.java "http://up.test:$UP/"
	client_check "java HttpClient: http through the proxy" "upstream-ok"
elif command -v java >/dev/null 2>&1; then
	t_na "java HttpClient through the proxy" "the JVM does not start under this mode's memory limit (rlimit fallback)"
else
	t_na "java HttpClient through the proxy" "java is not installed on this host"
fi

# A client that half-closes after its request still gets the response.
mrun run "${NET[@]}" -- python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'GET http://up.test:$UP/ HTTP/1.1\r\nHost: up.test:$UP\r\n\r\n')
s.shutdown(socket.SHUT_WR)
data = b''
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.split(b'\r\n\r\n', 1)[1].decode().strip())"
t_eq "half-close after the request: the response still comes" "upstream-ok" "$OUT"

# Node's http.request with method CONNECT names the proxy in its Host
# header (127.0.0.1:3128): the target is what is judged, and that Host is
# accepted. Node is optional on a host; where it is missing, say so.
# Without a delegated cgroup (rootless here) moat falls back to an
# address-space rlimit, under which V8 cannot reserve its code range: that
# is reported, not counted as the gateway's failure.
NODE_OK=$(command -v node >/dev/null 2>&1 && "$MOAT" run -- node -e 'console.log("up")' 2>/dev/null)
if [ "$NODE_OK" = up ]; then
	mrun run "${NET[@]}" -- node -e '
const http = require("http"), tls = require("tls"), fs = require("fs");
const target = process.argv[1], host = target.split(":")[0], port = target.split(":")[1] || "443";
const req = http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: host + ":" + port});
req.on("connect", (res, sock) => {
	if (res.statusCode !== 200) { console.log("status " + res.statusCode); process.exit(1); }
	const t = tls.connect({socket: sock, servername: host, ca: fs.readFileSync("/etc/moat-test-ca.pem")}, () =>
		t.write("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"));
	let body = "";
	t.on("data", (d) => body += d);
	t.on("end", () => console.log(body.split("\r\n\r\n")[1].trim()));
});
req.end();' "$api_port"
	client_check "node: CONNECT with its default Host (the proxy), then TLS" "tls-upstream-ok"
elif command -v node >/dev/null 2>&1; then
	t_na "node: CONNECT with its default Host" "node does not start under this mode's memory limit (rlimit fallback)"
else
	t_na "node: CONNECT with its default Host" "node is not installed on this host"
fi

mrun run "${NET[@]}" -- curl -sS -H 'Proxy-Authorization: Basic c2VjcmV0' -H 'X-Test: kept' "http://up.test:$UP/headers"
t_match "the upstream gets an origin-form request" "^GET /headers HTTP/1.1" "$OUT"
t_nomatch "Proxy-Authorization never reaches the upstream" "[Pp]roxy-[Aa]uthorization|c2VjcmV0" "$OUT"
t_match "other headers are kept" "X-Test: kept" "$OUT"

mrun run "${NET[@]}" -- sh -c 'env | grep -i _proxy= | sort | tr "\n" " "'
t_eq "proxy variables, in both cases" "ALL_PROXY=socks5h://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 HTTP_PROXY=http://127.0.0.1:3128 NO_PROXY=localhost,127.0.0.1,::1 all_proxy=socks5h://127.0.0.1:3128 http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 no_proxy=localhost,127.0.0.1,::1 " "$OUT"
mrun run -- sh -c 'env | grep -c -i _proxy='
t_eq "no proxy variables without --net proxy" 0 "$OUT"
mrun run -- curl -sS -m 5 "http://up.test:$UP/"
t_match "without --net proxy nothing is reachable" "^(6|7)$" "$RC"

# The log: one net.request line per request, with the decision and reason.
mrun run "${NET[@]}" -- sh -c "curl -s http://up.test:$UP/ >/dev/null; curl -s http://denied.test/ >/dev/null"
t_eq "log: every line is a net.request" 0 "$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["type"] != "net.request"))' net.jsonl)"
last2=$(tail -n 2 net.jsonl)
t_match "log: the allowed request, with its address and bytes" '"address":"127.0.0.2".*"bytes_down":[1-9].*"decision":"allow".*"host":"up.test".*"method":"GET"' "$(printf '%s\n' "$last2" | head -1)"
t_match "log: the denied request, with the reason" '"decision":"deny".*"host":"denied.test".*"reason":"moat: denied.test is not in' "$(printf '%s\n' "$last2" | tail -1)"

# 100 tunnels open at the same time, each with its own TLS session.
cat >conc.py <<EOF
import ssl, socket, sys, threading
ctx = ssl.create_default_context(cafile="/etc/moat-test-ca.pem")
barrier = threading.Barrier(100)
ok = []
errors = []
def tunnel(i):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT $api_port HTTP/1.1\r\nHost: $api_port\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        c = s.recv(1)
        if not c:
            raise EOFError("the gateway closed before answering CONNECT: %r" % head)
        head += c
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError("CONNECT refused: %r" % head.split(b"\r\n")[0])
    t = ctx.wrap_socket(s, server_hostname="api.example.test")
    barrier.wait(timeout=240)
    t.sendall(b"GET /n%d HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n" % i)
    data = b""
    while True:
        d = t.recv(4096)
        if not d:
            break
        data += d
    if head.startswith(b"HTTP/1.1 200") and data.endswith(b"tls-upstream-ok\n"):
        ok.append(i)
    else:
        errors.append("tunnel %d: %r / %r" % (i, head[:40], data[-40:]))
# A tunnel that fails says why, and frees the others from the barrier.
def one(i):
    try:
        tunnel(i)
    except threading.BrokenBarrierError:
        pass
    except Exception as e:
        errors.append("tunnel %d: %r" % (i, e))
        barrier.abort()
ts = [threading.Thread(target=one, args=(i,)) for i in range(100)]
[t.start() for t in ts]
[t.join() for t in ts]
print(len(ok))
for e in errors[:5]:
    print(e, file=sys.stderr)
EOF
# Rootless, memory falls back to RLIMIT_DATA, which counts the 100 thread
# stacks: leave room for them. The time limit only stops a hang: 100
# handshakes through a sanitizer build on a loaded machine take a minute
# or more.
mrun run "${NET[@]}" --pids 512 --mem 2G --time 300s --ro "$MOAT_TDIR/conc.py:/tmp/conc.py" -- python3 /tmp/conc.py
if [ "$OUT" = 100 ]; then t_ok "100 concurrent TLS tunnels relayed"; else
	t_fail "100 concurrent TLS tunnels relayed" "expected: 100, actual: $OUT (exit $RC)" "$(printf '%s' "$ERR" | tail -5)"
fi
