#!/bin/bash
# moat run --net transparent: programs that ignore the proxy variables
# (Node's fetch, Go, Java's HttpClient without a ProxySelector, curl
# --noproxy) still reach allowed hosts, because the sandbox's namespace
# redirects every TCP connection to the gateway and answers DNS from the
# gateway's stub; the gateway judges the name the program asked for. The
# upstreams are servers this script starts on loopback (as root, inside a
# network namespace made here).
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 \
	-subj /CN=api.example.test -addext subjectAltName=DNS:api.example.test >/dev/null 2>&1
chmod 644 key.pem cert.pem

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-ntt-$$" 2>/dev/null; then
		NS="moat-ntt-$$"
		ip -n "$NS" link set lo up
		# nsenter --net keeps the cgroup moat delegates (see net_proxy.sh).
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_skip "network namespace for the transparent egress tests" "ip netns add failed"
	fi
fi
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# The kernel features transparent egress needs (nf_tables with NAT,
# redirect and conntrack, in a namespace a user namespace owns): without
# them the run must fail at setup, naming what is missing.
mrun run --net transparent -- true
if [ "$RC" != 0 ]; then
	if printf '%s' "$ERR" | grep -q "nf_tables"; then
		t_ok "a kernel without transparent egress gets a setup error naming nf_tables"
		t_skip "transparent egress" "$ERR"
		exit 0
	fi
	t_fail "moat run --net transparent true" "exit $RC" "$ERR"
	exit 0
fi

"${IN[@]}" python3 "$MOAT_SRC/integration/net_upstream.py" --up 127.0.0.2:0 --secret 127.0.0.1:0 \
	--tls 127.0.0.2:0 --cert cert.pem --key key.pem --ports ports.json &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
UP=$(json ports.json 'j["up"]')
TLS=$(json ports.json 'j["tls"]')
SECRET=$(json ports.json 'j["secret"]')
api=api.example.test:$TLS

NET=(--net transparent --allow-host "up.test:$UP" --allow-host "$api" --allow-private 127.0.0.2/32
	--net-host up.test=127.0.0.2 --net-host api.example.test=127.0.0.2 --net-log "$MOAT_TDIR/net.jsonl"
	--ro "$MOAT_TDIR/cert.pem:/etc/moat-test-ca.pem")

mrun run "${NET[@]}" --result - -- getent hosts up.test
t_match "the DNS stub maps a name into 198.18.0.0/15" '^198\.1[89]\.[0-9]+\.[0-9]+ +up\.test' "$OUT"
t_match "the result's isolation object says transparent" '"egress": *"transparent"' "$OUT"
mrun run --net proxy --allow-host "up.test:$UP" --result - -- true
t_match "and proxy for --net proxy" '"egress": *"proxy"' "$OUT"

mrun run "${NET[@]}" -- curl -sS --noproxy '*' "http://up.test:$UP/"
t_eq "curl --noproxy: http by name, redirected to the gateway" "upstream-ok" "$OUT"
mrun run "${NET[@]}" -- curl -sS --noproxy '*' --cacert /etc/moat-test-ca.pem "https://$api/"
t_eq "curl --noproxy: https by name, its SNI judged" "tls-upstream-ok" "$OUT"
mrun run "${NET[@]}" -- curl -sS "http://up.test:$UP/"
t_eq "the proxy variables are still set and served" "upstream-ok" "$OUT"
# The sandbox's own loopback servers are not redirected.
mrun run "${NET[@]}" -- python3 -c "
import socket, threading
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()
threading.Thread(target=lambda: l.accept()[0].sendall(b'own-loopback'), daemon=True).start()
c = socket.create_connection(l.getsockname())
print(c.recv(64).decode())"
t_eq "the sandbox's own loopback server is reached directly" own-loopback "$OUT"
mrun run "${NET[@]}" -- curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' "http://other.test:$UP/"
t_eq "a name the rules do not allow gets 403" 403 "$OUT"
mrun run "${NET[@]}" -- curl -sS --noproxy '*' --cacert /etc/moat-test-ca.pem "https://other.test:$TLS/"
if [ "$OUT" != tls-upstream-ok ]; then t_ok "https to a name not allowed is cut"; else t_fail "https to a name not allowed is cut" "$OUT"; fi
t_match "and logged as denied" '"host":"other.test".*"decision":"deny"|"decision":"deny".*"host":"other.test"' "$(cat net.jsonl)"

mrun run "${NET[@]}" -- python3 -c "
import urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print(o.open('http://up.test:$UP/').read().decode().strip())"
t_eq "python urllib without a proxy" "upstream-ok" "$OUT"
mrun run "${NET[@]}" -- python3 -c "
import http.client, ssl
ctx = ssl.create_default_context(cafile='/etc/moat-test-ca.pem')
c = http.client.HTTPSConnection('api.example.test', $TLS, context=ctx)
c.request('GET', '/')
print(c.getresponse().read().decode().strip())"
t_eq "python http.client https without a proxy" "tls-upstream-ok" "$OUT"

client_check() { # NAME EXPECTED
	if printf '%s\n%s' "$OUT" "$ERR" | grep -q "reserve virtual memory\|Could not reserve enough space\|Cannot allocate memory"; then
		t_na "$1" "the runtime could not reserve its address space under the rlimit fallback for memory"
		return
	fi
	[ "$OUT" = "$2" ] || printf '%s\n' "$ERR" | head -5 | sed 's/^/#   stderr: /'
	t_eq "$1" "$2" "$OUT"
}

NODE_OK=$(command -v node >/dev/null 2>&1 && "$MOAT" run -- node -e 'console.log("up")' 2>/dev/null)
if [ "$NODE_OK" = up ]; then
	# Node 20's fetch ignores the proxy variables: it reaches the
	# upstream only through the redirect.
	mrun run "${NET[@]}" -- node -e "fetch('http://up.test:$UP/').then(r => r.text()).then(t => console.log(t.trim()))"
	client_check "node fetch: http through transparent egress" "upstream-ok"
	mrun run "${NET[@]}" --env NODE_EXTRA_CA_CERTS=/etc/moat-test-ca.pem -- node -e "fetch('https://$api/').then(r => r.text()).then(t => console.log(t.trim()))"
	client_check "node fetch: https through transparent egress" "tls-upstream-ok"
	mrun run "${NET[@]}" --env NODE_EXTRA_CA_CERTS=/etc/moat-test-ca.pem -- node -e "
require('https').get('https://$api/', r => { let b = ''; r.on('data', d => b += d); r.on('end', () => console.log(b.trim())); })"
	client_check "node https.get without an agent: through transparent egress" "tls-upstream-ok"
else
	t_na "node through transparent egress" "node does not start in a sandbox on this host"
fi

# Go's net/http with its own resolver (a static binary: it reads
# /etc/resolv.conf and asks the stub itself).
if command -v go >/dev/null 2>&1; then
	mkdir -p gocli && cat >gocli/main.go <<'EOF'
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

func main() {
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile("/etc/moat-test-ca.pem")
	pool.AppendCertsFromPEM(pem)
	t := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}
	if os.Getenv("GO_USE_PROXY") != "" {
		t.Proxy = http.ProxyFromEnvironment
	}
	c := &http.Client{Transport: t}
	for _, u := range os.Args[1:] {
		r, err := c.Get(u)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Println(strings.TrimSpace(string(b)))
	}
}
EOF
	if (cd gocli && CGO_ENABLED=0 GOCACHE="$MOAT_TDIR/gocache" GOPATH="$MOAT_TDIR/gopath" GOFLAGS=-mod=mod \
		go mod init gocli >/dev/null 2>&1; CGO_ENABLED=0 GOCACHE="$MOAT_TDIR/gocache" GOPATH="$MOAT_TDIR/gopath" \
		go build -o ../gocli.bin . 2>"$MOAT_TDIR/go.err"); then
		mrun run "${NET[@]}" --ro "$MOAT_TDIR/gocli.bin:/tmp/gocli" -- /tmp/gocli "http://up.test:$UP/" "https://$api/"
		client_check "go net/http (pure-Go resolver, no proxy): http and https" "upstream-ok
tls-upstream-ok"
		mrun run --net proxy "${NET[@]:2}" --env GO_USE_PROXY=1 --ro "$MOAT_TDIR/gocli.bin:/tmp/gocli" -- /tmp/gocli "http://up.test:$UP/" "https://$api/"
		client_check "go net/http with ProxyFromEnvironment in proxy mode: http and https" "upstream-ok
tls-upstream-ok"
	else
		t_fail "go build of the test client" "$(cat "$MOAT_TDIR/go.err")"
	fi
else
	t_na "go net/http through transparent egress" "go is not installed on this host"
fi

cat >Client.java <<'EOF'
import java.net.*;
import java.net.http.*;
public class Client {
	public static void main(String[] a) throws Exception {
		HttpClient c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
		System.out.println(c.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString()).body().trim());
	}
}
EOF
JAVA_RO=()
for d in /etc/java-*; do [ -d "$d" ] && JAVA_RO+=(--ro "$d"); done
JAVA_OK=$(command -v java >/dev/null 2>&1 && "$MOAT" run --time 300 -- java -version 2>&1 | grep -c -i openjdk)
if [ "${JAVA_OK:-0}" -gt 0 ]; then
	# The JVM compiles the client in-process before it connects: about 2 s
	# of CPU, 3 s of wall time on a 2-core host at load 9, but more than
	# the code profile's 10 s wall clock (with the same 2 s of CPU) when
	# the host is busier. The wall limit is not what this checks: a
	# generous one; the CPU limit stays the profile's.
	mrun run "${NET[@]}" --mem 1G --time 300 "${JAVA_RO[@]}" --ro "$MOAT_TDIR/Client.java:/tmp/Client.java" -- java /tmp/Client.java "http://up.test:$UP/"
	client_check "java HttpClient with NO_PROXY: http through transparent egress" "upstream-ok"
elif command -v java >/dev/null 2>&1; then
	t_na "java HttpClient through transparent egress" "the JVM does not start under this mode's memory limit (rlimit fallback)"
else
	t_na "java HttpClient through transparent egress" "java is not installed on this host"
fi

# The mode from a policy file, and in policy explain.
cat >transparent.yaml <<EOF
version: 1
network:
  mode: transparent
  allow:
    - {host: up.test, ports: [$UP]}
  allow_private: [127.0.0.2/32]
  hosts: {up.test: 127.0.0.2}
EOF
mrun run --policy transparent.yaml -- curl -sS --noproxy '*' "http://up.test:$UP/"
t_eq "network.mode: transparent in a policy" "upstream-ok" "$OUT"
mrun policy explain transparent.yaml
t_match "policy explain names the mode" "transparent: every TCP connection and DNS query is redirected" "$OUT"
t_eq "the internal service was never reached" "" "$(grep -l MOAT-SECRET "$MOAT_TDIR"/*.jsonl 2>/dev/null)"
