#!/bin/bash
# Sessions leave nothing behind: 20 sessions at once, each with a command
# running, then all removed: no keeper, command, cgroup, mount, network
# namespace, runtime folder, log, workspace or descriptor of ours is left.
# Counts are of what this script made (other scripts run sessions of the
# same user at the same time).
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# This script's sessions only (lib.sh): as root in a mount namespace of
# our own, which the keepers (started from here) inherit, so every mount
# in it is counted; rootless in a runtime folder of our own.
private_sessions

N="k$$"
COUNT=20
ms() { "$MOAT" session "$@"; }
cleanup() { for i in $(seq "$COUNT"); do "$MOAT" session rm --purge "$N-$i" >/dev/null 2>&1; done; }
trap cleanup EXIT
# Rootless, the mount namespace is the host's, where other scripts mount
# and unmount at any time: only mounts at a path of ours (all of this
# script's sessions' state is under its folder) are counted there; a
# count back at or below the baseline within 5 s is no leak, one that
# stays is.
if is_root; then
	mounts() { grep -vc ' /run/netns' /proc/self/mountinfo; }
else
	mounts() { grep -cF -- "$MOAT_TDIR" /proc/self/mountinfo; }
fi
settled_mounts() {
	local n
	for _ in $(seq 10); do
		n=$(mounts)
		[ "$n" -le "$1" ] && break
		sleep 0.5
	done
	echo "$n"
}
fds() { ls /proc/$$/fd | wc -l; }

b_mnt=$(mounts) b_fd=$(fds)
secs="95$$"
made=0
kpids="" paths=""
for i in $(seq "$COUNT"); do
	out=$(ms create --name "$N-$i" --json) || continue
	made=$((made + 1))
	kpids="$kpids $(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keeper_pid"])')"
	paths="$paths $(printf '%s' "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin)
print(j["state_dir"], j["socket"].rsplit("/", 1)[0], j["audit_log"], j["workspace"])')"
	ms exec --detach "$N-$i" -- sleep "$secs" >/dev/null
done
t_eq "$COUNT sessions at once" "$COUNT" "$made"
running=0
for _ in $(seq 100); do
	running=$(pgrep -c -f "^sleep $secs\$")
	[ "$running" = "$COUNT" ] && break
	sleep 0.1
done
t_eq "each with a command running" "$COUNT" "$running"
# The commands' network namespaces (ours to read: the same user, or root).
netns=$(for p in $(pgrep -f "^sleep $secs\$"); do stat -L -c %i "/proc/$p/ns/net" 2>/dev/null; done | sort -u)
t_eq "each in a network namespace of its own" "$COUNT" "$(printf '%s\n' $netns | grep -c .)"

# Their inits: the keepers' children.
inits=$(for k in $kpids; do cat /proc/"$k"/task/*/children 2>/dev/null; done)
t_eq "each keeper has its init" "$COUNT" "$(printf '%s\n' $inits | grep -c .)"
for i in $(seq "$COUNT"); do ms rm --purge "$N-$i" & done
wait
t_eq "all removed: none is listed" "" "$(ms ls | grep -- " $N-")"

# Settled: a keeper that was told to stop ends at once, but give the
# machine a moment.
left_k=""
for _ in $(seq 100); do
	left_k=""
	for k in $kpids; do kill -0 "$k" 2>/dev/null && left_k="$left_k $k"; done
	[ -z "$left_k" ] && break
	sleep 0.1
done
t_eq "no keeper is left" "" "$left_k"
t_eq "no command is left" 0 "$(pgrep -c -f "^sleep $secs\$")"
# A process left in one of their network namespaces: one of their inits
# (the keepers' children, read before the removal) that still lives there.
# Namespace inode numbers are reused, so a pid and an inode both matching
# is needed; an init that is still dying (its keeper killed it) gets 5 s.
left_ns=0
for _ in $(seq 50); do
	left_ns=0
	for p in $inits; do
		i=$(stat -L -c %i "/proc/$p/ns/net" 2>/dev/null) || continue
		printf '%s\n' $netns | grep -qx "$i" && left_ns=$((left_ns + 1))
	done
	[ "$left_ns" = 0 ] && break
	sleep 0.1
done
t_eq "no process is left in their network namespaces" 0 "$left_ns"
# Their cgroups are named moat-KEEPERPID-N; a pid that lives again is
# another process's (reused), not a keeper's. Settled over 5 s.
left_cg=0
for _ in $(seq 50); do
	left_cg=0
	for k in $kpids; do
		[ -d "/proc/$k" ] && continue
		left_cg=$((left_cg + $(find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name "moat-$k-*" 2>/dev/null | wc -l)))
	done
	[ "$left_cg" = 0 ] && break
	sleep 0.1
done
t_eq "no cgroup of theirs is left" 0 "$left_cg"
left_p=""
for p in $paths; do [ -e "$p" ] && left_p="$left_p $p"; done
t_eq "no runtime folder, record, log or workspace is left" "" "$left_p"
a_mnt=$(settled_mounts "$b_mnt")
t_check "no extra mounts in our namespace ($b_mnt before, $a_mnt after)" test "$a_mnt" -le "$b_mnt"
a_fd=$(fds)
t_check "no extra descriptors in this shell ($b_fd before, $a_fd after)" test "$a_fd" -le "$b_fd"
