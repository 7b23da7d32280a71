#!/bin/bash
# A session's own end (session.h, keeper-lifetime.h): --ttl and --idle are
# timers in its keeper's loop; when the session ends, its keeper says why
# (end.json), ls shows it (ttl, idle, stopped, a limit, or keeper killed),
# and with --audit the log ends with session.end and the reason.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="l$$"
ms() { "$MOAT" session "$@"; }
cleanup() { for n in "$N-t" "$N-i" "$N-s" "$N-w" "$N-c"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT
state() { # NAME -> "state end_reason"
	ms ls --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name'] == '$1': print(s['state'], s['end_reason'])"
}
# Waits (generously: the machine may be loaded) until NAME is dead.
wait_dead() {
	for _ in $(seq 600); do
		case "$(state "$1")" in dead*) return 0 ;; esac
		sleep 0.1
	done
	return 1
}

# --- --ttl: a hard end, whatever runs
# 10 s, not less: on a loaded machine create and the first exec alone
# can take seconds, and the check below must see the session alive.
ms create --name "$N-t" --ttl 10s --audit "$MOAT_TDIR/t.log" >/dev/null 2>err
t_eq "create --ttl: exit 0" "0 " "$? $(cat err)"
secs="96$$"
ms exec "$N-t" --detach -- sleep "$secs" >/dev/null
t_eq "--ttl: the session runs before its time" "running" "$(state "$N-t" | cut -d' ' -f1)"
wait_dead "$N-t"
t_eq "--ttl: the session ends; ls says why" "dead ttl" "$(state "$N-t")"
t_match "--ttl: ls says it in words" "$N-t +dead .*ttl: its time to live \(10s\) passed" "$(ms ls)"
t_eq "--ttl: what ran in it is gone" "" "$(pgrep -f "sleep $secs")"
t_eq "--ttl: the audit log ends with session.end, reason ttl" "session.end ttl" \
	"$(tail -1 t.log | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["type"], e.get("reason"))')"
t_check "--ttl: the audit log verifies" "$MOAT" audit verify "$MOAT_TDIR/t.log"

# --- --idle: not while a command runs; after the last one, that long
ms create --name "$N-i" --idle 1500ms >/dev/null 2>err
t_eq "create --idle: exit 0" "0 " "$? $(cat err)"
out=$(ms exec "$N-i" -- sh -c 'sleep 3; echo done')
t_eq "--idle: a command running longer than the idle time is not cut" "0 done" "$? $out"
wait_dead "$N-i"
t_eq "--idle: with no command for that long, the session ends; ls says why" "dead idle" "$(state "$N-i")"
t_match "--idle: ls says it in words" "$N-i +dead .*idle: no command for 1500ms" "$(ms ls)"

# --- stop, and a limit of the session's
ms create --name "$N-s" >/dev/null && ms stop "$N-s"
t_eq "stop: ls says stopped" "dead stopped" "$(state "$N-s")"
# A session stopped while a busy command runs: the CPU time it reports
# (end.json, session.end) holds that command's, which the command itself
# wrote down as it spun (its /proc/PID/stat, fields 14 and 15, to two files
# in turn: one is whole whenever the stop lands).
ms create --name "$N-c" --audit "$MOAT_TDIR/c.log" --json >c.json
cws=$(json c.json 'j["workspace"]')
ms exec "$N-c" --detach -- sh -c 'while :; do for f in a b; do read -r st </proc/$$/stat; echo "$st" >/workspace/$f; done; done' >/dev/null
for _ in $(seq 100); do [ -s "$cws/a" ] && [ -s "$cws/b" ] && break; sleep 0.1; done
sleep 1
ms stop "$N-c"
spun=$(cat "$cws/a" "$cws/b" | awk -v hz="$(getconf CLK_TCK)" 'NF > 15 { ms = ($14 + $15) * 1000 / hz; if (ms > max) max = ms } END { print int(max) }')
end_cpu=$(json "$(json c.json 'j["state_dir"]')/end.json" 'j.get("cpu_ms")')
log_cpu=$(tail -1 c.log | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["type"], e.get("cpu_ms"))')
if [ "$spun" -gt 0 ] && [ "$end_cpu" != None ] && [ "$end_cpu" -ge "$spun" ]; then
	t_ok "stop during a busy command: end.json's cpu_ms ($end_cpu) holds the command's ($spun)"
else
	t_fail "stop during a busy command: end.json's cpu_ms holds the command's" "cpu_ms $end_cpu, the command $spun"
fi
t_eq "stop during a busy command: session.end has the same cpu_ms" "session.end $end_cpu" "$log_cpu"

ms create --name "$N-w" --time 2s --json >w.json
wait_dead "$N-w"
# A limit SIGKILLs the init: what it had not reaped, the kernel reaps
# uncounted, so without a cgroup to count the CPU time none is given
# (whether this host gives this user a cgroup, a run says).
"$MOAT" run --result cg.json -- true
if [ "$(json cg.json 'j["isolation"]["cgroup"]')" = none ]; then want=None; else want=True; fi
t_eq "limits.wall passed: end.json's cpu_ms is the cgroup's, or null without one" "$want" \
	"$(json "$(json w.json 'j["state_dir"]')/end.json" 'j["cpu_ms"] if j["cpu_ms"] is None else isinstance(j["cpu_ms"], int)')"
t_eq "limits.wall passed: ls says a limit ended it" "dead limit" "$(state "$N-w")"
t_match "limits.wall passed: ls names it" "$N-w +dead .*limit: wall" "$(ms ls)"

# --- bad input: 125, one line, nothing made
for bad in "--ttl 0" "--ttl soon" "--idle" "--idle 400d"; do
	# shellcheck disable=SC2086
	ms create --name "$N-x" $bad >/dev/null 2>e1
	t_eq "create $bad: 125, one line" "125 1" "$? $(wc -l <e1)"
done
t_eq "nothing was made by the refused creates" "" "$(ms ls | grep "$N-x")"
