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
		IN=(ip netns exec "$NS")
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
import ssl, socket, threading
ctx = ssl.create_default_context(cafile="/etc/moat-test-ca.pem")
barrier = threading.Barrier(100)
ok = []
def one(i):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT $api_port HTTP/1.1\r\nHost: $api_port\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    t = ctx.wrap_socket(s, server_hostname="api.example.test")
    barrier.wait(timeout=60)
    t.sendall(b"GET /n%d HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n" % i)
    data = b""
    while True:
        d = t.recv(4096)
        if not d:
            break
        data += d
    if head.startswith(b"HTTP/1.1 200") and data.endswith(b"tls-upstream-ok\n"):
        ok.append(i)
ts = [threading.Thread(target=one, args=(i,)) for i in range(100)]
[t.start() for t in ts]
[t.join() for t in ts]
print(len(ok))
EOF
# Rootless, memory falls back to RLIMIT_DATA, which counts the 100 thread
# stacks: leave room for them.
mrun run "${NET[@]}" --pids 512 --mem 2G --time 60s --ro "$MOAT_TDIR/conc.py:/tmp/conc.py" -- python3 /tmp/conc.py
t_eq "100 concurrent TLS tunnels relayed" 100 "$OUT"
