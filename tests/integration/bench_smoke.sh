#!/bin/bash
# The benchmark driver runs end to end and prints its tables. Not a timed
# test: a tiny iteration count only proves that every scenario works, that
# absent peers are named instead of measured, and that bad counts are
# refused.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
# The benchmark's sessions are this script's alone (lib.sh), so that the
# check that they are removed sees no other script's.
private_sessions

BENCH="$(dirname "$MOAT")/moat-bench"
if [ ! -x "$BENCH" ]; then
	t_fail "driver is built" "no moat-bench next to $MOAT"
	exit 0
fi

OUT=$("$BENCH" --moat "$MOAT" --runs 3 --warmup 1 --tp-runs 2 --tp-rounds 1 --mem-rounds 1 2>&1) && RC=0 || RC=$?
t_eq "driver exits 0" 0 "$RC"
t_match "header names the peers" '^peers: bwrap ' "$OUT"
t_match "start-up table for /bin/true" 'start-up to exit: /bin/true \(3 runs each' "$OUT"
t_match "start-up table for python" 'start-up to exit: .*python3 -c pass' "$OUT"
row() { printf '%s\n' "$OUT" | grep -E "^  $1" | head -1; }
t_match "bare run has a median" '^  bare fork\+exec +[0-9]+\.[0-9]+ ms' "$(row 'bare fork')"
t_match "moat run has a median, ratios and CPU time" '^  moat run +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+x +[0-9.]+x +([0-9.]+ ms|-)$' "$(row 'moat run')"
# A peer either has a number or says why it has none, never both.
bw=$(row 'bwrap --unshare-all \(read')
t_match "bwrap is measured or named absent" '([0-9.]+ ms .*x +([0-9.]+ ms|-)$)|(absent|does not work here)' "$bw"
if command -v bwrap >/dev/null 2>&1; then
	t_match "bwrap is measured when installed" '[0-9.]+ ms' "$bw"
else
	t_match "absent bwrap is said" 'absent: bwrap not found' "$bw"
fi
t_match "throughput table with 1 and 2 workers" 'moat run +2 +[0-9.]+/s' "$OUT"
t_match "memory table" 'moat run \(supervisor \+ init\) +2 +[0-9.]+ MB' "$OUT"
t_nomatch "no sandboxed sleep is left behind" 'never appeared' "$OUT"
for s in gateway "file trail" "moat judge"; do
	t_match "$s: a number or not available yet" "^$s: (not available yet|.*[0-9])" "$OUT"
done
t_match "sessions: session exec against a cold run, as a ratio" 'result: session exec is [0-9.]+x a cold run' "$OUT"
t_match "sessions: an idle keeper's CPU time" 'result: an idle keeper used [0-9]+ clock ticks' "$OUT"
t_match "sessions: an idle keeper's memory" 'result: an idle keeper holds at most [0-9.]+ MB' "$OUT"
t_match "sessions: session create against a cold run, as a ratio" 'result: session create is [0-9.]+x a cold run' "$OUT"
t_eq "sessions: the benchmark's session is removed" "" "$("$MOAT" session ls | grep ' bench-')"

OUT=$("$BENCH" --moat "$MOAT" --runs 0 2>&1) && RC=0 || RC=$?
t_eq "zero runs refused" 2 "$RC"
OUT=$("$BENCH" --moat "$MOAT" --runs 99999999 2>&1) && RC=0 || RC=$?
t_eq "runs above the cap refused" 2 "$RC"
t_match "the refusal says which option" 'runs 99999999: not a count in range' "$OUT"
OUT=$("$BENCH" --moat /nonexistent/moat 2>&1) && RC=0 || RC=$?
t_eq "missing moat binary refused" 2 "$RC"

# --only picks scenarios.
OUT=$("$BENCH" --moat "$MOAT" --only memory --mem-rounds 1 2>&1) && RC=0 || RC=$?
t_eq "--only memory exits 0" 0 "$RC"
t_nomatch "--only memory skips start-up" 'start-up to exit' "$OUT"
t_match "--only memory runs memory" '^memory: ' "$OUT"
