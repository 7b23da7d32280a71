#!/bin/bash
# moatd's answer to a decision on an approval that was decided (or timed
# out) after moatd found it waiting: moatd lists a keeper's approvals, then
# sends the decision, and between the two `moat approve` may have decided
# it. The keeper then refuses with EALREADY; moatd answers 409 naming the
# approval's state, not 500. A real keeper cannot be held between moatd's
# two calls, so a stand-in keeper (the keeper protocol in a few lines of
# Python) lists the approval and refuses its decision as a keeper does. It
# is the one session moatd sees: moatd runs with a runtime folder of its own
# (as root, as the test user, since root's is the host's).
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
. "$MOAT_SRC/integration/moatd_lib.bash"

RUN="$MOAT_TDIR/xdg"
mkdir -m 0700 "$RUN" "$STATE"
# as_user CMD...: as the user moatd runs as here, with its runtime folder.
if is_root; then
	chown moat-test:moat-test "$RUN" "$STATE"
	as_user() { setpriv --reuid=moat-test --regid=moat-test --clear-groups env XDG_RUNTIME_DIR="$RUN" "$@"; }
else
	as_user() { env XDG_RUNTIME_DIR="$RUN" "$@"; }
fi
KPID=""
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
}
trap cleanup EXIT

SID=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
AID=a0123abcd
# Where a keeper's socket is (BASE/sandboxes/ID/ctl, beside the lock it
# holds while it lives: a session listing reads that lock).
KSOCK="$RUN/sandboxes/$SID/ctl"
SOCK="$RUN/moatd.sock"
cat >fake_keeper.py <<'PY'
# A keeper's side of the protocol (docs/architecture.md): hello, then
# approvals {op: ls} listing one approval, and approvals {op: approve|deny}
# refused as a keeper refuses a decision on an approval decided meanwhile.
import fcntl, json, os, socket, sys
path, sid, aid, log = sys.argv[1:5]
os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
lock = open(os.path.join(os.path.dirname(path), 'lock'), 'w')
fcntl.flock(lock, fcntl.LOCK_EX)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(16)
print('ready', flush=True)
while True:
    c, _ = s.accept()
    try:
        h = json.loads(c.recv(65536))
        c.send(json.dumps({'type': 'hello', 'version': max(h['versions']), 'sandbox': sid, 'pid': os.getpid()}).encode())
        while True:
            d = c.recv(65536)
            if not d:
                break
            m = json.loads(d)
            b = m.get('body') or {}
            with open(log, 'a') as f:
                f.write(json.dumps(b, sort_keys=True) + '\n')
            if m.get('type') != 'approvals':
                a = {'type': 'error', 'tag': m.get('tag', 0), 'errno': 22, 'message': 'not served here'}
            elif b.get('op') == 'ls':
                a = {'type': 'approvals', 'tag': m['tag'], 'body': {'approvals': [
                    {'id': aid, 'session': sid, 'kind': 'exec', 'what': '/opt/gate/git push main'}]}}
            else:
                a = {'type': 'error', 'tag': m['tag'], 'errno': 114, 'message': aid + ': approved already'}
            c.send(json.dumps(a).encode())
    except (OSError, ValueError, KeyError):
        pass
    finally:
        c.close()
PY
: >asked.jsonl
chmod 0666 asked.jsonl
as_user python3 fake_keeper.py "$KSOCK" "$SID" "$AID" "$MOAT_TDIR/asked.jsonl" >keeper.out 2>keeper.err &
KPID=$!
for _ in $(seq 100); do [ -S "$KSOCK" ] && break; sleep 0.1; done
t_check "the stand-in keeper listens" test -S "$KSOCK"
# Its session's record, where moatd's session list reads it.
as_user sh -c 'mkdir -p -m 0700 "$XDG_RUNTIME_DIR/moat" "$XDG_RUNTIME_DIR/moat/sessions/$1" &&
	printf "%s\n" "$2" >"$XDG_RUNTIME_DIR/moat/sessions/$1/session.json"' sh "$SID" \
	"{\"id\":\"$SID\",\"name\":\"\",\"created\":$(date +%s),\"keeper_pid\":$KPID,\"socket\":\"$KSOCK\",\"policy_sha256\":\"\",\"stopped\":false}"

printf 'moat: %s\n' "$MOAT" >moatd.yaml
as_user "$MOATD" --socket "$SOCK" --state-dir "$STATE" --config moatd.yaml 2>>moatd.err &
DPID=$!
for _ in $(seq 100); do
	[ -S "$SOCK" ] && as_user curl -s --unix-socket "$SOCK" http://m/v1/health >/dev/null 2>&1 && break
	sleep 0.1
done
# ucode METHOD URL [BODY]: the status as moatd's own user (admin); body in ./body.
ucode() {
	local m="$1" u="$2"
	shift 2
	as_user curl -sS --max-time 60 -o - -w '\n%{http_code}' -X "$m" --unix-socket "$SOCK" "http://m$u" \
		${1+--data-binary "$1"} >ubody
	tail -n1 ubody
	sed '$d' ubody >body
}
st=$(ucode GET /v1/approvals)
t_eq "moatd lists the stand-in keeper's approval" "200 $AID $SID" \
	"$st $(jq_ '" ".join(a["id"]+" "+a["session"] for a in j["approvals"])' <body)"
st=$(ucode POST "/v1/approvals/$AID" '{"decision":"approve"}')
t_eq "a decision the keeper refuses as decided already: 409 naming its state" "409 $AID: approved already" \
	"$st $(jq_ 'j["error"].replace("keeper: ", "")' <body)"
t_eq "...the decision did reach the keeper, after its list" "ls approve $AID" \
	"$(python3 -c 'import json,sys; b=[json.loads(l) for l in open(sys.argv[1])]; print(b[-2]["op"], b[-1]["op"], b[-1].get("id"))' asked.jsonl)"
t_eq "a denial too" 409 "$(ucode POST "/v1/approvals/$AID" '{"decision":"deny"}')"
t_check "moatd's audit log verifies" "$MOAT" audit verify "$STATE/moatd-audit.jsonl"
moatd_no_sanitizer_report
