#!/bin/bash
# moat run: every resource limit hit by a program built to hit it, with the
# verdict and the figures the result reports. Where the run has a cgroup
# (root here; rootless on a host that delegates one) the cgroup's limits and
# accounting are checked; where it has none, the honest fallback report is.
# Every abusive program runs under moat's own limits and a wall timeout.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

P="${MOAT_PROGRAMS:?}"
R="$MOAT_TDIR/r.json"
lim() { mrun run --ro "$P:/p" --time 20s --result "$R" "$@"; }
j() { json "$R" "$1"; }

# Which kind of run this host gives us, from a run that does nothing.
mrun run --result "$R" -- /bin/true
cg=$(j 'j["isolation"]["cgroup"]')
if is_root; then
	# As root the per-run cgroup is required wherever a memory
	# controller is mounted.
	if grep -qE ' - cgroup2? .*(memory|rw$|nsdelegate)' /proc/self/mountinfo; then
		t_match "root: the run has a cgroup" '^(v1|v2|hybrid)$' "$cg"
	else
		t_skip "root: the run has a cgroup" "no cgroup filesystem mounted"
	fi
fi

if [ "$cg" != none ]; then
	# --mem: the cgroup's OOM killer, seen in the cgroup's own events.
	lim --mem 32M -- /p/memhog
	t_eq "memory hog: status oom" oom "$(j 'j["status"]')"
	t_eq "memory hog: limit memory" memory "$(j 'j["limit"]')"
	t_eq "memory hog: exit 137" 137 "$RC"
	peak=$(j 'j["memory_peak_bytes"]')
	t_check "memory hog: peak ${peak} at the 32 MiB limit" test "$peak" -ge $((24 << 20)) -a "$peak" -le $((32 << 20))
	t_eq "memory hog: enforced by cgroup" cgroup "$(j 'j["enforced"]["memory"]["by"]')"

	# Exact peak of a run that stays under its limit.
	lim --mem 128M -- /p/memhog 40
	t_eq "memory 40 MiB under 128 MiB: exited" exited "$(j 'j["status"]')"
	peak=$(j 'j["memory_peak_bytes"]')
	t_check "memory 40 MiB: peak ${peak} between 40 and 48 MiB" test "$peak" -ge $((40 << 20)) -a "$peak" -le $((48 << 20))

	# --pids: a fork bomb ends as pids_limit, fast, and the host stays usable.
	# Bounds count in what this machine takes now for a plain run and for
	# one fork and exec.
	base=$(baseline_ms "$MOAT" run --ro "$P:/p" -- /bin/true)
	fork=$(baseline_ms /bin/true)
	start=$(date +%s%N)
	lim --pids 16 -- /p/forkbomb
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	t_eq "fork bomb: status pids_limit" pids_limit "$(j 'j["status"]')"
	t_eq "fork bomb: limit pids" pids "$(j 'j["limit"]')"
	bound=$((3000 + 4 * base))
	t_check "fork bomb: ended within ${bound} ms (took ${ms} ms; a plain run ${base} ms)" test "$ms" -lt "$bound"
	after=$(ms_of /bin/true)
	bound=$((500 + 20 * fork))
	t_check "host forks right after the bomb (${after} ms; ${fork} ms before it)" test "$after" -lt "$bound"

	# The pids limit counts threads, not only processes.
	lim --pids 16 -- /p/threadbomb
	t_eq "thread bomb: status pids_limit" pids_limit "$(j 'j["status"]')"
	t_match "thread bomb: fewer than 16 threads" 'threadbomb: ([0-9]|1[0-5]) threads' "$OUT"

	# --cpu: CPU time of every thread together, from the cgroup, ended by
	# the supervisor's budget timer.
	lim --cpu 1 -- /p/spinner 4
	t_eq "4-thread spinner: status cpu_limit" cpu_limit "$(j 'j["status"]')"
	t_eq "4-thread spinner: limit cpu" cpu "$(j 'j["limit"]')"
	cpu=$(j 'j["cpu_ms"]')
	# Past the budget the threads spin on until the supervisor's timer
	# fires and the kill lands: 150 ms of CPU, plus each core's share of
	# the scheduling delay a loaded machine adds (four forks' worth).
	over=$((150 + $(nproc) * 4 * fork))
	t_check "4-thread spinner: cpu_ms ${cpu} within 1000..$((1000 + over))" test "$cpu" -ge 1000 -a "$cpu" -le $((1000 + over))

	# A sleeper spends no CPU: --cpu is not a wall clock.
	lim --cpu 1 -- /bin/sleep 1.5
	t_eq "sleeper under --cpu 1: exited" exited "$(j 'j["status"]')"
	cpu=$(j 'j["cpu_ms"]')
	t_check "sleeper: cpu_ms ${cpu} < 100" test "$cpu" -lt 100
	lim --time 1 -- /bin/sleep 10
	t_eq "sleeper under --time 1: timeout" timeout "$(j 'j["status"]')"

	# Exact CPU accounting: the run's cpu_ms against what the program
	# measured of itself (CLOCK_PROCESS_CPUTIME_ID, all its threads); the
	# difference is exec and the init, a few milliseconds.
	lim -- /p/spinner 2 0.5
	cpu=$(j 'j["cpu_ms"]')
	u=$(j 'j["cpu_user_ms"]')
	s=$(j 'j["cpu_sys_ms"]')
	own=$(printf '%s' "$OUT" | sed -n 's/spinner: \([0-9]*\) ms cpu/\1/p')
	# Both figures are rounded down to the millisecond, from different
	# counters: 2 ms either way is rounding.
	t_check "spinner: cpu_ms ${cpu} = its own ${own} ms + at most 50" test "$cpu" -ge "$((${own:-999999} - 2))" -a "$cpu" -le "$((${own:-0} + 50))"
	t_eq "cpu_ms is user + system" "$cpu" "$((u + s))"

	# --cpus: bandwidth.
	lim --cpus 0.5 -- /p/spinner 2 1
	cpu=$(j 'j["cpu_ms"]')
	t_eq "--cpus 0.5: exited" exited "$(j 'j["status"]')"
	# Two spinning threads for 1 s would use up to 2000 ms; the quota
	# holds them to 500 (a busy host may give them less, never more).
	t_check "--cpus 0.5 for 1 s: cpu_ms ${cpu} <= 650" test "$cpu" -gt 0 -a "$cpu" -le 650
	t_eq "--cpus enforced by cgroup" cgroup "$(j 'j["enforced"]["cpus"]["by"]')"
else
	# No cgroup: what stands in, and nothing more is claimed.
	t_match "no cgroup: the note says why" '.+' "$(j 'j["isolation"].get("cgroup_note","")')"
	lim --mem 32M -- /p/memhog
	t_eq "memory hog: memory enforced by rlimit" rlimit "$(j 'j["enforced"]["memory"]["by"]')"
	t_match "memory hog: limits_note names RLIMIT_DATA" 'RLIMIT_DATA per process' "$(j 'j.get("limits_note","")')"
	t_match "memory hog: malloc failed under RLIMIT_DATA" 'malloc failed' "$OUT"
	t_eq "memory hog: no memory peak is claimed" None "$(j 'j["memory_peak_bytes"]')"
	t_eq "memory hog: status is not oom" exited "$(j 'j["status"]')"

	lim --time 3 --pids 16 -- /p/forkbomb
	t_eq "fork bomb: pids enforced by rlimit" rlimit "$(j 'j["enforced"]["pids"]["by"]')"
	t_eq "fork bomb: ended by the wall timer" timeout "$(j 'j["status"]')"

	lim --cpu 1 -- /p/spinner 4
	t_eq "spinner: cpu enforced by rlimit" rlimit "$(j 'j["enforced"]["cpu"]["by"]')"
	t_eq "spinner: status cpu_limit (SIGXCPU)" cpu_limit "$(j 'j["status"]')"
	t_eq "spinner: signal SIGXCPU" 24 "$(j 'j["signal"]')"

	lim --cpus 0.5 -- /bin/true
	t_eq "--cpus without a cgroup: enforced by none" none "$(j 'j["enforced"]["cpus"]["by"]')"
fi

# Output, /tmp and inodes do not depend on a cgroup.
lim --output 1M -- /usr/bin/yes
t_eq "output flood: status output_limit" output_limit "$(j 'j["status"]')"
t_eq "output flood: exactly 1 MiB kept" 1048576 "$(j 'j["stdout_bytes"]')"

lim --tmp-size 8M -- /p/fillfs bytes /tmp
t_eq "/tmp filler: stopped by ENOSPC" 0 "$RC"
t_match "/tmp filler: at most 8 MiB written" 'fillfs: [0-9]+ bytes, then No space' "$OUT"
n=$(printf '%s' "$OUT" | sed -n 's/fillfs: \([0-9]*\) bytes.*/\1/p')
t_check "/tmp filler: ${n} <= 8388608" test "${n:-0}" -le 8388608
t_eq "/tmp: enforced by tmpfs" tmpfs "$(j 'j["enforced"]["tmp"]["by"]')"

lim --tmp-size 8M -- /p/fillfs inodes /tmp
t_eq "inode filler: stopped by ENOSPC" 0 "$RC"
n=$(printf '%s' "$OUT" | sed -n 's/fillfs: \([0-9]*\) files.*/\1/p')
t_check "inode filler: ${n} files <= 8192" test "${n:-99999}" -le 8192

# CPU time of a child its parent never waits for (SIGCHLD ignored, so the
# kernel reaps it): the cgroup counts it; without a cgroup the result must
# say its figure is an approximation.
lim -- python3 -c '
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
if os.fork() == 0:
    t = time.process_time()
    while time.process_time() - t < 1.0:
        pass
    os._exit(0)
while True:
    try:
        os.kill(os.getpid() + 1, 0)
    except ProcessLookupError:
        break
    time.sleep(0.05)
'
cpu=$(j 'j["cpu_ms"]')
if [ "$cg" != none ]; then
	t_check "auto-reaped child: its ${cpu} ms of CPU counted by the cgroup" test "$cpu" -ge 800
else
	t_match "auto-reaped child: the CPU figure is marked approximate" "cpu_ms: approximate.*ignoring SIGCHLD" \
		"$(j 'j.get("limits_note")')"
fi

# limits.disk and limits.inodes (the code profile sets them) make /out a
# capped tmpfs, copied into the --out folder after the run.
D="$MOAT_TDIR/diskout"
mkdir -p "$D"
is_root && chown 65534:65534 "$D"
printf 'before\n' >"$D/old"
printf 'stale\n' >"$D/kept"
lim --out "$D" -- /bin/sh -c 'ls /out; echo new > old; mkdir -p sub; echo deep > sub/f; ln -s sub/f rel'
t_eq "disk: enforced by a tmpfs" tmpfs "$(j 'j["enforced"]["disk"]["by"]')"
t_eq "inodes: enforced by a tmpfs" tmpfs "$(j 'j["enforced"]["inodes"]["by"]')"
t_eq "/out starts empty (the folder's files are not shown)" "" "$OUT"
t_eq "the run's files are copied to --out" "new deep sub/f" \
	"$(cat "$D/old" 2>/dev/null) $(cat "$D/sub/f" 2>/dev/null) $(readlink "$D/rel")"
t_eq "files of the folder the run did not touch are kept" stale "$(cat "$D/kept" 2>/dev/null)"
if is_root; then
	t_eq "as root, the copy belongs to the folder's owner" 65534 "$(stat -c %u "$D/sub/f")"
fi
rm -rf "$D" && mkdir -p "$D" && { ! is_root || chown 65534:65534 "$D"; }
lim --out "$D" --disk 1M --inodes 16 -- /bin/sh -c \
	'head -c 2M /dev/zero > big 2>/dev/null; echo "big $?"; for i in $(seq 40); do touch f$i 2>/dev/null || { echo "touch $i"; break; }; done; head -c 100 /dev/zero > big2 2>&1'
t_eq "past --disk and --inodes the program sees ENOSPC" "big 1 touch 16" "$(printf '%s' "$OUT" | tr '\n' ' ' | sed 's/ $//')"
t_eq "and the run still ends normally" exited "$(j 'j["status"]')"
t_check "the copy holds at most --disk" test "$(du -sb "$D" | cut -f1)" -le $((1024 * 1024 + 64 * 4096))
# A hard link names a file twice: copied as two files it would double what
# the tmpfs held. The copy stops at the cap and the run fails closed.
rm -rf "$D" && mkdir -p "$D" && { ! is_root || chown 65534:65534 "$D"; }
lim --out "$D" --disk 1M -- /bin/sh -c 'head -c 700K /dev/zero > a; ln a b'
t_eq "hard links past --disk: setup_error" "setup_error 125" "$(j 'j["status"]') $RC"
t_match "and the error says the copy is partial" "may hold part of the output.*limits.disk" "$(j 'j.get("error")')"
# A link left in the folder (by an earlier run bound in place) is replaced,
# never written through; a name the copy cannot take fails the run closed.
rm -rf "$D" && mkdir -p "$D/full" && { ! is_root || chown -R 65534:65534 "$D"; }
printf 'canary\n' >"$MOAT_TDIR/outside"
ln -s "$MOAT_TDIR/outside" "$D/a"
printf 'x\n' >"$D/full/x"
lim --out "$D" -- /bin/sh -c 'echo mine > a'
t_eq "a link in the folder is replaced, not followed" "canary mine" \
	"$(cat "$MOAT_TDIR/outside") $(test -L "$D/a" || cat "$D/a")"
lim --out "$D" -- /bin/sh -c 'echo file > full'
t_eq "a name the copy cannot replace: setup_error" "setup_error 125" "$(j 'j["status"]') $RC"
t_match "and the error names it" "copy /out to filesystem.out .*: replace 'full' in the filesystem.out folder" "$(j 'j.get("error")')"
rm -rf "$D" && mkdir -p "$D" && { ! is_root || chown 65534:65534 "$D"; }
lim --out "$D" --disk 0 -- /bin/sh -c 'touch /out/f 2>/dev/null; echo $?'
t_eq "--disk 0: /out holds nothing" "1" "$OUT"
# The agent profile binds its workspace in place: not enforced, and said.
lim --profile agent --out "$D" --disk 64M -- /bin/true
t_eq "agent workspace: disk listed as not enforced" none "$(j 'j["enforced"]["disk"]["by"]')"
t_match "agent workspace: the note says why" "disk, inodes: not enforced" "$(j 'j.get("limits_note")')"
lim --disk 2000T -- /bin/true
t_match "--disk is range-checked" "--disk: limits.disk: .* is too large" "$ERR"
lim --inodes 5000000000 -- /bin/true
t_match "--inodes is range-checked" "--inodes: limits.inodes: .* is too large" "$ERR"
