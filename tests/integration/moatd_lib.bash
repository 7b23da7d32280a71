# What moatd's integration scripts share (sourced after lib.sh, in
# $MOAT_TDIR): where moatd and its socket are, a TCP port and token hashing
# for the bearer-token tests, one way to start it and wait for it, and the
# clean-up of the sessions a script made. Not a test itself (no .sh).

MOATD="$(dirname "$MOAT")/moatd"
SOCK="$MOAT_TDIR/moatd.sock"
STATE="$MOAT_TDIR/state"
DPID=""

# jq_ EXPR: EXPR (Python, over j: the JSON on stdin), printed.
jq_() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
# The first part of a JSON error's message, its field: "limits.memory".
err_field() { jq_ 'j.get("error","").split(":")[0]' <body; }
# hash TOKEN: its SHA-256, as the token file holds it.
hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
# A free TCP port on loopback, for `listen:`.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# c CURL-ARGS...: curl on the unix socket (bounded: ${CURL_MAX:-60} s).
c() { curl -sS --max-time "${CURL_MAX:-60}" --unix-socket "$SOCK" "$@"; }
# code METHOD URL [BODY]: the status on the unix socket; the body in ./body.
code() { c -o body -w '%{http_code}' -X "$1" "http://moatd$2" ${3+--data-binary "$3"}; }
# tcode TOKEN METHOD URL [BODY]: the status over TCP with a bearer token
# (none when TOKEN is empty); the body in ./body.
tcode() {
	local tok="$1" m="$2" u="$3"
	shift 3
	curl -sS --max-time "${CURL_MAX:-120}" -o body -w '%{http_code}' ${tok:+-H "Authorization: Bearer $tok"} \
		-X "$m" "http://127.0.0.1:$port$u" ${1+--data-binary "$1"}
}

# moatd_start [CONFIG]: moatd on $SOCK with $STATE (its stderr appended to
# moatd.err, which the sanitizer check reads), waited for until it answers.
moatd_start() {
	"$MOATD" --socket "$SOCK" --state-dir "$STATE" --config "${1:-$MOAT_TDIR/moatd.yaml}" 2>>moatd.err &
	DPID=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && c http://moatd/v1/health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
# moatd_stop [SIGNAL]: ends the moatd moatd_start started (SIGTERM by default).
moatd_stop() {
	[ -n "$DPID" ] || return 0
	kill "-${1:-TERM}" "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=""
}
# moatd_cleanup PREFIX: stops moatd and removes the sessions whose names
# start with PREFIX (the trap of each script).
moatd_cleanup() {
	moatd_stop
	local s
	for s in $("$MOAT" session ls --json 2>/dev/null | python3 -c "
import json,sys
for s in json.load(sys.stdin):
    if (s.get('name') or '').startswith(sys.argv[1]): print(s['id'])" "$1"); do
		"$MOAT" session rm --purge "$s" >/dev/null 2>&1
	done
}
# moatd_no_sanitizer_report: the last check of each script; moatd under a
# sanitizer build reports to its stderr.
moatd_no_sanitizer_report() {
	t_nomatch "moatd: no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" \
		"$(cat "$MOAT_TDIR"/*.err 2>/dev/null)"
}
