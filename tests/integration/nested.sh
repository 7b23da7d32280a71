#!/bin/bash
# Nested runs are delegated (docs/nested.md): inside a sandbox whose policy
# has exec.delegate, `moat run` asks the outer front for a sibling sandbox
# through /run/moat/ctl; the sibling's policy is the intersection of both,
# it sees the outer's files read-only, its exit status comes back, and its
# events land in the outer run's audit log.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# The outer front's folder for the socket lives under TMPDIR: a private one,
# to find it gone afterwards.
export TMPDIR="$MOAT_TDIR/tmp"
mkdir -p "$TMPDIR" "$MOAT_TDIR/data"
echo outer-file >"$MOAT_TDIR/data/f"
is_root && chown 65534:65534 "$MOAT_TDIR/data"
cat >"$MOAT_TDIR/deleg.yaml" <<EOF2
version: 1
exec:
  delegate: true
filesystem:
  read_write: ["$MOAT_TDIR/data:/data"]
limits:
  memory: 300M
EOF2
# The nested run's own wall and memory sit inside the outer's.
IN=(run --policy "$MOAT_TDIR/deleg.yaml" --ro "$MOAT:/opt/moat" --time 60s)

# The attack talks to the front's server straight, with no moat inside, so
# it runs in an instrumented build too.
attack_socket() {
	# The attack: every other use of the socket is refused.
	mrun "${IN[@]}" --ro "$MOAT_ATTACKS/attack_nested_socket:/opt/attack" -- /opt/attack
	if [ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q '^BLOCKED'; then
		t_ok "attack nested_socket (in a delegating sandbox): blocked"
	else
		t_fail "attack nested_socket (in a delegating sandbox): blocked" "exit $RC" "$OUT $ERR"
	fi
}

# A nested run's events reach the outer log while it runs: waits
# (generously: the host may be loaded) for the $3th nested session.start in
# log $1 while the process $2 that holds that run still runs.
live_events() {
	local seen=no
	for _ in $(seq 600); do
		if [ "$(grep -c '"type":"nested.event".*"type":"session.start"' "$1" 2>/dev/null)" -ge "$3" ]; then
			kill -0 "$2" 2>/dev/null && seen=yes
			break
		fi
		sleep 0.1
	done
	echo "$seen"
}

# A session whose policy delegates: its keeper serves the socket, in its
# one event loop (nested.h). Names are this script's own.
S="nest$$"
cleanup() { "$MOAT" session rm "$S-a" >/dev/null 2>&1; "$MOAT" session rm "$S-b" >/dev/null 2>&1; }
trap cleanup EXIT
attack_socket_session() {
	"$MOAT" session create --name "$S-a" --policy "$MOAT_TDIR/deleg.yaml" \
		--ro "$MOAT_ATTACKS/attack_nested_socket:/opt/attack" >/dev/null 2>err
	t_eq "a delegating session starts" 0 "$?"
	OUT=$("$MOAT" session exec "$S-a" -- /opt/attack 2>&1) && RC=0 || RC=$?
	if [ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q '^BLOCKED'; then
		t_ok "attack nested_socket (in a delegating session): blocked"
	else
		t_fail "attack nested_socket (in a delegating session): blocked" "exit $RC" "$OUT"
	fi
	"$MOAT" session stop "$S-a" >/dev/null 2>&1
	"$MOAT" session rm "$S-a" >/dev/null 2>&1
}

if [ -n "${MOAT_SANITIZED:-}" ]; then
	# An instrumented moat cannot run inside a sandbox (policy_nested.sh):
	# only the server is checked here, by the attack.
	attack_socket
	attack_socket_session
	t_eq "the socket's folder is gone after the runs" "" "$(ls -A "$TMPDIR")"
	exit 0
fi

mrun "${IN[@]}" --audit "$MOAT_TDIR/a.jsonl" -- /opt/moat run --mem 50M -- python3 -c 'print(1)'
t_eq "a narrower nested run works" "0 1" "$RC $OUT"
t_eq "and leaves nothing on stderr" "" "$ERR"
mrun audit verify "$MOAT_TDIR/a.jsonl"
t_eq "the outer log verifies with the nested events in it" 0 "$RC"
types=$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    e=json.loads(l); t=e["type"]
    if t=="nested.event": t+=":"+e["event"]["type"]
    print(t)' "$MOAT_TDIR/a.jsonl" | sort -u | tr '\n' ' ')
t_match "the log has the nested run's start" "nested.start " "$types"
t_match "its own session events" "nested.event:session.start .*nested.event:session.stop" "$types"
t_match "and its end" "nested.end " "$types"
t_eq "the nested run's end carries its status" 0 \
	"$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "\"nested.end\"" in l][0]["exit_status"])' "$MOAT_TDIR/a.jsonl")"
t_match "its memory is the one it asked for" '"memory_bytes": *52428800[,}]' "$(grep nested.start "$MOAT_TDIR/a.jsonl")"

mrun "${IN[@]}" -- /opt/moat run --mem 500M -- /bin/true
t_eq "asking for more memory than the parent is refused" 125 "$RC"
t_match "naming the field" "limits.memory" "$ERR"

mrun "${IN[@]}" -- /opt/moat run -- /bin/sh -c 'exit 7'
t_eq "the nested run's exit status comes back" 7 "$RC"

OUT=$(echo piped | "$MOAT" "${IN[@]}" -- /opt/moat run -- /bin/cat 2>&1) && RC=0 || RC=$?
t_eq "stdin, stdout and stderr are the inner moat's" "0 piped" "$RC $OUT"

mrun "${IN[@]}" -- /opt/moat run -- /bin/sh -c 'cat /data/f; echo x >/data/g && echo wrote'
t_eq "the outer's files are visible" outer-file "$(printf '%s\n' "$OUT" | head -1)"
t_nomatch "read-only" wrote "$OUT"
t_eq "nothing was written" no "$([ -e "$MOAT_TDIR/data/g" ] && echo yes || echo no)"

mrun "${IN[@]}" -- /opt/moat run -- /bin/sh -c 'test -e /run/moat/ctl && echo sees-socket; echo done'
t_eq "a sibling has no delegation socket of its own" done "$OUT"

mrun "${IN[@]}" -- /opt/moat run --rw /data -- /bin/true
t_eq "a writable bind in a nested run is refused" 125 "$RC"
t_match "naming the field" "filesystem.read_write" "$ERR"

mrun run --mem 300M --ro "$MOAT:/opt/moat" -- /opt/moat run -- /bin/true
t_eq "without exec.delegate there is no socket" 125 "$RC"
t_match "and the error says what is missing" "exec.delegate" "$ERR"

mrun policy show --profile agent
t_match "the agent profile delegates" "delegate: true" "$OUT"
mrun policy show --profile code
t_nomatch "the code profile does not" "delegate" "$OUT"

attack_socket

"$MOAT" "${IN[@]}" --audit "$MOAT_TDIR/live.jsonl" -- /opt/moat run -- /bin/sleep 60 >/dev/null 2>&1 &
front=$!
t_eq "a running nested run's events are in the outer log before it ends" yes \
	"$(live_events "$MOAT_TDIR/live.jsonl" "$front" 1)"
kill -TERM "$front"
wait "$front" 2>/dev/null

# In a session: moat run inside is a delegated run bounded by the
# session's policy, its events in the session's log.
"$MOAT" session create --name "$S-b" --policy "$MOAT_TDIR/deleg.yaml" --ro "$MOAT:/opt/moat" \
	--audit "$MOAT_TDIR/s.jsonl" >/dev/null 2>err
t_eq "a delegating session starts" "0 " "$? $(cat err)"
OUT=$("$MOAT" session exec "$S-b" -- /opt/moat run --mem 50M -- python3 -c 'print(1)' 2>err) && RC=0 || RC=$?
t_eq "session: a narrower nested run works" "0 1" "$RC $OUT"
"$MOAT" session exec "$S-b" -- /opt/moat run --mem 500M -- /bin/true >/dev/null 2>err && RC=0 || RC=$?
t_eq "session: asking for more memory than the session is refused" 125 "$RC"
t_match "naming the field" "limits.memory" "$(cat err)"
"$MOAT" session exec "$S-b" -- /opt/moat run -- /bin/sh -c 'exit 7' >/dev/null 2>&1 && RC=0 || RC=$?
t_eq "session: the nested run's exit status comes back" 7 "$RC"
"$MOAT" session exec "$S-b" -- /opt/moat run -- /bin/sleep 60 >/dev/null 2>&1 &
client=$!
t_eq "session: a running nested run's events are in the log before it ends" yes "$(live_events "$MOAT_TDIR/s.jsonl" "$client" 3)"
kill -TERM "$client" 2>/dev/null
"$MOAT" session stop "$S-b" >/dev/null 2>&1
"$MOAT" session rm "$S-b" >/dev/null 2>&1
types=$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    e=json.loads(l); t=e["type"]
    if t=="nested.event": t+=":"+e["event"]["type"]
    print(t)' "$MOAT_TDIR/s.jsonl" | sort | uniq -c | awk '{print $2"="$1}' | tr '\n' ' ')
t_match "session: the log has each nested run's start and end" "nested.end=3 .*nested.start=3 " "$types"
t_match "and their own events" "nested.event:session.start=3 " "$types"
mrun audit verify "$MOAT_TDIR/s.jsonl"
t_eq "the session's log verifies with the nested events in it" 0 "$RC"
attack_socket_session

t_eq "the socket's folder is gone after the runs" "" "$(ls -A "$TMPDIR")"

# A front killed with SIGKILL cannot remove its folder: the next moat of
# the same user does (sweep.h).
"$MOAT" "${IN[@]}" -- /opt/moat run -- /bin/sleep 60 >/dev/null 2>&1 &
front=$!
# Wait (generously: the host may be loaded) for the sibling's files.
for _ in $(seq 600); do
	[ -n "$(find "$TMPDIR" -maxdepth 2 -type f 2>/dev/null)" ] && break
	sleep 0.1
done
t_match "a nested run's folder exists while it runs" "moat-nest-$front-" "$(ls -A "$TMPDIR")"
kill -KILL "$front"
wait "$front" 2>/dev/null
mrun run -- /bin/true
t_eq "the folder of a killed front is gone after the next run" "" "$(ls -A "$TMPDIR")"
