#!/bin/bash
# An approval gate inside terminated TLS (docs/approvals.md,
# docs/network.md "TLS termination"): a host named by a rule with methods
# or paths has its TLS terminated by the session's gateway, so a
# network.approve rule sees each request's method and path inside HTTPS.
# A POST that the rule matches is held (the tunnel itself is not), and the
# client sees the upstream's reply once a person approves, or the 403 with
# the reviewer's reason inside the TLS once one denies; a denied request
# never reaches the upstream. Against an HTTPS upstream this script starts
# (in a network namespace it makes, as root).
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
N="at$$"

upstream_certs api.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-atls-$$" 2>/dev/null; then
		NS="moat-atls-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the approvals TLS tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports.json &
UPSTREAM=$!
cleanup() {
	"$MOAT" session rm "$N" >/dev/null 2>&1
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
  allow_private: [127.0.0.2/32]
  hosts: {api.example.test: 127.0.0.2}
  allow:
    - {host: api.example.test, ports: [$P], methods: [GET]}
  approve:
    - {host: api.example.test, ports: [$P], methods: [POST], paths: ["/v1/*"]}
approvals:
  timeout: 120s
audit:
  log: $MOAT_TDIR/audit.jsonl
EOF
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
"${IN[@]}" "$MOAT" session create --name "$N" --policy policy.yaml >/dev/null 2>err
t_eq "create a session whose approve rule names a TLS host" "0 " "$? $(cat err)"

U="https://api.example.test:$P"
pending() { "$MOAT" approvals ls --session "$N" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
wait_pending() { # N: until N wait (bounded: 30 s)
	local c=0
	for _ in $(seq 300); do
		c=$(pending)
		[ "$c" = "$1" ] && break
		sleep 0.1
	done
	echo "$c"
}
newest() { "$MOAT" approvals ls --session "$N" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }
post() { # OUT PATH BODY: curl POST inside, in the background
	("$MOAT" session exec "$N" -- curl -sS -i --max-time 100 -d "$3" "$U$2" >"$1" 2>&1; echo "rc=$?" >>"$1") &
	POST=$!
}
posts() { python3 -c 'import json
print(sum(1 for l in open("up.log") if json.loads(l)["method"] == "POST"))'; }

out=$("$MOAT" session exec "$N" -- curl -sS --max-time 60 "$U/v1/status" 2>&1)
t_match "a GET inside the TLS goes on at once" "tls-upstream-ok GET /v1/status" "$out"
t_eq "nothing waits" 0 "$(pending)"

post p1 /v1/send "to=ceo"
t_eq "a POST inside the TLS is held" 1 "$(wait_pending 1)"
t_eq "the held POST has not reached the upstream" 0 "$(posts)"
ls_out=$("$MOAT" approvals ls --session "$N")
t_match "ls shows the method and URL inside the TLS" "POST https://api.example.test:$P/v1/send" "$ls_out"
"$MOAT" approve "$(newest)" --once --note "looked at it" >/dev/null
wait "$POST"
t_match "approved: the client sees the upstream's reply" "HTTP/1.1 200.*tls-upstream-ok POST /v1/send.*rc=0" \
	"$(tr '\r\n' '  ' <p1)"
t_eq "the upstream got the POST once" 1 "$(posts)"

post p2 /v1/send "to=all"
t_eq "the next POST waits again" 1 "$(wait_pending 1)"
"$MOAT" deny "$(newest)" --reason "no mass mail" >/dev/null
wait "$POST"
t_match "denied: a 403 inside the TLS" "HTTP/1.1 403" "$(cat p2)"
t_match "denied: the reviewer's reason" "moat: denied by a reviewer: no mass mail \\(approval a[0-9a-f]{8}\\)" "$(cat p2)"
t_match "denied: curl itself did not fail" "rc=0" "$(cat p2)"
t_eq "the denied POST never reached the upstream" 1 "$(posts)"

grep -q '"type":"approval.request".*"what":"POST https://api.example.test:'"$P"'/v1/send"' audit.jsonl
t_eq "the audit log has the request with its method and URL" 0 "$?"
grep -q '"type":"approval.decision".*"decision":"deny"' audit.jsonl
t_eq "the audit log has the deny" 0 "$?"
grep -q '"type":"net.request".*"method":"POST".*"decision":"allow".*"approval":"a' audit.jsonl
t_eq "the approved request's net.request names its approval" 0 "$?"
