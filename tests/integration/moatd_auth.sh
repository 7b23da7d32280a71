#!/bin/bash
# moatd's roles and limits (docs/api.md): bearer tokens on TCP (loopback,
# and TLS), unix peers by uid, the admin/operator/agent/viewer rules, an
# agent confined to its own sessions and to the built-in profiles, quotas
# answered with 429 naming the limit, every changing call in moatd's audit
# log with the caller, max connections (503) and slow clients timed out.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

MOATD="$(dirname "$MOAT")/moatd"
SOCK="$MOAT_TDIR/moatd.sock"
N="a$$"
jq_() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$port"
# tcode TOKEN METHOD URL [BODY]: the status over TCP; the body in ./body.
tcode() {
	local tok="$1" m="$2" u="$3"
	shift 3
	curl -sS --max-time 60 -o body -w '%{http_code}' ${tok:+-H "Authorization: Bearer $tok"} -X "$m" "$BASE$u" \
		${1+--data-binary "$1"}
}
PIDS=()
start() { # SOCKET CONFIG [ARGS...]
	local s="$1" cfg="$2"
	shift 2
	"$MOATD" --socket "$s" --state-dir "$MOAT_TDIR/state-$(basename "$s")" --config "$cfg" "$@" 2>>moatd.err &
	PIDS+=($!)
	for _ in $(seq 100); do
		curl -s --unix-socket "$s" http://m/v1/health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for s in $("$MOAT" session ls --json 2>/dev/null | python3 -c "
import json,sys
for s in json.load(sys.stdin):
    if (s.get('name') or '').startswith('$N'): print(s['id'])"); do
		"$MOAT" session rm --purge "$s" >/dev/null 2>&1
	done
}
trap cleanup EXIT

hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
TA="agent-a-$RANDOM$RANDOM" TB="agent-b-$RANDOM$RANDOM" TV="viewer-$RANDOM$RANDOM" TO="operator-$RANDOM$RANDOM"
cat >tokens <<EOT
# role sha256 name
agent $(hash "$TA") alice
agent $(hash "$TB") bob
viewer $(hash "$TV") dash
operator $(hash "$TO") ops
EOT
cat >moatd.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port
roles:
  viewer: {uids: [$(id -u moat-test 2>/dev/null || echo 4000000000)]}
quotas:
  agent: {sandboxes: 1, runs_per_minute: 5}
EOT
t_check "--check-config reads the token file" "$MOATD" --check-config --config moatd.yaml
start "$SOCK" moatd.yaml
t_eq "moatd serves TCP on loopback" 200 "$(tcode "" GET /v1/health)"

# --- who is who
t_eq "TCP without a token: 401" 401 "$(tcode "" GET /v1/sessions)"
t_eq "TCP with an unknown token: 401" 401 "$(tcode "nope" GET /v1/sessions)"
t_eq "a token differing in its last byte: 401" 401 "$(tcode "${TA%?}x" GET /v1/sessions)"
t_eq "viewer: may list sessions" 200 "$(tcode "$TV" GET /v1/sessions)"
t_eq "viewer: may read metrics" 200 "$(tcode "$TV" GET /metrics)"
t_eq "viewer: may not run" "403 run: the viewer role may not call this" \
	"$(tcode "$TV" POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["error"]' <body)"
t_eq "viewer: may not create a session" 403 "$(tcode "$TV" POST /v1/sessions '{}')"
t_eq "agent: may run" "200 exited" "$(tcode "$TA" POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["status"]' <body)"
t_eq "agent: may not pass a policy of its own" "403 policy" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"policy":{"filesystem":{"read_write":["/"]}}}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "agent: may not open the network" "403 allow_hosts" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"allow_hosts":["example.com"]}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "agent: may not lift its profile's limits" "403 limits.memory" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"limits":{"memory":"unlimited"}}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "agent: may narrow them" "200 timeout" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["sleep","20"],"limits":{"time":"1s"}}') $(jq_ 'j["status"]' <body)"
t_eq "operator: may lift them" 200 \
	"$(tcode "$TO" POST /v1/runs '{"argv":["true"],"limits":{"time":"1h"}}')"
st=$(tcode "$TA" POST /v1/sessions "{\"name\":\"$N-alice\"}")
sid=$(jq_ 'j["id"]' <body)
t_eq "agent: creates a session, owned by its token" "201 token:alice" "$st $(jq_ 'j["owner"]' <body)"
t_eq "agent: execs in its own session" 200 "$(tcode "$TA" POST "/v1/sessions/$sid/exec" '{"argv":["true"]}')"
t_eq "another agent: cannot see it" 404 "$(tcode "$TB" GET "/v1/sessions/$sid")"
t_eq "another agent: cannot exec in it" 404 "$(tcode "$TB" POST "/v1/sessions/$sid/exec" '{"argv":["id"]}')"
t_eq "another agent: cannot read its audit log" 404 "$(tcode "$TB" GET "/v1/sessions/$sid/audit")"
t_eq "another agent: cannot delete it" 404 "$(tcode "$TB" DELETE "/v1/sessions/$sid")"
tcode "$TB" GET /v1/sessions >/dev/null
t_eq "another agent: its list leaves it out" 0 "$(jq_ "len([s for s in j['sessions'] if s['id']=='$sid'])" <body)"
"$MOAT" session create --name "$N-cli" >/dev/null 2>&1
t_eq "an agent: no session made outside moatd" 404 "$(tcode "$TA" GET "/v1/sessions/$N-cli")"
t_eq "operator: sees and execs in any session" "200 200" \
	"$(tcode "$TO" GET "/v1/sessions/$sid") $(tcode "$TO" POST "/v1/sessions/$sid/exec" '{"argv":["true"]}')"
t_eq "viewer: reads a session's audit log" 200 "$(tcode "$TV" GET "/v1/sessions/$sid/audit")"
t_eq "viewer: may not exec" 403 "$(tcode "$TV" POST "/v1/sessions/$sid/exec" '{"argv":["true"]}')"

# --- quotas
t_eq "quota: an agent holding its one sandbox gets 429 naming the limit" "429 sandboxes" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]' <body)"
t_eq "quota: sessions count as sandboxes too" 429 "$(tcode "$TA" POST /v1/sessions '{}')"
for i in 1 2 3 4 5; do st=$(tcode "$TB" POST /v1/runs '{"argv":["true"]}'); done
t_eq "quota: runs within runs_per_minute pass" 200 "$st"
t_eq "quota: past runs_per_minute, 429 naming it" "429 runs_per_minute" \
	"$(tcode "$TB" POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]' <body)"
t_eq "quota: an operator has none" 200 "$(tcode "$TO" POST /v1/runs '{"argv":["true"]}')"
t_eq "agent: deletes its own session" 200 "$(tcode "$TA" DELETE "/v1/sessions/$sid")"

# --- unix peers by uid
if is_root; then
	as_test() { setpriv --reuid=moat-test --regid=moat-test --clear-groups "$@"; }
	st=$(as_test curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://m/v1/sessions)
	t_eq "unix peer: a uid the configuration makes viewer may list" 200 "$st"
	st=$(as_test curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" -d '{"argv":["id"]}' http://m/v1/runs)
	t_eq "unix peer: the viewer uid may not run" 403 "$st"
	st=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
		curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://m/v1/sessions)
	t_eq "unix peer: a uid with no role gets 403" 403 "$st"
else
	t_na "unix peers of other uids" "rootless moatd's socket is its user's alone"
fi
t_eq "unix peer: moatd's own user is admin" 200 \
	"$(curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" -d '{"argv":["true"],"policy":{"version":1}}' http://m/v1/runs)"

# --- every changing call is an audit event with the caller
AUD="$MOAT_TDIR/state-moatd.sock/moatd-audit.jsonl"
t_check "moatd's audit log verifies" "$MOAT" audit verify "$AUD"
t_eq "audit: the session's creation, with the agent's identity" "token:alice agent 0" \
	"$(python3 -c "
import json
for l in open('$AUD'):
    e=json.loads(l)
    if e['type']=='api.call' and e['call']=='session.create' and e['identity']=='token:alice':
        print(e['identity'], e['role'], e['status']); break")"
t_eq "audit: a refused call too, with its status" "token:dash 403" \
	"$(python3 -c "
import json
for l in open('$AUD'):
    e=json.loads(l)
    if e['type']=='api.call' and e['call']=='run' and e['identity']=='token:dash':
        print(e['identity'], e['status']); break")"
t_eq "audit: reads are not logged" 0 \
	"$(grep -c '"call":"session.list"' "$AUD")"

# --- TLS
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
tport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >tls.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$tport
tls: {cert: $MOAT_TDIR/cert.pem, key: $MOAT_TDIR/key.pem}
EOT
start "$MOAT_TDIR/tls.sock" tls.yaml
st=$(curl -sS -o body -w '%{http_code}' --cacert cert.pem -H "Authorization: Bearer $TV" "https://127.0.0.1:$tport/v1/sessions")
t_eq "TLS: a token over https" 200 "$st"
t_check "TLS: plain HTTP on the TLS port gets no answer" \
	sh -c "! curl -s --max-time 5 -o /dev/null http://127.0.0.1:$tport/v1/health"
printf 'listen: 0.0.0.0:%s\n' "$tport" >open.yaml
t_match "TCP beyond loopback without TLS is refused" "beyond loopback only with tls" \
	"$("$MOATD" --socket "$MOAT_TDIR/x.sock" --state-dir "$MOAT_TDIR/x" --config open.yaml 2>&1)"

# --- load: max connections and slow clients
cat >small.yaml <<'EOT'
max_connections: 2
timeout: 2s
EOT
start "$MOAT_TDIR/small.sock" small.yaml
out=$(python3 - "$MOAT_TDIR/small.sock" <<'PY'
import http.client, socket, sys, time
class C(http.client.HTTPConnection):
    def __init__(self, p):
        super().__init__('m', timeout=30); self.p = p
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.settimeout(30); self.sock.connect(self.p)
held = []
codes = []
for i in range(3):
    c = C(sys.argv[1]); c.request('GET', '/v1/health'); r = c.getresponse(); r.read()
    codes.append(r.status); held.append(c)
for c in held: c.close()
time.sleep(0.3)
c = C(sys.argv[1]); c.request('GET', '/v1/health'); r = c.getresponse(); r.read(); codes.append(r.status)
print(*codes)
# A client that sends half a request head and nothing more is let go.
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1]); s.sendall(b'GET /v1/health HTTP/1.1\r\nHo')
t0 = time.monotonic()
try:
    d = s.recv(100)
except OSError:
    d = b''
print('closed' if d == b'' or b'408' in d or b'400' in d else 'answered', 'within', 'bound' if time.monotonic() - t0 < 25 else 'too long')
PY
)
t_eq "connections past max_connections get 503; closed ones free their place" "200 200 503 200" "$(printf '%s\n' "$out" | head -1)"
t_eq "a slow client is timed out" "closed within bound" "$(printf '%s\n' "$out" | sed -n 2p)"
# The timeout is for silent clients, not for silent commands.
SS="$MOAT_TDIR/small.sock"
curl -sS --unix-socket "$SS" -o /dev/null -d "{\"name\":\"$N-slow\"}" http://m/v1/sessions
out=$(curl -sS --max-time 60 --unix-socket "$SS" -d '{"argv":["sh","-c","sleep 4; echo done"]}' "http://m/v1/sessions/$N-slow/exec")
t_eq "an exec silent for longer than the timeout still streams to its end" '{"type":"stdout","data":"done\n"} {"type":"exit","code":0}' \
	"$(printf '%s' "$out" | tr '\n' ' ' | sed 's/ $//')"
out=$(curl -sS --max-time 60 --unix-socket "$SS" -d '{"argv":["sh","-c","sleep 4; echo done"]}' http://m/v1/runs | jq_ 'j["stdout"]')
t_eq "a run longer than the timeout gets its result" done "$out"
curl -sS --unix-socket "$SS" -o /dev/null -X DELETE "http://m/v1/sessions/$N-slow"

for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p"; done
PIDS=()

# moatd under a sanitizer build reports to its stderr: nothing there.
t_nomatch "moatd: no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" "$(cat "$MOAT_TDIR"/*.err 2>/dev/null)"
