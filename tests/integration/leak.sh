#!/bin/bash
# moat run leaves nothing behind: after many runs of /bin/true the host has
# no extra cgroups, mounts, namespaces, processes or file descriptors.
# Runs: 200 in the plain pass, 50 in a sanitizer build (each run costs
# several times more there), 1,000 in the soak (MOAT_SOAK=1, make soak);
# MOAT_LEAK_RUNS sets the number outright.
# Other test suites may run on the same host at the same time, so every
# count is of what this script owns: its own mount namespace, its own
# descendants, its own descriptors, and cgroups named after a moat process
# that no longer exists.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# As root, count mounts in a mount namespace of our own, where moat's runs
# start from and where nothing else mounts (other suites add and remove
# netns mounts in the host's namespace at any time).
if is_root && [ -z "${LEAK_PRIVATE_NS:-}" ] && command -v unshare >/dev/null; then
	LEAK_PRIVATE_NS=1 exec unshare -m --propagation private bash "$0"
fi

if [ -n "${MOAT_SOAK:-}" ]; then RUNS=1000
elif [ -n "${MOAT_SANITIZED:-}" ]; then RUNS=50
else RUNS=200; fi
RUNS="${MOAT_LEAK_RUNS:-$RUNS}"

# Run cgroups are named moat-PID-N after the supervisor that made them; one
# whose supervisor is gone has leaked.
orphan_cgroups() {
	find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name 'moat-*' 2>/dev/null |
		while read -r d; do
			pid=$(basename "$d" | cut -d- -f2)
			case "$pid" in supervisor) pid=$(basename "$d" | cut -d- -f3) ;; esac
			# still there after its owner was found gone (not one that a
			# concurrent run removed in between)
			[ -d "/proc/$pid" ] || [ ! -d "$d" ] || echo "$d"
		done | wc -l
}
# Our descendants (the counting pipeline itself excluded by name).
descendants() {
	ps -e -o pid=,ppid=,comm= | awk -v root=$$ '
		{ parent[$1] = $2; comm[$1] = $3 }
		END {
			for (p in parent) {
				q = p
				while (q in parent && q != root && q > 1) q = parent[q]
				if (q == root && p != root && comm[p] != "ps" && comm[p] != "awk" && comm[p] != "bash") n++
			}
			print n + 0
		}'
}
# Namespaces held by us and our descendants.
namespaces() {
	for p in $$ $(pgrep -P $$ 2>/dev/null); do
		ls -L /proc/"$p"/ns 2>/dev/null >/dev/null && stat -L -c %i /proc/"$p"/ns/* 2>/dev/null
	done | sort -u | wc -l
}
# Rootless, the namespace is the host's, where another script of the suite
# (two run at once) may be adding or removing a test network namespace;
# those mounts are under /run/netns, and moat never makes one there.
mounts() { grep -vc ' /run/netns' /proc/self/mountinfo; }
# settled COUNTER BASELINE: COUNTER's value once it is back at or below
# BASELINE, waiting up to 5 s. Something transient (another script's mount
# or just-orphaned init) goes within that; a leak stays.
settled() {
	local n
	for _ in $(seq 10); do
		n=$("$1")
		[ "$n" -le "$2" ] && break
		sleep 0.5
	done
	echo "$n"
}
# Rootless, the namespace is the host's: another suite's transient mount
# may be there at either moment of counting, a leaked one stays; fewer
# mounts than before is someone else's unmount, not a leak.
fds() { ls /proc/$$/fd | wc -l; }
# Processes of the test user: others may run as the same user at the same
# time, so the count is of sandbox inits that lost their supervisor (a live
# moat-init always has its moat as parent).
orphan_inits() { ps -u "$(id -u)" -o ppid=,comm= | awk '$2 == "moat-init" && $1 == 1' | wc -l; }
# An init whose supervisor was just killed (here, or by another script of
# the same user) is reparented for the moment its PDEATHSIG takes: only one
# still there once settled has leaked.

# One warm-up run, so lazily made state (none is expected) is counted in
# the baseline rather than as a leak.
"$MOAT" run -- /bin/true
b_cg=$(orphan_cgroups) b_desc=$(descendants) b_ns=$(namespaces) b_mnt=$(mounts) b_fd=$(fds) b_init=$(orphan_inits)

fails=0
start=$(date +%s%N)
for _ in $(seq "$RUNS"); do
	"$MOAT" run -- /bin/true || fails=$((fails + 1))
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
t_eq "$RUNS runs of /bin/true all succeed (${ms} ms, $((ms * 1000 / RUNS)) us each)" 0 "$fails"

# Orphaned cgroups are counted host-wide, where another suite's may come and
# go (the keeper and sandbox-object tests kill a holder on purpose, and its
# cgroups wait for the next moat start to sweep them): fewer than before is
# theirs gone, more that stays is a leak.
a_cg=$(settled orphan_cgroups "$b_cg")
t_check "no leftover run cgroups ($b_cg before, $a_cg after)" test "$a_cg" -le "$b_cg"
a_mnt=$(settled mounts "$b_mnt")
t_check "no extra mounts in our namespace (${b_mnt} before, ${a_mnt} after)" test "$a_mnt" -le "$b_mnt"
t_eq "no extra namespaces held by us or our children" "$b_ns" "$(namespaces)"
t_eq "no leftover descendant processes" "$b_desc" "$(descendants)"
a_fd=$(fds)
t_check "no extra descriptors in this shell ($b_fd before, $a_fd after)" test "$a_fd" -le "$b_fd"
a_init=$(settled orphan_inits "$b_init")
t_check "no orphaned sandbox init of the test user ($b_init before, $a_init after)" test "$a_init" -le "$b_init"

# The same after runs that a limit ended, which exercise the kill paths.
if [ -d "${MOAT_PROGRAMS:-/nonexistent}" ]; then
	for _ in $(seq 10); do
		"$MOAT" run --ro "$MOAT_PROGRAMS:/p" --pids 8 --time 2 -- /p/forkbomb >/dev/null 2>&1
		"$MOAT" run --ro "$MOAT_PROGRAMS:/p" --mem 16M --time 2 -- /p/memhog >/dev/null 2>&1
	done
	a_cg=$(settled orphan_cgroups "$b_cg")
	t_check "after limit kills: no leftover run cgroups ($b_cg before, $a_cg after)" test "$a_cg" -le "$b_cg"
	a_mnt=$(settled mounts "$b_mnt")
	t_check "after limit kills: no extra mounts (${b_mnt} before, ${a_mnt} after)" test "$a_mnt" -le "$b_mnt"
	t_eq "after limit kills: no leftover descendants" "$b_desc" "$(descendants)"
fi

# A moat killed with SIGKILL at a random moment (during setup, during the
# run, while a limit ends it) cannot clean up; the next moat of the same
# user sweeps what it left, whatever options either run had: every limit
# flag is used by some killed run, the sweeping run uses none. A few
# rounds by default; MOAT_SOAK=1 runs many more.
KILLS="${MOAT_LEAK_KILLS:-12}"
[ -n "${MOAT_SOAK:-}" ] && KILLS="${MOAT_LEAK_KILLS:-200}"
export TMPDIR="$MOAT_TDIR/tmp"
mkdir -p "$TMPDIR"
printf 'while True:\n    pass\n' >"$MOAT_TDIR/loop.py"
printf '{"name": "a", "stdin": "", "expected_stdout": ""}\n' >"$MOAT_TDIR/cases.jsonl"
# Staging folders of the judge in this private TMPDIR (no judge runs
# when they are counted).
orphan_stages() { find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'moat-judge*' | wc -l; }
flagsets=(
	"--cpus 0.5 --time 5"
	"--mem 64M --time 5"
	"--pids 16 --time 5"
	"--cpu 3 --time 5"
	"--output 1M --time 5"
	"--tmp-size 8M --files 64 --fsize 1M --time 5"
	"--time 300ms"
	"--out $MOAT_TDIR/kout --disk 8M --inodes 64 --time 5"
)
mkdir -p "$MOAT_TDIR/kout"
killed_stage=0
runs=0
for i in $(seq "$KILLS"); do
	if [ $((i % 4)) = 0 ]; then
		"$MOAT" judge --tests "$MOAT_TDIR/cases.jsonl" --source "$MOAT_TDIR/loop.py" --time 5 \
			>/dev/null 2>&1 &
	else
		# shellcheck disable=SC2086
		# Its own counter, so that every set is used, whatever KILLS is.
		"$MOAT" run ${flagsets[$((runs % ${#flagsets[@]}))]} -- sh -c 'yes >/dev/null & sleep 5' \
			>/dev/null 2>&1 &
		runs=$((runs + 1))
	fi
	mpid=$!
	# 0 to 400 ms: from option parsing through setup into the run.
	sleep "0.$(printf '%03d' $((RANDOM % 400)))"
	kill -KILL "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
done
# And surely, last: a run with --cpus and a judge, each killed once its
# sandbox runs (moat has a child), so that a cpu cgroup and a staging
# folder are there for a run without --cpus to sweep.
started() { # PID
	for _ in $(seq 200); do
		pgrep -P "$1" >/dev/null && return 0
		sleep 0.05
	done
	return 1
}
"$MOAT" run --cpus 0.5 --time 20 -- sleep 20 >/dev/null 2>&1 &
mpid=$!
started "$mpid" && sleep 0.2
kill -KILL "$mpid"
wait "$mpid" 2>/dev/null
"$MOAT" judge --tests "$MOAT_TDIR/cases.jsonl" --source "$MOAT_TDIR/loop.py" --time 20 >/dev/null 2>&1 &
mpid=$!
# The judge's worker, then its sandbox.
started "$mpid" && sleep 0.5
kill -KILL "$mpid"
wait "$mpid" 2>/dev/null
# The sandboxes die with their moat (and a judge's worker ends its run on
# the judge's death); give them a moment.
sleep 1.5
left_cg=$(orphan_cgroups)
left_stage=$(orphan_stages)
"$MOAT" run -- /bin/true
t_eq "$KILLS moats killed at random moments, then a --cpus run and a judge mid-run: the next run (no options) sweeps their cgroups (${left_cg} left before it)" \
	"$b_cg" "$(orphan_cgroups)"
t_eq "and the judge's staging folders (${left_stage} left before it)" 0 "$(orphan_stages)"
t_eq "after kills: no leftover descendants" "$b_desc" "$(descendants)"
a_init=$(settled orphan_inits "$b_init")
t_check "after kills: no orphaned sandbox init ($b_init before, $a_init after)" test "$a_init" -le "$b_init"
