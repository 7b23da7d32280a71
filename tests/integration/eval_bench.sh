#!/bin/bash
# The moat eval benchmark (make bench, bench/eval/run.py) runs end to end on
# a small batch: every executor must pass exactly the correct samples, and
# the table is printed. Not a timed test: the figures are not checked.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
RUN="$MOAT_STAGE/bench/eval/run.py"
[ -f "$RUN" ] || { t_fail "benchmark script" "no $RUN staged"; exit 0; }
python3 "$RUN" --moat "$MOAT" --rounds 1 --problems 8 >bench.out 2>&1 && RC=0 || RC=$?
t_eq "eval bench: exit 0" 0 "$RC"
t_match "eval bench: the four executors" 'human-eval-style.*bare python3.*moat eval.*moat eval \(cold\)' "$(tr '\n' ' ' <bench.out)"
t_match "eval bench: the load average and the warm count" 'load average \(1 min\) [0-9.]+ before, [0-9.]+ after; moat eval ran [0-9]+ of 16 samples warm' "$(cat bench.out)"
t_match "eval bench: the ratios against the targets" 'moat eval / bare python3: +[0-9.]+x' "$(cat bench.out)"
