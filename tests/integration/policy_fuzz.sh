#!/bin/bash
# The policy fuzzer's corpus, replayed through the parser, the emitter, the
# summary and the intersection: any input that crashes or breaks the YAML
# round trip fails here (the target aborts).
. "$MOAT_SRC/lib.sh"
F="$MOAT_STAGE/bin/fuzz_policy"
if [ ! -x "$F" ]; then
	t_fail "fuzz replay binary is built" "missing: $F"
	exit 0
fi
out=$("$F" "$MOAT_SRC/fuzz/corpus" 2>&1) && rc=0 || rc=$?
t_eq "corpus replays without a crash" 0 "$rc"
t_match "corpus is not empty" "replayed [1-9][0-9]* inputs" "$out"
