#!/bin/bash
# TLS termination at the gateway: for a host with method or path rules (or a
# secret), the gateway answers the sandbox's TLS with a leaf from the
# sandbox's own authority, decides each request inside by method and path,
# and talks TLS to the upstream, verified against the host's trust store
# (here with the test authority the test-only MOAT_TEST_UPSTREAM_CA adds) and
# the real name. Other hosts stay plain tunnels. With curl, Python's urllib,
# node's https module and git, against an HTTPS upstream this script starts
# (in a network namespace it makes, as root) that logs what it receives.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# The test authority and the upstream's certificate, made here.
upstream_certs api.example.test plain.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-tls-$$" 2>/dev/null; then
		NS="moat-tls-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the TLS tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports.json &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
P=$(json ports.json 'j["port"]')
touch up.log

cat >policy.yaml <<EOF
version: 1
network:
  deny:
    - {host: api.example.test, ports: [$P], paths: ["/ok/admin/*"]}
  allow:
    - {host: api.example.test, ports: [$P], methods: [GET, HEAD], paths: ["/ok/*"]}
    - {host: plain.example.test, ports: [$P]}
  allow_private: [127.0.0.2/32]
  hosts: {api.example.test: 127.0.0.2, plain.example.test: 127.0.0.2}
EOF
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
RUN=(run --policy policy.yaml --net-log "$MOAT_TDIR/net.jsonl" --ro "$MOAT_TDIR/ca.pem:/etc/upstream-ca.pem" --time 60s)
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}
seen() { grep -c "\"path\": \"$1\"" up.log; }
U="https://api.example.test:$P"

# curl: an allowed request goes through, terminated by the sandbox's
# authority; the upstream gets it.
mrun "${RUN[@]}" -- curl -sS -v "$U/ok/curl"
t_eq "curl: allowed GET over terminated TLS" "tls-upstream-ok GET /ok/curl" "$OUT"
t_match "curl: the certificate is the sandbox's authority's" "issuer: O=moat; CN=moat sandbox CA" "$ERR"
t_match "curl: ALPN http/1.1" "ALPN.*http/1.1" "$ERR"
t_eq "curl: the upstream got the request once" 1 "$(seen /ok/curl)"

# Transparent egress: a client that ignores the proxy variables reaches a
# terminated host through the redirect; the gateway says nothing before the
# ClientHello and decides each request inside the TLS as for a CONNECT.
if "$MOAT" doctor 2>/dev/null | grep -Eq "^ *ok +transparent egress" || [ "${CI:-}" = true ]; then
	mrun "${RUN[@]}" --net transparent -- curl -sS --noproxy '*' "$U/ok/transparent"
	t_eq "transparent: allowed GET over terminated TLS" "tls-upstream-ok GET /ok/transparent" "$OUT"
	mrun "${RUN[@]}" --net transparent -- curl -sS --noproxy '*' -w ' %{http_code}' "$U/elsewhere-transparent"
	t_match "transparent: path outside the rule, the reason inside the TLS" "outside the paths network rule" "$OUT"
	t_eq "transparent: path outside the rule, 403" 403 "${OUT##* }"
	t_eq "transparent: the refused path never reached the upstream" 0 "$(seen /elsewhere-transparent)"
else
	t_skip "transparent egress with TLS termination" "moat doctor: transparent egress unavailable"
fi

# Method and path rules now apply to HTTPS.
mrun "${RUN[@]}" -- curl -sS -w '%{http_code}' -o /dev/null "$U/elsewhere"
t_eq "path outside the rule: 403" 403 "$OUT"
mrun "${RUN[@]}" -- curl -sS "$U/elsewhere"
t_match "path outside the rule: the reason" "outside the paths network rule" "$OUT"
mrun "${RUN[@]}" -- curl -sS -X POST -d x=1 "$U/ok/post"
t_match "POST where only GET and HEAD are allowed: refused with the reason" "POST api.example.test is not allowed" "$OUT"
mrun "${RUN[@]}" -- curl -sS -w '%{http_code}' -o /dev/null "$U/ok/admin/x"
t_eq "deny rule for a path inside the allowed ones: 403" 403 "$OUT"
mrun "${RUN[@]}" -- curl -sS -w '%{http_code}' -o /dev/null -H 'X-HTTP-Method-Override: DELETE' "$U/ok/override"
t_eq "a method override outside the rule: 403" 403 "$OUT"
t_eq "refused requests never reached the upstream" "0 0 0 0" \
	"$(seen /elsewhere) $(seen /ok/post) $(seen /ok/admin/x) $(seen /ok/override)"
t_match "the net log has the method and path of terminated requests" '"method":"POST".*"path":"/ok/post"' \
	"$(grep /ok/post net.jsonl)"

# A client that asks for h2 falls back to HTTP/1.1 cleanly.
mrun "${RUN[@]}" -- curl -sS --http2 "$U/ok/h2"
t_eq "curl --http2: falls back to HTTP/1.1" "tls-upstream-ok GET /ok/h2" "$OUT"

# Python's urllib, node's https module (through CONNECT: node does not read
# HTTPS_PROXY), git.
mrun "${RUN[@]}" -- python3 -c "import urllib.request; print(urllib.request.urlopen('$U/ok/python').read().decode().strip())"
t_eq "python urllib: allowed GET" "tls-upstream-ok GET /ok/python" "$OUT"
mrun "${RUN[@]}" -- python3 -c "
import urllib.request, urllib.error
try:
    urllib.request.urlopen('$U/denied')
except urllib.error.HTTPError as e:
    print(e.code)"
t_eq "python urllib: refused path, 403" 403 "$OUT"
NODE_GET='
const http = require("http"), https = require("https"), tls = require("tls");
const [host, port, path] = process.argv.slice(1);
http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: host + ":" + port}).on("connect", (res, socket) => {
  https.get({host, port, path, socket, agent: false}, (r) => {
    let b = ""; r.on("data", (d) => b += d); r.on("end", () => console.log(r.statusCode + " " + b.trim()));
  }).on("error", (e) => console.log("error " + e.code));
}).end();'
if "${IN[@]}" "$MOAT" run --policy policy.yaml -- /bin/sh -c 'command -v node' >/dev/null 2>&1; then
	mrun "${RUN[@]}" -- node -e "$NODE_GET" api.example.test "$P" /ok/node
	t_eq "node https: allowed GET" "200 tls-upstream-ok GET /ok/node" "$OUT"
	mrun "${RUN[@]}" -- node -e "$NODE_GET" api.example.test "$P" /denied-node
	t_match "node https: refused path, 403" "^403 moat: path /denied-node" "$OUT"
else
	t_skip "node https" "node is not installed"
fi
mrun "${RUN[@]}" -- git ls-remote "$U/ok/repo.git"
t_eq "git: the smart HTTP request reached the upstream" 1 "$(seen '/ok/repo.git/info/refs?service=git-upload-pack')"
t_nomatch "git: no TLS or certificate error" "SSL|certificate" "$ERR"

# Inside, the five variables point at the bundle: the host's authorities
# and the sandbox's, never a key.
mrun "${RUN[@]}" -- /bin/sh -c 'for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO; do eval echo \$$v; done; grep -c "BEGIN CERTIFICATE" /etc/moat/ca-certificates.crt; grep -c PRIVATE /etc/moat/ca-certificates.crt'
t_eq "the five variables name the bundle" "5" "$(printf '%s\n' "$OUT" | grep -c '^/etc/moat/ca-certificates.crt$')"
t_match "the bundle holds the host's authorities and the sandbox's" "^[2-9]|^[1-9][0-9]" "$(printf '%s\n' "$OUT" | sed -n 6p)"
t_eq "the bundle holds no key" 0 "$(printf '%s\n' "$OUT" | sed -n 7p)"
mrun "${RUN[@]}" -- /bin/sh -c 'echo x >> /etc/moat/ca-certificates.crt'
t_eq "the bundle is read-only inside" 1 "$([ "$RC" -ne 0 ] && echo 1)"

# A host without method or path rules (or secrets) stays a plain tunnel:
# the client sees the upstream's own certificate.
mrun "${RUN[@]}" -- curl -sS -v --cacert /etc/upstream-ca.pem "https://plain.example.test:$P/plain"
t_eq "plain tunnel: through" "tls-upstream-ok GET /plain" "$OUT"
t_match "plain tunnel: the upstream's own certificate" "issuer: CN=moat test upstream CA" "$ERR"

# A client that pins the upstream's authority gets a clean failure from a
# terminated host, not a bypass: nothing reaches the upstream.
mrun "${RUN[@]}" -- curl -sS --cacert /etc/upstream-ca.pem "$U/ok/pinned"
t_eq "pinning client: curl's certificate error (60)" 60 "$RC"
t_eq "pinning client: nothing reached the upstream" 0 "$(seen /ok/pinned)"

# The upstream is verified against the host's trust store with the real
# name: without the test authority the upstream is refused with a 502 and
# the reason, never sent the request or reached without TLS.
unset MOAT_TEST_UPSTREAM_CA
mrun "${RUN[@]}" -- curl -sS -i "$U/ok/unverified"
t_match "unverifiable upstream: 502" "^HTTP/1.1 502" "$OUT"
t_match "unverifiable upstream: the reason" "failed TLS verification: unable to get local issuer certificate" "$OUT"
t_eq "unverifiable upstream: it got no request" 0 "$(seen /ok/unverified)"
