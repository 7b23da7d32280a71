#!/bin/bash
# The exec gate (exec.approve, docs/approvals.md): in a session whose
# policy holds `git push` (a stand-in program that records its arguments),
# `git status` runs at once and `git push` waits for a person. Approve once
# lets exactly one through; deny answers EPERM with a line on the session's
# log; an argv rewritten while held is refused at approval; a timeout too; a lease lets later pushes through; a host scope is
# refused; a push held while its session stops is answered; moat run
# refuses the rule. Attacks: a racing thread, a MAP_SHARED memfd, a
# CLONE_VM sibling and a peer writing /proc/PID/mem rewrite argv between
# the gate's check and the kernel's read, and a link in /tmp is swapped
# between the gate's walk of the path and the kernel's; none may get a push
# run.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="ag$$"
ms() { "$MOAT" session "$@"; }
cleanup() { for n in "$N-a" "$N-t" "$N-s" "$N-x" "$N-m" "$N-w"; do "$MOAT" session rm "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT

mkdir -p bin
printf '#!/bin/sh\necho "$*" >>/tmp/gate.log\necho "ran: $*"\n' >bin/git
chmod 755 bin bin/git
chmod 755 "$MOAT_TDIR"
policy() { # FILE TIMEOUT [MORE RULES]
	cat >"$1" <<EOF
version: 1
filesystem:
  read_only: ["$MOAT_TDIR/bin:/opt/gate", "$MOAT_ATTACKS"]
exec:
  approve:
    - {path: /opt/gate/git, args: ["push", "*"]}$3
approvals:
  timeout: $2
audit:
  log: $MOAT_TDIR/$1.audit
EOF
}
policy a.yaml 120s
policy t.yaml 2s
policy s.yaml 120s
policy x.yaml 3s
policy m.yaml 1s '
    - {path: /opt/gate/gitelf, args: ["push", "*"]}
    - {path: /opt/gate/gitinterp, args: ["push", "*"]}'
# A program standing in for git (a script's interpreter would open it by
# its path again): the link swap attack, run as it, records its arguments.
cp "$MOAT_ATTACKS/attack_exec_gate_linkswap" bin/gitelf
# A static one: the PT_INTERP attack has the kernel load it as an ELF's
# loader, which must need no loader itself.
cp "$MOAT_ATTACKS/attack_exec_gate_interp" bin/gitinterp

t_check "policy check: exec.approve is taken" "$MOAT" policy check a.yaml
out=$("$MOAT" run --policy a.yaml -- /bin/true 2>&1)
t_eq "moat run: exec.approve fails closed (no one to ask)" "125" "$?"
t_match "moat run: saying why" "this run has no one to ask" "$out"

pending() { "$MOAT" approvals ls --session "$1" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
wait_pending() { # N SESSION: until N wait (bounded: 30 s)
	local c=0
	for _ in $(seq 300); do
		c=$(pending "$2")
		[ "$c" = "$1" ] && break
		sleep 0.1
	done
	echo "$c"
}
newest() { "$MOAT" approvals ls --session "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }
gitbg() { # OUT SESSION ARGS...: git ARGS inside, in the background
	local o=$1 s=$2
	shift 2
	(ms exec "$s" -- /bin/sh -c '/opt/gate/git "$@"; echo "rc=$?"' sh "$@" >"$o" 2>&1) &
}
# t_has NAME REGEX FILE
t_has() { if grep -Eq -- "$2" "$3"; then t_ok "$1"; else t_fail "$1" "no line of $3 matches: $2"; fi; }

ms create --policy a.yaml --name "$N-a" >/dev/null
t_eq "create a session with exec.approve" 0 "$?"
out=$(ms exec "$N-a" -- /opt/gate/git status)
t_eq "git status is never held" "0 ran: status" "$? $out"
t_eq "nothing waits" 0 "$(pending "$N-a")"

gitbg p1 "$N-a" push origin main
t_eq "git push is held" 1 "$(wait_pending 1 "$N-a")"
t_check "the held push has not run" test ! -s p1
id=$(newest "$N-a")
t_match "ls shows the program and its argv" "/opt/gate/git push origin main" "$("$MOAT" approvals ls --session "$N-a")"
out=$("$MOAT" approve "$id" --for 10m --scope host 2>&1)
t_eq "a host scope for an exec is refused" 125 "$?"
t_match "saying why" "host" "$out"
"$MOAT" approve "$id" --once >/dev/null
wait
t_eq "approve once: the push runs" "ran: push origin main rc=0" "$(tr '\n' ' ' <p1 | sed 's/ $//')"

gitbg p2 "$N-a" push origin main
t_eq "the same push waits again" 1 "$(wait_pending 1 "$N-a")"
"$MOAT" deny "$(newest "$N-a")" --reason "not today" >/dev/null
wait
t_match "deny: EPERM to the caller" "Operation not permitted" "$(cat p2)"
t_match "deny: the program did not run" "rc=126" "$(cat p2)"
t_has "deny: a line on the session's log, with the reason" '"type":"exec.denied".*"reason":"denied by a reviewer: not today"' a.yaml.audit
t_has "the audit log has the request" '"type":"approval.request"' a.yaml.audit

gitbg p3 "$N-a" push other
wait_pending 1 "$N-a" >/dev/null
"$MOAT" approve "$(newest "$N-a")" --for 10m --scope path >/dev/null
wait
t_match "a path lease: the held push runs" "ran: push other" "$(cat p3)"
out=$(ms exec "$N-a" -- /opt/gate/git push elsewhere)
t_eq "the lease lets a later push through, unheld" "0 ran: push elsewhere" "$? $out"
t_has "the lease is granted in the audit log" '"type":"lease.grant"' a.yaml.audit
t_has "the push the lease let through names it" '"type":"exec.approved".*"push","elsewhere".*"lease":"l' a.yaml.audit
t_has "the push approved once names its approval" '"type":"exec.approved".*"push","origin","main".*"approval":"a' a.yaml.audit
lease=$("$MOAT" approvals leases --session "$N-a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["lease"])')
"$MOAT" approvals revoke "$lease" >/dev/null
gitbg p4 "$N-a" push again
t_eq "revoked: the push waits again" 1 "$(wait_pending 1 "$N-a")"
"$MOAT" deny "$(newest "$N-a")" >/dev/null
wait

# --- argv rewritten while held (from the host: a stand-in for any process
# allowed to write the caller's memory): approve finds it changed, refuses
if [ "$(uname -m)" = x86_64 ]; then
	gitbg p6 "$N-a" push aaaa
	wait_pending 1 "$N-a" >/dev/null
	held=$(newest "$N-a")
	python3 "$MOAT_SRC/integration/rewrite_held.py" aaaa bbbb >/dev/null
	t_eq "the held argv was rewritten (test set-up)" 0 "$?"
	"$MOAT" approve "$held" --once >/dev/null
	wait
	t_match "approved, but changed while held: EPERM" "Operation not permitted" "$(cat p6)"
	t_nomatch "the rewritten push never ran" "ran: push" "$(cat p6)"
	t_has "the log says it changed" '"type":"exec.denied".*changed while it was held' a.yaml.audit
else
	t_na "argv rewritten while held" "the set-up reads x86_64 syscall numbers"
fi

# --- timeout
ms create --policy t.yaml --name "$N-t" >/dev/null
out=$(ms exec "$N-t" -- /bin/sh -c '/opt/gate/git push late; echo "rc=$?"' 2>&1)
t_match "timeout: EPERM" "Operation not permitted" "$out"
t_has "timeout: the log says so" '"type":"exec.denied".*no one decided in time' t.yaml.audit

# --- a push held while the session stops is answered; nothing hangs
ms create --policy s.yaml --name "$N-s" >/dev/null
gitbg p5 "$N-s" push stopped
wait_pending 1 "$N-s" >/dev/null
t0=$(date +%s)
ms stop "$N-s" >/dev/null 2>&1
wait
t_check "session stop answers the held exec within 30 s" test $(($(date +%s) - t0)) -lt 30
t_nomatch "the stopped session's push never ran" "ran: push" "$(cat p5)"

# --- attacks: argv rewritten between the gate's check and the kernel's read
ms create --policy x.yaml --name "$N-x" >/dev/null
for a in exec_gate_thread exec_gate_memfd exec_gate_clonevm exec_gate_shebang; do
	out=$(timeout -k 5 120 "$MOAT" session exec "$N-x" --env MOAT_GATE_PROGRAM=/opt/gate/git \
		--env MOAT_GATE_LOG=/tmp/gate.log -- "$MOAT_ATTACKS/attack_$a" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
		t_ok "attack $a (in a session): blocked"
	else
		t_fail "attack $a (in a session): blocked" "exit $rc" "$out"
	fi
done
t_nomatch "no push ran in the attacks' session" "push" "$(ms exec "$N-x" -- /bin/sh -c 'cat /tmp/gate.log 2>/dev/null')"

# --- attack: another process writes the caller's argv through
# /proc/PID/mem after the gate's check. Landlock already refuses writes
# under /proc; the layer that holds without it (a read-only /proc) is
# tried in a session made as on a kernel without Landlock
# (tests/programs/nolandlock.c). A try the gate sees as a push is held
# until the timeout, so this session's is short.
procmem() { # SESSION NAME
	local out rc
	out=$(timeout -k 5 300 "$MOAT" session exec "$1" --env MOAT_GATE_PROGRAM=/opt/gate/git \
		--env MOAT_GATE_LOG=/tmp/gate.log -- "$MOAT_ATTACKS/attack_exec_gate_procmem" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
		t_ok "attack exec_gate_procmem ($2): blocked"
	else
		t_fail "attack exec_gate_procmem ($2): blocked" "exit $rc" "$out"
	fi
	t_nomatch "no push ran in the /proc/PID/mem attack's session ($2)" "push" \
		"$(ms exec "$1" -- /bin/sh -c 'cat /tmp/gate.log 2>/dev/null')"
}
procmem "$N-x" "in a session"
"$MOAT_PROGRAMS/nolandlock" "$MOAT" run --result nl.json -- /bin/true
t_eq "nolandlock: moat runs as on a kernel without Landlock (test set-up)" 0 \
	"$(python3 -c 'import json; print(json.load(open("nl.json"))["isolation"]["landlock_abi"])')"
"$MOAT_PROGRAMS/nolandlock" "$MOAT" session create --policy m.yaml --name "$N-m" >/dev/null
t_eq "create a session without Landlock" 0 "$?"
procmem "$N-m" "in a session without Landlock"
out=$(ms exec "$N-m" -- /bin/sh -c 'echo x >/proc/self/comm' 2>&1)
t_match "with exec.approve, /proc is read-only" "Read-only file system" "$out"

# --- a path the sandbox can change: the kernel resolves it again after the
# gate's answer, so arguments a rule holds for another program are refused
# through it; others go on, and an absolute path on read-only mounts too.
out=$(ms exec "$N-m" -- /bin/sh -c 'ln -sf /opt/gate/git /tmp/lnk; /tmp/lnk status; /tmp/lnk push x; echo "rc=$?"' 2>&1)
t_match "through a link in /tmp: git status runs" "ran: status" "$out"
t_match "through a link in /tmp: a push is refused at once" "Operation not permitted.*rc=126" "$(printf '%s' "$out" | tr '\n' ' ')"
t_has "the log says why" '"type":"exec.denied".*"reason":"its arguments are ones exec.approve holds for another program, and its path goes through a folder or link' m.yaml.audit
# --- a script whose "#!" line runs the held program with held arguments
out=$(ms exec "$N-m" -- /bin/sh -c 'printf "#!/opt/gate/git push\n" >/tmp/s; printf "#!/bin/sh\necho plain \$*\n" >/tmp/p; chmod 755 /tmp/s /tmp/p; /tmp/p hello; /tmp/s origin; echo "rc=$?"' 2>&1)
t_match "a script with an ordinary interpreter runs" "plain hello" "$out"
t_match "a script whose #! line is \"git push\" is refused" "Operation not permitted.*rc=126" "$(printf '%s' "$out" | tr '\n' ' ')"
t_nomatch "and the push it asked for never ran" "ran: push" "$out"
t_has "the log says why" '"type":"exec.denied".*"reason":"it is a script whose \\"#!\\" line runs a program exec.approve holds' m.yaml.audit

out=$(timeout -k 5 300 "$MOAT" session exec "$N-m" --env MOAT_GATE_PROGRAM=/opt/gate/gitelf \
	--env MOAT_GATE_LOG=/tmp/gate.log -- "$MOAT_ATTACKS/attack_exec_gate_linkswap" 2>&1)
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack exec_gate_linkswap (in a session): blocked"
else
	t_fail "attack exec_gate_linkswap (in a session): blocked" "exit $rc" "$out"
fi
t_nomatch "no push ran in the link swap attack's session" "push" \
	"$(ms exec "$N-m" -- /bin/sh -c 'cat /tmp/gate.log 2>/dev/null')"

# --- an ELF whose loader (PT_INTERP) is the held program, run with held
# arguments directly and as a script's interpreter
out=$(timeout -k 5 300 "$MOAT" session exec "$N-m" --env MOAT_GATE_PROGRAM=/opt/gate/gitinterp \
	--env MOAT_GATE_LOG=/tmp/gate.log -- "$MOAT_ATTACKS/attack_exec_gate_interp" 2>&1)
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack exec_gate_interp (in a session): blocked"
else
	t_fail "attack exec_gate_interp (in a session): blocked" "exit $rc" "$out"
fi
t_nomatch "no push ran in the PT_INTERP attack's session" "push" \
	"$(ms exec "$N-m" -- /bin/sh -c 'cat /tmp/gate.log 2>/dev/null')"
t_has "the log says why" '"type":"exec.denied".*"reason":"its (\\"#!\\" interpreter|ELF loader \(PT_INTERP\))' m.yaml.audit
# A dynamic program of the base system with held arguments: its loader is
# on a read-only mount, and it runs.
out=$(ms exec "$N-m" -- /bin/echo push through the loader 2>&1)
t_eq "a dynamic program with held arguments, on the base system, runs" "0 push through the loader" "$? $out"

# --- a read-only bind of a folder the sandbox can also write, through the
# read-write workspace: not a path the sandbox cannot change
mkdir -p ws/tools
chmod 755 ws ws/tools
! is_root || chown -R 65534:65534 ws
policy w.yaml 1s '
    - {path: /opt/gate/gitelf, args: ["push", "*"]}'
sed -i "s|  read_only: \[|  read_only: [\"$MOAT_TDIR/ws/tools:/opt/tools\", |" w.yaml
ms create --policy w.yaml --workspace "$MOAT_TDIR/ws" --name "$N-w" >/dev/null
t_eq "create a session whose read-only /opt/tools is a folder of its workspace" 0 "$?"
out=$(ms exec "$N-w" -- /bin/sh -c 'cp /bin/true /workspace/tools/t; /opt/tools/t status; echo "status rc=$?"; /opt/tools/t push x; echo "push rc=$?"' 2>&1)
t_match "a program there with other arguments runs" "status rc=0" "$out"
t_match "held arguments through the aliased read-only folder are refused" "Operation not permitted.*push rc=126" "$(printf '%s' "$out" | tr '\n' ' ')"
t_has "the log says why" '"type":"exec.denied".*"reason":"its arguments are ones exec.approve holds for another program, and its path goes through a folder or link' w.yaml.audit
# the link swap attack, its links made in the workspace and run through the
# read-only /opt/tools
out=$(timeout -k 5 300 "$MOAT" session exec "$N-w" --env MOAT_GATE_PROGRAM=/opt/gate/gitelf \
	--env MOAT_GATE_LOG=/tmp/gate.log --env MOAT_GATE_SWAP_DIR=/workspace/tools \
	--env MOAT_GATE_SWAP_VIA=/opt/tools -- "$MOAT_ATTACKS/attack_exec_gate_linkswap" 2>&1)
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack exec_gate_linkswap (through a read-only bind of a workspace folder): blocked"
else
	t_fail "attack exec_gate_linkswap (through a read-only bind of a workspace folder): blocked" "exit $rc" "$out"
fi
t_nomatch "no push ran in the aliased folder's session" "push" \
	"$(ms exec "$N-w" -- /bin/sh -c 'cat /tmp/gate.log 2>/dev/null')"

