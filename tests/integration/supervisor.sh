#!/bin/bash
# The supervisor never blocks: a consumer that does not read (a pipe nobody
# reads, a pseudo-terminal flooded with terminal answers) cannot keep a run
# past its wall-clock limit or make moat deaf to the caller's signals, and a
# signal ends the run and removes its cgroup.
#
# Bounds come from a baseline measured here, under the same load: the time
# `--time 2s` takes with a consumer that reads (the slowest of three). A blocked supervisor is
# held for as long as the consumer stalls (30 s below), far past any bound.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
STALL=30

BASE=$(baseline_ms "$MOAT" run --time 2s -- sleep 10)
# The half second moat gives held output after the limit, and a margin for
# a loaded machine; a blocked supervisor takes the whole stall.
BOUND=$((BASE + 2000))

# A process that holds a FIFO open for reading and never reads it.
stalled_reader() { # FIFO
	rm -f "$1"
	mkfifo "$1"
	sleep "$STALL" <"$1" &
	READER=$!
}
stop_reader() { kill "$READER" 2>/dev/null; wait "$READER" 2>/dev/null; }

for stream in stdout stderr; do
	stalled_reader "$MOAT_TDIR/fifo"
	redir=">&1"
	[ $stream = stderr ] && redir=">&2"
	t=$(now_ms)
	if [ $stream = stdout ]; then
		"$MOAT" run --time 2s --output unlimited --result "r-$stream.json" -- sh -c "yes $redir" \
			>"$MOAT_TDIR/fifo" 2>/dev/null
	else
		"$MOAT" run --time 2s --output unlimited --result "r-$stream.json" -- sh -c "yes $redir" \
			2>"$MOAT_TDIR/fifo" >/dev/null
	fi
	took=$(($(now_ms) - t))
	stop_reader
	t_check "$stream into a pipe nobody reads: --time 2s ends in ${took} ms (bound ${BOUND} ms)" \
		test "$took" -le "$BOUND"
	t_eq "$stream into a pipe nobody reads: status timeout" timeout "$(json "r-$stream.json" 'j["status"]')"
	t_eq "$stream into a pipe nobody reads: the result counts what was never delivered" True \
		"$(json "r-$stream.json" '0 < j["output_dropped_bytes"] <= j["stdout_bytes"] + j["stderr_bytes"]')"
done
mrun run --result r-ok.json -- /bin/echo hello
t_eq "a consumer that reads gets everything: output_dropped_bytes 0" 0 "$(json r-ok.json 'j["output_dropped_bytes"]')"

# The caller's terminal answers thousands of terminal queries into a
# pseudo-terminal whose command never reads its input, while the command
# keeps writing: moat's stdin to the sandbox's terminal is full.
cat >ptyflood.py <<'PY'
import os, pty, select, subprocess, sys, time
moat, result, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
m, s = pty.openpty()
t0 = time.monotonic()
p = subprocess.Popen([moat, "run", "-t", "--time", "2s", "--output", "unlimited", "--result", result, "--",
                      "sh", "-c", "while :; do printf '\\033[6n'; done"],
                     stdin=s, stdout=s, stderr=s, start_new_session=True)
os.close(s)
os.set_blocking(m, False)
answer = b"\x1b[24;80R" * 512
wrote = 0
while p.poll() is None and time.monotonic() - t0 < limit:
    r, w, _ = select.select([m], [m], [], 0.1)
    if m in w:
        try:
            wrote += os.write(m, answer)
        except (BlockingIOError, OSError):
            pass
    if m in r:
        try:
            os.read(m, 65536)
        except OSError:
            pass
if p.poll() is None:
    p.kill()
p.wait()
print("%d %d" % ((time.monotonic() - t0) * 1000, wrote))
PY
read -r took wrote < <(python3 ptyflood.py "$MOAT" "$MOAT_TDIR/r-pty.json" "$STALL")
t_check "pty flood (${wrote} bytes of answers): --time 2s ends in ${took} ms (bound ${BOUND} ms)" \
	test "${took:-999999}" -le "$BOUND"
t_check "pty flood: more answers were sent than a terminal holds" test "${wrote:-0}" -gt 65536
t_eq "pty flood: status timeout" timeout "$(json r-pty.json 'j["status"]' 2>&1)"

# SIGTERM, SIGINT and SIGHUP end the run even when the command ignores them
# and moat's consumer does not read: the command gets the signal, then
# about a second to end by itself.
# The bound: that second, the half second held output may take, what this
# machine adds to a run (the baseline's excess over its 2 s), and a margin.
over=$((BASE - 2000))
[ "$over" -lt 0 ] && over=0
SIG_BOUND=$((1000 + 500 + over + 1500))
# The sandbox exists (moat has a child): moat now handles the signal.
sandbox_started() { # PID
	for _ in $(seq 200); do
		pgrep -P "$1" >/dev/null && return 0
		sleep 0.05
	done
	return 1
}
for sig in TERM INT HUP; do
	stalled_reader "$MOAT_TDIR/fifo"
	"$MOAT" run --time 60s --output unlimited --result "r-$sig.json" -- \
		sh -c "trap '' TERM INT HUP; yes" >"$MOAT_TDIR/fifo" 2>/dev/null &
	mpid=$!
	sandbox_started "$mpid"
	sleep 0.3
	t=$(now_ms)
	kill -"$sig" "$mpid"
	wait "$mpid"
	rc=$?
	took=$(($(now_ms) - t))
	stop_reader
	t_check "SIG$sig to moat ends the run in ${took} ms (bound ${SIG_BOUND} ms)" test "$took" -le "$SIG_BOUND"
	t_eq "SIG$sig: status signaled" signaled "$(json "r-$sig.json" 'j["status"]' 2>&1)"
	if is_root; then
		left=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name "moat-$mpid-*" 2>/dev/null | wc -l)
		t_eq "SIG$sig: the run's cgroup is gone" 0 "$left"
	fi
done

# A command that handles the signal ends by itself and keeps its status.
"$MOAT" run -- sh -c 'trap "echo bye; exit 3" TERM; sleep 10 & wait' >term.out 2>&1 &
mpid=$!
sandbox_started "$mpid"
sleep 0.5
kill -TERM "$mpid"
wait "$mpid"
rc=$?
t_eq "a command that handles SIGTERM ends by itself" "bye 3" "$(cat term.out) $rc"
