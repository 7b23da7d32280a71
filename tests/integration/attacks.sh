#!/bin/bash
# The attack suite: every attack_* program from $MOAT_ATTACKS runs inside
# moat, and a check passes only when the attack reports BLOCKED (exit 0) and
# the host is unchanged afterwards. The host offers targets the attacks aim at:
# a canary file, a canary process, a TCP listener on loopback, an abstract unix
# socket, a System V shared memory segment, a /dev/shm file, and a secret in
# moat's own environment. Each attack's header may carry a RUN: line with
# extra moat options and EXPECT: result statuses that also count as held
# (a memory hog ends as "oom", a spinner as "timeout"). In a sanitizer build
# each attack runs in one mode only (lib.sh: in_other_mode).
#
# An attack on moat's host side has two steps: the first run plants
# something in its --rw folder, and a THEN: line in its header gives the
# options of a second run (as a later user of that folder would call moat;
# @RW@ is the folder, @CANARY@ the canary file), which runs the attack again
# with the argument "then". That second run holds when it reports BLOCKED or
# when moat refuses it (exit 125); the host must be unchanged either way.
#
#   ATTACK_FILTER=substring   run only the attacks whose name contains it
set -u
. "$MOAT_SRC/lib.sh"

SRCDIR="$MOAT_SRC/attacks"
[ -d "$MOAT_ATTACKS" ] || { t_fail "attack programs" "no folder $MOAT_ATTACKS"; exit 0; }

# --- the host's targets
CANARY="$MOAT_TDIR/canary"
CANARY_TEXT="canary $$ $RANDOM $RANDOM"
printf '%s\n' "$CANARY_TEXT" >"$CANARY"
chmod 644 "$CANARY"
# A host folder nobody gives a sandbox (owned by root in the root pass).
CANARY_DIR="$MOAT_TDIR/canary-dir"
mkdir -p "$CANARY_DIR"
printf 'marker\n' >"$CANARY_DIR/marker"
chmod 755 "$CANARY_DIR"
CANARY_DIR_STATE=$(stat -c '%u %g %a' "$CANARY_DIR"; ls -A "$CANARY_DIR")
CANARY_MODE=$(stat -c '%u %g %a' "$CANARY")
SHM_NAME="moat-canary-$$-$RANDOM"
printf 'x' >"/dev/shm/$SHM_NAME"
SECRET="moat-host-secret-$RANDOM$RANDOM"
ABSTRACT="moat-canary-abstract-$$-$RANDOM"
SHM_KEY=$((0x6d6f0000 + ($$ & 0xffff)))
HOSTNAME_BEFORE=$(cat /proc/sys/kernel/hostname)

bash -c 'exec -a moat-canary-sleep sleep 100000' &
CANARY_PID=$!

# One helper holds the TCP listener, the abstract socket and the shared
# memory segment, and writes every connection it accepts to a log.
ACCEPTS="$MOAT_TDIR/accepts"
PORTFILE="$MOAT_TDIR/port"
: >"$ACCEPTS"
python3 - "$PORTFILE" "$ACCEPTS" "$ABSTRACT" "$SHM_KEY" <<'PY' &
import ctypes, os, select, signal, socket, sys
portfile, log, abstract, key = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(key, 4096, 0o1000 | 0o600)  # IPC_CREAT
def bye(*_):
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(16)
u = socket.socket(socket.AF_UNIX); u.bind("\0" + abstract); u.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write("%d %d\n" % (t.getsockname()[1], shmid))
os.rename(portfile + ".tmp", portfile)
while True:
    r, _, _ = select.select([t, u], [], [])
    for s in r:
        c, _ = s.accept()
        with open(log, "a") as f:
            f.write("accepted on %s\n" % ("tcp" if s is t else "abstract"))
        c.close()
PY
HELPER_PID=$!
cleanup() {
	kill "$CANARY_PID" "$HELPER_PID" 2>/dev/null
	wait "$CANARY_PID" "$HELPER_PID" 2>/dev/null
	rm -f "/dev/shm/$SHM_NAME"
}
trap cleanup EXIT
for _ in $(seq 50); do [ -s "$PORTFILE" ] && break; sleep 0.1; done
read -r PORT SHMID <"$PORTFILE" || { t_fail "host targets" "the listener did not start"; exit 0; }
[ "$SHMID" -ge 0 ] || t_fail "host targets" "could not create the System V segment"

ENVS=(--env "MOAT_CANARY_PATH=$CANARY" --env "MOAT_CANARY_DIR=$CANARY_DIR" --env "MOAT_CANARY_PID=$CANARY_PID" --env "MOAT_CANARY_PORT=$PORT"
	--env "MOAT_CANARY_ABSTRACT=$ABSTRACT" --env "MOAT_CANARY_SHM=$SHM_NAME" --env "MOAT_CANARY_SHM_KEY=$SHM_KEY")

# attack_processes NAME: true while a process of this suite's attack NAME
# lives. Another suite running on the same host starts processes with the
# same arguments; its environment names its own canary, so a process counts
# as ours when its environment names our canary, or cannot be read (fail
# closed: a process that hides its environment is not excused).
attack_processes() {
	local pid env
	for pid in $(ps -eo pid=,args= | awk -v a="/attacks/attack_$1" '$2 == a {print $1}'); do
		env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || return 0
		[ -z "$env" ] && [ -d "/proc/$pid" ] && return 0
		printf '%s\n' "$env" | grep -qxF "MOAT_CANARY_PATH=$CANARY" && return 0
	done
	return 1
}

# host_unchanged NAME OUTDIR: the checks every attack must leave true.
host_unchanged() {
	local name="$1" out="$2" bad=""
	[ "$(cat "$CANARY" 2>/dev/null)" = "$CANARY_TEXT" ] && [ -f "$CANARY" ] && [ ! -L "$CANARY" ] ||
		bad="$bad canary-file"
	[ "$(stat -c '%u %g %a' "$CANARY")" = "$CANARY_MODE" ] || bad="$bad canary-file-mode"
	[ "$(stat -c '%u %g %a' "$CANARY_DIR"; ls -A "$CANARY_DIR")" = "$CANARY_DIR_STATE" ] || bad="$bad canary-folder"
	kill -0 "$CANARY_PID" 2>/dev/null || bad="$bad canary-process"
	kill -0 "$HELPER_PID" 2>/dev/null || bad="$bad listener-process"
	[ -s "$ACCEPTS" ] && bad="$bad listener-reached($(head -1 "$ACCEPTS"))"
	# Nothing in what the host reads back but files, folders and links that
	# stay inside: no FIFO, socket or device, no link that is absolute or
	# climbs with "..".
	local odd
	odd=$(find "$out" "$MOAT_TDIR/rw-$name" ! -type f ! -type d ! -type l 2>/dev/null | head -3)
	[ -n "$odd" ] && bad="$bad special-files($odd)"
	odd=$(find "$out" -type l \( -lname '/*' -o -lname '*..*' \) 2>/dev/null | head -3)
	[ -n "$odd" ] && bad="$bad escaping-links($odd)"
	[ -e "$out/late" ] && bad="$bad outlived-the-run"
	[ "$(cat /proc/sys/kernel/hostname)" = "$HOSTNAME_BEFORE" ] || bad="$bad hostname"
	# No process of the run survives it. The kernel may still be reaping the
	# last one for a moment after moat returns; a real leftover stays.
	local i left=yes
	for i in 1 2 3 4 5 6 7 8 9 10; do
		if ! attack_processes "$name"; then
			left=no
			break
		fi
		sleep 0.1
	done
	[ "$left" = yes ] && bad="$bad leftover-process"
	printf '%s' "$bad"
}

n=0
for bin in "$MOAT_ATTACKS"/attack_*; do
	[ -x "$bin" ] || continue
	name="${bin##*/attack_}"
	# The egress attacks need a gateway and upstream servers; net_attacks.sh
	# runs them. The file trail's attacks are judged by their audit log;
	# trail_attacks.sh runs them. The session cp attacks are judged by what
	# a copy did on the host: session_cp.sh runs them in a session. The exec
	# gate's need a session with exec.approve: approvals_exec.sh runs them.
	# moatd_client_* are clients of the daemon, run on the host: moatd_attacks.sh.
	case "$name" in net_* | trail_* | session_cp_* | exec_gate_* | moatd_client_*) continue ;; esac
	case "$name" in *"${ATTACK_FILTER:-}"*) ;; *) continue ;; esac
	n=$((n + 1))
	if in_other_mode "$n"; then
		t_na "$name" "the sanitizer pass runs it $(other_mode)"
		continue
	fi
	src="$SRCDIR/$name.c"
	header=$(head -1 "$src" 2>/dev/null)
	case "$header" in "/* ATTACK: "*" | LAYER: "*" | REF: "*" */") ;; *)
		t_fail "$name: header" "first line must be /* ATTACK: ... | LAYER: ... | REF: ... */"
		continue ;;
	esac
	runline=$(sed -n '2s|^/\* RUN: \(.*\) \*/$|\1|p' "$src")
	runline="${runline//@TDIR@/$MOAT_TDIR}"
	opts="${runline%%|*}"
	expect=""
	case "$runline" in *"EXPECT:"*) expect="${runline##*EXPECT: }" ;; esac
	out="$MOAT_TDIR/out-$name"
	mkdir -p "$out" "$MOAT_TDIR/rw-$name"
	# As root, moat runs the sandbox as an unprivileged host uid: the
	# writable bind must be open to it.
	chmod 777 "$MOAT_TDIR/rw-$name"
	res="$MOAT_TDIR/result-$name.json"
	# shellcheck disable=SC2086
	# CLOSE: N runs moat with its descriptor N closed.
	close_fd=$(sed -n '2,3s|^/\* CLOSE: \([0-2]\) \*/$|\1|p' "$src")
	closer=()
	[ -n "$close_fd" ] && closer=(bash -c "exec $close_fd>&-; exec \"\$@\"" _)
	# Without a closed descriptor the run gets /out and a --rw folder; with
	# one, nothing but its own options, so that what moat opens first is
	# what the attack names (the audit log), as a plain call would.
	binds=(--out "$out" --rw "$MOAT_TDIR/rw-$name:/rw")
	[ -n "$close_fd" ] && binds=()
	MOAT_HOST_SECRET="$SECRET" "${closer[@]}" timeout -k 5 60 "$MOAT" run --ro "$MOAT_ATTACKS:/attacks" \
		"${binds[@]}" "${ENVS[@]}" --result "$res" $opts -- "/attacks/attack_$name" \
		>"$MOAT_TDIR/stdout" 2>"$MOAT_TDIR/err" </dev/null && RC=0 || RC=$?
	OUT=$(head -c 4096 "$MOAT_TDIR/stdout")
	status=$(json "$res" 'j["status"]' 2>/dev/null)
	verdict=$(printf '%s\n' "$OUT" | grep -E '^(BLOCKED|ESCAPED|ERROR): ' | tail -1)
	[ -z "$verdict" ] && [ -n "$close_fd" ] &&
		verdict=$(grep -E '^(BLOCKED|ESCAPED|ERROR): ' "$MOAT_TDIR/err" | tail -1)
	held=no
	if [ "$RC" = 0 ] && [ "${verdict%%:*}" = BLOCKED ]; then
		held=yes
	elif [ -n "$expect" ] && [ -n "$status" ] && printf ',%s,' "$expect" | grep -q ",$status,"; then
		held=yes
		verdict="ended by the $status limit"
	fi
	then_opts=$(sed -n '2,3s|^/\* THEN: \(.*\) \*/$|\1|p' "$src")
	if [ "$held" = yes ] && [ -n "$then_opts" ]; then
		then_opts="${then_opts//@RW@/$MOAT_TDIR/rw-$name}"
		then_opts="${then_opts//@CANARY@/$CANARY}"
		# shellcheck disable=SC2086
		timeout -k 5 60 "$MOAT" run --ro "$MOAT_ATTACKS:/attacks" "${ENVS[@]}" $then_opts \
			-- "/attacks/attack_$name" then >"$MOAT_TDIR/stdout" 2>"$MOAT_TDIR/err" </dev/null && RC=0 || RC=$?
		OUT=$(head -c 4096 "$MOAT_TDIR/stdout")
		verdict=$(printf '%s\n' "$OUT" | grep -E '^(BLOCKED|ESCAPED|ERROR): ' | tail -1)
		if [ "$RC" = 0 ] && [ "${verdict%%:*}" = BLOCKED ]; then
			verdict="then: $verdict"
		elif [ "$RC" = 125 ] && [ "${verdict%%:*}" != ESCAPED ]; then
			verdict="then: moat refused: $(head -1 "$MOAT_TDIR/err")"
		else
			held=no
			verdict="then: exit $RC, ${verdict:-no verdict}"
		fi
	fi
	case "$name" in outlive_*) sleep 3.5 ;; esac
	# With a descriptor of moat closed, what the sandbox writes must reach
	# no host file in its place (the attack writes a mark on 0, 1 and 2).
	if [ -n "$close_fd" ]; then
		leaked=$(grep -rl --exclude=stdout --exclude=err "MOAT-STDIO-MARK" "$MOAT_TDIR" 2>/dev/null | head -1)
		[ -n "$leaked" ] && held=no && verdict="the sandbox's stdio went into $leaked"
		rm -f "$MOAT_TDIR"/audit-stdio-*.jsonl
	fi
	bad=$(host_unchanged "$name" "$out")
	if [ "$held" = yes ] && [ -z "$bad" ]; then
		t_ok "$name: $verdict"
	else
		t_fail "$name" "exit $RC, status ${status:-none}, verdict: ${verdict:-none}" \
			"host changed:${bad:- no}" "stderr: $(head -c 300 "$MOAT_TDIR/err")"
	fi
	rm -rf "$out" "$MOAT_TDIR/rw-$name" "$res"
done

if [ -z "${ATTACK_FILTER:-}" ]; then
	if [ "$n" -ge 100 ]; then t_ok "suite has $n attacks"; else t_fail "suite has only $n attacks (at least 100)"; fi
fi
