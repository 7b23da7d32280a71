#!/bin/bash
# One keeper per sandbox (keeper.h), driven through libmoat's client side
# by tests/api/keeper_drive.c: commands one after another and at once, each
# one's status and output; the keeper killed with SIGKILL leaves nothing
# behind; its socket is out of reach from inside the sandbox and of other
# users; at its connection cap it tells the next client so.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

DRIVE="$(dirname "$MOAT")/moat-keeper-drive"
if [ ! -x "$DRIVE" ]; then
	t_fail "the keeper driver is staged" "missing: $DRIVE"
	exit 0
fi

# tap_of OUTPUT: the driver's TAP lines as ours; echoes how many there were.
tap_of() {
	local n=0 line
	while IFS= read -r line; do
		case "$line" in
		"ok "*) n=$((n + 1)); t_ok "${line#ok * - }" >&3 ;;
		"not ok "*) n=$((n + 1)); t_fail "${line#not ok * - }" "$(printf '%s\n' "$1" | grep '^#' | tr '\n' ' ')" >&3 ;;
		esac
	done <<<"$1"
	echo "$n"
}
exec 3>&1

out=$("$DRIVE" "$MOAT" check 2>&1)
rc=$?
n=$(tap_of "$out")
t_eq "the driver ran every check and exited 0" "31 0" "$n $rc"

# --- SIGKILL: every process of the sandbox dies with its keeper, and what
# the kernel cannot take away (the cgroup, the runtime directory) goes with
# the next keeper started.
# A number of seconds no other test sleeps: how its processes are found.
secs="97$$"
line=$("$DRIVE" "$MOAT" hold "$secs" 2>&1)
read -r word kpid id sock <<<"$line"
t_eq "hold: a keeper runs a sandbox" keeper "$word"
sleeps=""
for _ in $(seq 100); do
	sleeps=$(ps -eo pid=,args= | grep "[s]leep $secs" | awk '{print $1}')
	[ "$(printf '%s\n' "$sleeps" | grep -c .)" = 2 ] && break
	sleep 0.05
done
t_eq "hold: two commands run in it" 2 "$(printf '%s\n' "$sleeps" | grep -c .)"
s1=$(printf '%s\n' "$sleeps" | head -1)
init=$(ps -o ppid= -p "$s1" | tr -d ' ')
t_eq "the sandbox's init is the keeper's child (its parent-death signal follows the keeper)" \
	"$kpid" "$(ps -o ppid= -p "$init" | tr -d ' ')"
rundir=$(dirname "$sock")
t_check "the runtime directory is there" test -S "$sock"
cg=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$kpid-*" 2>/dev/null)
if is_root; then
	t_match "as root the sandbox has a cgroup" "moat-$kpid-" "$cg"
fi
kill -KILL "$kpid"
left=""
for _ in $(seq 200); do
	left=$(ps -eo pid=,args= | grep "[s]leep $secs" || true)
	kill -0 "$init" 2>/dev/null && left="$left init $init"
	kill -0 "$kpid" 2>/dev/null && left="$left keeper $kpid"
	[ -z "$left" ] && break
	sleep 0.05
done
t_eq "keeper killed: no process of its sandbox is left" "" "$left"
# The sandbox's namespaces had no process left, so the kernel freed them,
# and its mounts with its mount namespace: none of its mounts is in ours.
t_eq "keeper killed: none of its mounts is in the host's table" "" "$(grep -F "$id" /proc/self/mountinfo)"
# Its runtime directory then waits for the next keeper of this user to
# sweep it; that may be another script's, running beside this one, so
# whether it is still there now is not checked, only that it goes.
# The next keeper started sweeps both.
line2=$("$DRIVE" "$MOAT" hold 1 2>&1)
read -r _ kpid2 _ sock2 <<<"$line2"
t_eq "the next keeper swept the dead one's runtime directory" "" "$(ls -d "$rundir" 2>/dev/null)"
t_eq "the next keeper swept the dead one's cgroup" "" \
	"$(find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "moat-$kpid-*" 2>/dev/null)"
[ -n "$kpid2" ] && kill -TERM "$kpid2" 2>/dev/null
for _ in $(seq 200); do kill -0 "$kpid2" 2>/dev/null || break; sleep 0.05; done
t_eq "a keeper told to end (SIGTERM) ends, and removes its folder" "" \
	"$(kill -0 "$kpid2" 2>/dev/null && echo alive; ls -d "$(dirname "$sock2")" 2>/dev/null)"

# --- The socket from inside the sandbox: by its path, through /proc/1/root,
# in every runtime folder, through an inherited descriptor.
out=$("$DRIVE" "$MOAT" attack "$MOAT_ATTACKS/attack_keeper_socket" "$MOAT_ATTACKS" 2>&1)
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack keeper_socket (in a keeper's sandbox): blocked"
else
	t_fail "attack keeper_socket (in a keeper's sandbox): blocked" "exit $rc" "$out"
fi

# --- A keeper at its connection cap (64) refuses the next one with a word,
# not in silence: the caller is told the keeper is busy and why.
KS="kcap$$"
trap '"$MOAT" session rm --purge "$KS" >/dev/null 2>&1' EXIT
ksock=$("$MOAT" session create --name "$KS" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['socket'])")
t_check "a session's keeper socket for the cap check" test -S "$ksock"
out=$(python3 - "$ksock" "$MOAT" "$KS" <<'PY'
import socket, subprocess, sys
held = []
for _ in range(64):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    held.append(s)
r = subprocess.run([sys.argv[2], 'session', 'exec', sys.argv[3], '--', 'true'], capture_output=True, text=True, timeout=120)
print(r.returncode, r.stderr.strip().replace('\n', ' '))
for s in held:
    s.close()
PY
)
t_match "at the cap, a client is told: keeper busy, naming the cap" \
	"^[1-9][0-9]* .*keeper busy: connection cap 64 reached" "$out"
ok=no
for _ in $(seq 100); do
	"$MOAT" session exec "$KS" -- true >/dev/null 2>&1 && { ok=yes; break; }
	sleep 0.1
done
t_eq "the held connections closed, the keeper takes clients again" yes "$ok"
"$MOAT" session rm --purge "$KS" >/dev/null 2>&1

# --- Another user: needs a second uid, which only root can take on.
if is_root; then
	out=$("$DRIVE" "$MOAT" otheruid 65534 2>&1)
	rc=$?
	n=$(tap_of "$out")
	t_eq "other uid: every check ran" "6 0" "$n $rc"
else
	t_na "another uid cannot use the keeper's socket" "needs a second uid: checked as root"
fi
