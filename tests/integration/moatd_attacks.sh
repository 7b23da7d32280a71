#!/bin/bash
# Attacks on moatd itself (tests/attacks/moatd_client_*.c): clients that try to
# take the daemon's host down or have it act on the host for them. Each is
# run against a moatd this script starts, on its unix socket and on TCP with
# a token, and passes only on BLOCKED with moatd still answering.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

MOATD="$(dirname "$MOAT")/moatd"
SOCK="$MOAT_TDIR/moatd.sock"
STATE="$MOAT_TDIR/state"
N="da$$"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DPID=""
start_moatd() {
	"$MOATD" --socket "$SOCK" --state-dir "$STATE" --config "$MOAT_TDIR/moatd.yaml" 2>>moatd.err &
	DPID=$!
	for _ in $(seq 100); do
		curl -s --unix-socket "$SOCK" http://m/v1/health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for s in $("$MOAT" session ls --json 2>/dev/null | python3 -c "
import json,sys
for s in json.load(sys.stdin):
    if (s.get('name') or '').startswith('$N'): print(s['id'])"); do
		"$MOAT" session rm --purge "$s" >/dev/null 2>&1
	done
}
trap cleanup EXIT

TA="agent-$RANDOM$RANDOM"
printf 'agent %s a\n' "$(printf '%s' "$TA" | sha256sum | cut -d' ' -f1)" >tokens
cat >moatd.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port
output_cap: 1M
EOT
start_moatd
t_eq "moatd starts on its unix socket and TCP" 0 $?

# attack NAME TARGET...: runs the attack program on the host.
attack() {
	local name="$1" what="$2"
	shift 2
	local out r
	out=$(timeout -k 5 300 "$MOAT_ATTACKS/attack_$name" "$@" 2>&1)
	r=$?
	local v
	v=$(printf '%s\n' "$out" | grep -E '^(BLOCKED|ESCAPED|ERROR): ' | tail -1)
	if [ "$r" = 0 ] && [ "${v%%:*}" = BLOCKED ] && kill -0 "$DPID" 2>/dev/null; then
		t_ok "attack $name ($what): ${v#BLOCKED: }"
	else
		t_fail "attack $name ($what): blocked" "exit $r; $(printf '%s' "$out" | tail -5 | tr '\n' ' ')"
	fi
}

attack moatd_client_header_flood "unix socket" "unix:$SOCK"
attack moatd_client_header_flood "TCP" "tcp:$port"

# --- a flood of silent connections (tests/attacks/moatd_client_conn_flood.c),
# against a second moatd with few descriptors, so that the flood runs it
# out of them: moatd must not spin on accept() writing a warning a try, and
# must answer again once the flood ends.
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >moatd2.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port2
EOT
prlimit --nofile=128:128 "$MOATD" --socket "$MOAT_TDIR/m2.sock" --state-dir "$MOAT_TDIR/state2" \
	--config "$MOAT_TDIR/moatd2.yaml" 2>moatd2.log &
D2PID=$!
for _ in $(seq 100); do
	curl -s --unix-socket "$MOAT_TDIR/m2.sock" http://m/v1/health >/dev/null 2>&1 && break
	sleep 0.1
done
for t in "unix:$MOAT_TDIR/m2.sock" "tcp:$port2"; do
	t0=$(date +%s)
	out=$(timeout -k 5 300 "$MOAT_ATTACKS/attack_moatd_client_conn_flood" "$t" 2>&1)
	r=$?
	v=$(printf '%s\n' "$out" | grep -E '^(BLOCKED|ESCAPED|ERROR): ' | tail -1)
	# One line every 10 s at most, however long the flood took (a
	# loaded machine drains the backlog slowly); a warning per failed
	# accept() would be thousands a second.
	said=$(grep -c -i accept moatd2.log)
	most=$((($(date +%s) - t0) / 10 + 2))
	if [ "$r" = 0 ] && [ "${v%%:*}" = BLOCKED ] && [ "$said" -le "$most" ]; then
		t_ok "attack moatd_client_conn_flood (${t%%:*}): ${v#BLOCKED: }; $said line(s) in moatd's log"
	else
		t_fail "attack moatd_client_conn_flood (${t%%:*}): blocked, one line in moatd's log every 10 s at most ($most)" \
			"exit $r: $(printf '%s' "$out" | tr '\n' ' ')" "$said lines about accept in moatd's log: $(head -3 moatd2.log)"
	fi
	# The next flood starts with a log of its own to judge.
	: >moatd2.log
	sleep 1
done
kill "$D2PID" 2>/dev/null && wait "$D2PID" 2>/dev/null

# --- downloads from a session (tests/attacks/moatd_session_download.c): a
# sparse file and a folder's tree, planted for GET .../files to copy onto
# the host. Judged by what the copies did: the session's log counts what
# each wrote on the host, and moatd's job folders must be empty after.
c() { curl -sS --max-time 120 --unix-socket "$SOCK" "$@"; }
jq_() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
st=$(c -o body -w '%{http_code}' -X POST "http://m/v1/sessions" \
	--data-binary "{\"name\":\"$N-dl\",\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_ATTACKS:/attacks\"]}}}")
id=$(jq_ 'j.get("id","")' <body)
t_eq "a session for the download attack" "201" "$st"
c -X POST -d '{"argv":["/attacks/attack_moatd_session_download"]}' "http://m/v1/sessions/$id/exec" >ev
t_match "attack moatd_session_download: planted" 'BLOCKED: planted' "$(cat ev)"
sparse=$(c -o body -w '%{http_code}' "http://m/v1/sessions/$id/files?path=/tmp/sparse")
sparse="$sparse $(jq_ 'j.get("limit","")' <body 2>/dev/null)"
tree=$(c -o body -w '%{http_code}' "http://m/v1/sessions/$id/files?path=/tmp/tree")
left=$(find "$STATE/jobs" -mindepth 1 2>/dev/null | head -5)
wrote=$("$MOAT" session logs "$id" --type session.cp 2>/dev/null | python3 -c '
import json,sys
for l in sys.stdin:
    try: e=json.loads(l)
    except ValueError: continue
    if e.get("direction")=="out" and (e.get("bytes",0)>1<<20 or e.get("files",0)>1):
        print(e.get("path"), e.get("files"), e.get("bytes"))')
if [ "$sparse" = "413 output_cap" ] && [ "$tree" = 400 ] && [ -z "$left" ] && [ -z "$wrote" ]; then
	t_ok "attack moatd_session_download (a sparse file and a folder downloaded onto the host): blocked"
else
	t_fail "attack moatd_session_download (a sparse file and a folder downloaded onto the host): blocked" \
		"sparse: $sparse, tree: $tree" "left in the job folders: $left" "written on the host: $wrote"
fi

# --- another local user reads a run's files (tests/attacks/moatd_client_job_files.c):
# their paths are on the command line of the moat moatd starts. As root
# only: rootless there is no other user to be.
if [ "$(id -u)" = 0 ]; then
	chmod 755 "$MOAT_TDIR"
	c -o runbody -X POST "http://m/v1/runs" \
		--data-binary '{"argv":["sleep","8"],"files":[{"path":"/in/secret","content":"moat-job-secret"}],"stdin":"moat-job-stdin"}' &
	RPID=$!
	out=$(setpriv --reuid=moat-test --regid=moat-test --clear-groups timeout -k 5 120 \
		"$MOAT_ATTACKS/attack_moatd_client_job_files" 2>&1)
	r=$?
	wait "$RPID"
	v=$(printf '%s\n' "$out" | grep -E '^(BLOCKED|ESCAPED|ERROR): ' | tail -1)
	if [ "$r" = 0 ] && [ "${v%%:*}" = BLOCKED ]; then
		t_ok "attack moatd_client_job_files (another user reads a run's files): ${v#BLOCKED: }"
	else
		t_fail "attack moatd_client_job_files (another user reads a run's files): blocked" "exit $r: $out"
	fi
	t_eq "the run beside the attack still works" exited "$(jq_ 'j.get("status")' <runbody)"
fi

t_nomatch "moatd: no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" "$(cat "$MOAT_TDIR"/*.err 2>/dev/null)"
