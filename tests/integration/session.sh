#!/bin/bash
# moat session (session.h, docs/sessions.md): create, exec one after another
# and at once with each command's status and output, a /tmp that lasts from
# one command to the next, signals sent on, an exec client killed, ls, stop,
# rm, bad input; a keeper killed shows as dead and rm cleans up; a command
# cannot reach its session's keeper nor another session's.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# Names of this script's own sessions (other scripts may hold sessions of
# the same user at the same time).
N="t$$"
ms() { "$MOAT" session "$@"; }
jget() { python3 -c "import json,sys; v=json.load(sys.stdin)['$1']; print('' if v is None else v)"; }
# Sessions of ours still there at the end go, whatever failed.
cleanup() {
	for n in "$N-a" "$N-b" "$N-k"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done
}
trap cleanup EXIT

out=$(ms create --name "$N-a" --json --ro "$MOAT_ATTACKS" 2>err)
rc=$?
t_eq "create: exit 0" 0 "$rc"
id=$(printf '%s' "$out" | jget id)
kpid=$(printf '%s' "$out" | jget keeper_pid)
sock=$(printf '%s' "$out" | jget socket)
t_match "create --json: a session id" '^[0-9a-f]{24}$' "$id"
t_eq "create --json: the name" "$N-a" "$(printf '%s' "$out" | jget name)"
t_match "create --json: the effective policy's hash" '^[0-9a-f]{64}$' "$(printf '%s' "$out" | jget policy_sha256)"
t_check "create --json: the state folder exists" test -d "$(printf '%s' "$out" | jget state_dir)"
t_check "the keeper outlives create" kill -0 "$kpid"
t_eq "the keeper is not create's child: it is nobody's but the reaper's" 1 "$(ps -o ppid= -p "$kpid" | tr -d ' ')"
t_check "the keeper's socket folder is its user's alone (0700)" test "$(stat -c %a "$(dirname "$sock")")" = 700
t_eq "the keeper's control socket is mode 0600" 600 "$(stat -c %a "$sock")"

# --- one after another
out=$(ms exec "$N-a" -- sh -c 'echo out; echo err >&2; exit 3' 2>e1)
t_eq "exec: the command's exit status" "3 out err" "$? $out $(cat e1)"
out=$(ms exec "$id" -- sh -c 'echo kept > /tmp/f; echo written')
t_eq "exec by id" "0 written" "$? $out"
out=$(ms exec "$N-a" -- cat /tmp/f)
t_eq "a file written in one exec is there for the next (/tmp lasts as long as the session)" "0 kept" "$? $out"
out=$(echo piped | ms exec "$N-a" -- cat)
t_eq "exec: without -i, the command's standard input is /dev/null" "0 " "$? $out"
out=$(echo piped | ms exec -i "$N-a" -- cat)
t_eq "exec -i: standard input that is not a terminal is the command's" "0 piped" "$? $out"
out=$(ms exec "$N-a" --env GREETING=hi --cwd /tmp -- sh -c 'echo $GREETING $PWD')
t_eq "exec --env, --cwd" "0 hi /tmp" "$? $out"
ms exec "$N-a" -- no-such-command 2>e2
t_eq "exec: a command not found is 127" 127 "$?"
ms exec "$N-a" -- sh -c 'kill -KILL $$' 2>/dev/null
t_eq "exec: a command killed by signal N is 128+N" 137 "$?"
ms exec "$N-a" --time 1s -- sleep 60 2>e3
rc=$?
t_eq "exec --time: the command is killed when it passes" "137 1" "$rc $(grep -c 'time 1s passed' e3)"

# --- at once: each one's own status and output
for i in 1 2 3 4 5; do
	ms exec "$N-a" -- sh -c "sleep 0.5; echo n$i; exit $i" >"c$i" 2>&1 &
	eval "p$i=\$!"
done
all=""
for i in 1 2 3 4 5; do
	eval "wait \$p$i"
	all="$all $?:$(cat "c$i")"
done
t_eq "five execs at once, each with its own status and output" " 1:n1 2:n2 3:n3 4:n4 5:n5" "$all"

# --- signals: SIGTERM to the exec client reaches the command (SIGINT is
# ignored by a script's background jobs, so TERM is the one sent here)
"$MOAT" session exec "$N-a" -- sh -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' >sig &
p=$!
for _ in $(seq 200); do grep -q ready sig && break; sleep 0.05; done
kill -TERM "$p"
wait "$p"
t_eq "SIGTERM to exec is sent on to the command" "7 ready got-term" "$? $(tr '\n' ' ' <sig | sed 's/ $//')"

# --- an exec client killed: its command does not run on unattended
secs="98$$"
"$MOAT" session exec "$N-a" -- sleep "$secs" &
p=$!
found=""
for _ in $(seq 200); do
	found=$(ps -eo pid=,args= | grep "^ *[0-9]* [s]leep $secs" | awk '{print $1}')
	[ -n "$found" ] && break
	sleep 0.05
done
t_check "the command of an exec runs" test -n "$found"
kill -KILL "$p"
wait "$p" 2>/dev/null
left="$found"
for _ in $(seq 200); do
	left=$(ps -eo pid=,args= | grep "^ *[0-9]* [s]leep $secs" || true)
	[ -z "$left" ] && break
	sleep 0.05
done
t_eq "exec client killed: the keeper killed its command" "" "$left"

# --- ls
out=$(ms ls --json)
t_eq "ls --json: the session, running" "running" \
	"$(printf '%s' "$out" | python3 -c "import json,sys; print(*[s['state'] for s in json.load(sys.stdin) if s['id']=='$id'])")"
t_match "ls: a line for the session" "$id +$N-a +running" "$(ms ls)"
# ls reads which keepers live from their runtime folders: it says hello to
# none of them (each would wake; a stopped one would hold ls up).
if ! command -v strace >/dev/null; then
	t_skip "ls connects to no keeper" "strace is not installed"
else
	strace -f -qq -e trace=connect -o ls.st "$MOAT" session ls >/dev/null 2>ls.err
	if ! [ -s ls.st ] && grep -q "Operation not permitted" ls.err; then
		t_skip "ls connects to no keeper" "ptrace is not allowed here"
	else
		t_eq "ls connects to no keeper" 0 "$(grep -c '/ctl"' ls.st)"
	fi
fi

# --- bad input: 125 and one line naming it
ms exec "no-such-$N" -- true 2>e4
t_eq "exec of an unknown name: 125, one line naming it" "125 1 1" "$? $(wc -l <e4) $(grep -c "no-such-$N" e4)"
ms stop "no-such-$N" 2>e5
t_eq "stop of an unknown name: 125, one line" "125 1" "$? $(wc -l <e5)"
ms rm "no-such-$N" 2>e6
t_eq "rm of an unknown name: 125, one line" "125 1" "$? $(wc -l <e6)"
ms create --name "$N-a" >/dev/null 2>e7
t_eq "create with a name in use: 125, one line naming it" "125 1 1" "$? $(wc -l <e7) $(grep -c "$N-a" e7)"
ms create --name "../x" >/dev/null 2>e8
t_eq "create with a name that is not one: 125, one line" "125 1" "$? $(wc -l <e8)"
ms create --name "$N-z" -- true >/dev/null 2>e9
t_eq "create with a command: 125, one line" "125 1" "$? $(wc -l <e9)"
t_eq "nothing was made by the refused creates" "" "$(ms ls | grep -E "$N-z|\.\./x")"

# --- attack: a command of one session cannot reach its keeper nor another's
ms create --name "$N-b" >/dev/null
sockb=$(ms ls --json | python3 -c "import json,sys; print(*[s['state_dir'] for s in json.load(sys.stdin) if s['name']=='$N-b'])")
sockb2=$(dirname "$(dirname "$sockb")")/sandboxes/$(basename "$sockb")/ctl
out=$(ms exec "$N-a" --env "MOAT_SESSION_SOCKETS=$sock:$sockb2" -- "$MOAT_ATTACKS/attack_session_socket" 2>&1)
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack session_socket (in a session): blocked"
else
	t_fail "attack session_socket (in a session): blocked" "exit $rc" "$out"
fi

# --- stop: the keeper ends; the session shows as dead, stopped
ms stop "$N-b"
t_eq "stop: exit 0" 0 "$?"
t_match "stop: ls shows it dead, stopped" "$N-b +dead .*stopped" "$(ms ls)"
ms exec "$N-b" -- true 2>e10
t_eq "exec in a stopped session: 125, one line" "125 1" "$? $(wc -l <e10)"
ms stop "$N-b" 2>e11
t_eq "stop of a stopped session: 125, one line" "125 1" "$? $(wc -l <e11)"
ms rm --purge "$N-b"
t_eq "rm of a stopped session" "0 " "$? $(ms ls | grep -- "$N-b")"

ms stop "$N-a"
for _ in $(seq 200); do kill -0 "$kpid" 2>/dev/null || break; sleep 0.05; done
t_check "stop: the keeper has ended" sh -c "! kill -0 $kpid 2>/dev/null"
ms rm --purge "$N-a"
t_eq "rm: the session and its runtime folder are gone" "" \
	"$(ms ls | grep -- "$id"; ls -d "$(dirname "$sock")" 2>/dev/null)"

# --- SIGKILL of the keeper: every process goes, ls says dead, rm cleans
out=$(ms create --name "$N-k" --json)
kid=$(printf '%s' "$out" | jget id)
kk=$(printf '%s' "$out" | jget keeper_pid)
ksock=$(printf '%s' "$out" | jget socket)
secs="99$$"
"$MOAT" session exec "$N-k" -- sleep "$secs" >/dev/null 2>&1 &
pe=$!
found=""
for _ in $(seq 200); do
	found=$(ps -eo pid=,args= | grep "^ *[0-9]* [s]leep $secs" | awk '{print $1}')
	[ -n "$found" ] && break
	sleep 0.05
done
t_check "a command runs in the session to be killed" test -n "$found"
kill -KILL "$kk"
wait "$pe"
t_eq "keeper killed: the exec in flight fails as moat's error (125)" 125 "$?"
left="x"
for _ in $(seq 200); do
	left=$(ps -eo pid=,args= | grep "^ *[0-9]* [s]leep $secs" || true)
	kill -0 "$kk" 2>/dev/null && left="$left keeper"
	[ -z "$left" ] && break
	sleep 0.05
done
t_eq "keeper killed: no process of the session is left" "" "$left"
t_match "keeper killed: ls shows the session dead, with why" "$N-k +dead .*without a stop" "$(ms ls)"
ms exec "$N-k" -- true 2>/dev/null
t_eq "exec in a dead session: 125" 125 "$?"
ms rm --purge "$N-k"
t_eq "rm of a dead session: its record and runtime folder are gone" "0 " \
	"$? $(ms ls | grep -- "$kid"; ls -d "$(dirname "$ksock")" 2>/dev/null)"
# Its cgroup is swept by the next keeper started (as after any killed keeper).
ms create --name "$N-b" >/dev/null && ms rm --purge "$N-b"
t_eq "the dead keeper's cgroup is swept by the next keeper" "" \
	"$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$kk-*" 2>/dev/null)"
t_eq "nothing of ours is left in ls" "" "$(ms ls | grep -- "$N-")"
