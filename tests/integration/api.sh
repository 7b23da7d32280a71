#!/bin/bash
# libmoat's sandbox API driven directly, as a program embedding it would,
# not through the CLI (tests/api/api_run.c): sandboxes one after another in
# one process with each one's status, output and accounting, the stdin
# default (/dev/null, never the caller's fd 0 unless asked: fd 0 is a pipe
# holding bytes here), and a setup error's errno.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

API="$(dirname "$MOAT")/moat-api-run"
if [ ! -x "$API" ]; then
	t_fail "the API driver is staged" "missing: $API"
	exit 0
fi
out=$(echo piped | "$API" 2>&1)
rc=$?
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*) n=$((n + 1)); t_ok "${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); t_fail "${line#not ok * - }" "$(printf '%s\n' "$out" | grep '^#' | tr '\n' ' ')" ;;
	esac
done <<<"$out"
t_eq "the driver ran every check and exited 0" "10 0" "$n $rc"

# The creating process killed with SIGKILL mid-run: every process of its
# sandbox dies with it (the init's parent-death signal; the pid namespace
# goes with the init), and the next sandbox created removes the cgroup it
# left (sweep.c).
# A number of seconds no other test sleeps: how its process is found.
secs="98$$"
"$API" hold "$secs" >hold.out 2>&1 </dev/null &
hpid=$!
for _ in $(seq 200); do grep -q started hold.out 2>/dev/null && break; sleep 0.05; done
t_eq "hold: the sandbox started" started "$(cat hold.out)"
t_match "hold: its command runs" "sleep $secs" "$(ps -eo args= | grep "[s]leep $secs")"
cg=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$hpid-*" 2>/dev/null)
if is_root; then
	t_match "hold: as root the sandbox has a cgroup" "moat-$hpid-" "$cg"
fi
kill -KILL "$hpid"
wait "$hpid" 2>/dev/null
left=""
for _ in $(seq 100); do
	left=$(ps -eo pid=,args= | grep "[s]leep $secs" || true)
	[ -z "$left" ] && break
	sleep 0.05
done
t_eq "creator killed: no process of its sandbox is left" "" "$left"
echo piped | "$API" >/dev/null 2>&1
t_eq "creator killed: the next sandbox removed the cgroup it left" "" \
	"$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$hpid-*" 2>/dev/null)"
