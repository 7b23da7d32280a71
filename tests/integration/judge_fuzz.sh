#!/bin/bash
# The judge fuzzer's corpus (cases files and harness replies), replayed
# through the parsers and comparisons: any input that crashes, breaks a cap,
# fails to match itself or fails without a reason fails here (the target
# aborts).
. "$MOAT_SRC/lib.sh"
F="$MOAT_STAGE/bin/fuzz_judge"
if [ ! -x "$F" ]; then
	t_fail "fuzz replay binary is built" "missing: $F"
	exit 0
fi
out=$("$F" "$MOAT_SRC/fuzz/judge-corpus" 2>&1) && rc=0 || rc=$?
t_eq "judge corpus replays without a crash" 0 "$rc"
t_match "judge corpus is not empty" "replayed [1-9][0-9]* inputs" "$out"
