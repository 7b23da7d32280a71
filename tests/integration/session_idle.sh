#!/bin/bash
# An idle session's keeper uses no CPU (issue: "no polling loops"): with a
# gateway and approval gates (whose clock is a one-shot timer armed at the
# next deadline) and limits (whose counters are not polled while the
# sandbox is at rest), its threads neither run nor wake. Measured three
# ways: utime+stime and context switches over quiet windows, and strace:
# the event loop only ever blocks with no timeout and no timer expires.
# Other sessions' clients (moat approvals ls asks every keeper of the user)
# would wake the keeper: this script's session lives where no other
# script's ls finds it (lib.sh: private_sessions; as root a /run/moat of
# its own in a mount namespace of its own). A window is still tried again
# a few times (a stray signal, the script's own exec settling); a keeper
# that polls has no quiet window at all.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
private_sessions

N="idle$$"
cleanup() { "$MOAT" session rm --purge "$N" >/dev/null 2>&1; }
trap cleanup EXIT

cat >p.yaml <<EOF
version: 1
network:
  mode: proxy
  allow_private: [127.0.0.1/32]
  hosts:
    idle.test: 127.0.0.1
  allow:
    - {host: idle.test, ports: [9], methods: [GET]}
  approve:
    - {host: idle.test, ports: [9], methods: [POST]}
approvals:
  timeout: 120s
limits:
  memory: 256M
  pids: 64
EOF
out=$("$MOAT" session create --policy p.yaml --name "$N" --json 2>err)
t_eq "create a session with a gateway, approval gates and limits" 0 "$?"
kp=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keeper_pid"])')
[ -n "$kp" ] || { t_fail "the keeper's pid" "$(cat err)"; exit 0; }
# A command (and one that leaves a child behind a moment) first: the poll
# that ran for them must stop once the sandbox is at rest again.
"$MOAT" session exec "$N" -- sh -c 'sleep 0.3 & echo started' >/dev/null
t_eq "an exec ran" 0 "$?"
sleep 1

# cpu: utime+stime of the whole process (all threads), in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$kp/stat"; }
# Voluntary and involuntary context switches of every thread.
ctxt() { cat /proc/"$kp"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n}'; }

quiet=""
for _ in $(seq 5); do
	c0=$(cpu) x0=$(ctxt)
	sleep 2
	c1=$(cpu) x1=$(ctxt)
	if [ "$c0" = "$c1" ] && [ "$x0" = "$x1" ]; then
		quiet="$c0 $x0"
		break
	fi
done
t_check "an idle keeper: a 2 s window with no CPU tick and no context switch (got: ${quiet:-none in 5})" \
	test -n "$quiet"

if ! command -v strace >/dev/null; then
	t_skip "strace: the idle keeper arms no timer" "strace is not installed"
else
	timeout -s INT 3 strace -f -qq -p "$kp" -o st.txt 2>st.err
	if ! [ -s st.txt ] && grep -q "Operation not permitted" st.err; then
		t_skip "strace: the idle keeper arms no timer" "ptrace is not allowed here"
	else
		# Client connections (other sessions' ls) are fine; a timer is not:
		# an epoll_wait with a timeout, one that timed out, or a timerfd
		# read that found an expiry.
		timed=$(grep -cE 'epoll_wait\([0-9]+, .*, [0-9]+\) = 0|epoll_wait\([0-9]+, [^)]*, [0-9]+, [0-9]+\)' st.txt)
		expiries=$(grep -cE '^[0-9]+ +read\([0-9]+, "\\1\\0\\0\\0\\0\\0\\0\\0", 8\) += 8' st.txt)
		t_eq "strace -f over 3 s: every epoll_wait blocks without a timeout, no timer expires" "0 0" \
			"$timed $expiries"
	fi
fi

# The approvals' clock still runs when something is due: a held request
# (the gateway's thread asks) arms it; approvals.sh tests the timeouts.
"$MOAT" session stop "$N" >/dev/null 2>&1
t_check "the keeper ends with stop" sh -c "for i in \$(seq 100); do kill -0 $kp 2>/dev/null || exit 0; sleep 0.1; done; exit 1"
