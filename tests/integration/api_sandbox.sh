#!/bin/bash
# libmoat's sandbox object driven directly (tests/api/api_sandbox.c): one
# live sandbox, commands one after another and at once with their status,
# output and accounting, a signal to one, the policy's confinement, the
# caller's signals untouched, and nothing left after stop and destroy.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

API="$(dirname "$MOAT")/moat-api-sandbox"
if [ ! -x "$API" ]; then
	t_fail "the sandbox object driver is staged" "missing: $API"
	exit 0
fi
out=$("$API" </dev/null 2>&1)
rc=$?
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*) n=$((n + 1)); t_ok "${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); t_fail "${line#not ok * - }" "$(printf '%s\n' "$out" | grep '^#' | tr '\n' ' ')" ;;
	esac
done <<<"$out"
plan=$(printf '%s\n' "$out" | sed -n 's/^1\.\.//p')
t_eq "the driver ran every check it planned and exited 0" "$plan 0" "$n $rc"

# The process that holds a live sandbox killed with SIGKILL: every command
# of it dies too (the init's parent-death signal; the pid namespace goes
# with the init), and the next sandbox made removes the cgroup it left.
secs="97$$"
"$API" hold "$secs" >hold.out 2>&1 </dev/null &
hpid=$!
for _ in $(seq 200); do grep -q started hold.out 2>/dev/null && break; sleep 0.05; done
t_eq "hold: the sandbox started its commands" started "$(cat hold.out)"
t_eq "hold: both commands run" 2 "$(ps -eo args= | grep -c "[s]leep $secs")"
if is_root; then
	t_match "hold: as root the sandbox has a cgroup" "moat-$hpid-" \
		"$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$hpid-*" 2>/dev/null)"
fi
kill -KILL "$hpid"
wait "$hpid" 2>/dev/null
left=""
for _ in $(seq 100); do
	left=$(ps -eo pid=,args= | grep "[s]leep $secs" || true)
	[ -z "$left" ] && break
	sleep 0.05
done
t_eq "holder killed: no process of its sandbox is left" "" "$left"
"$API" >/dev/null 2>&1 </dev/null
t_eq "holder killed: the next sandbox removed the cgroup it left" "" \
	"$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$hpid-*" 2>/dev/null)"
