#!/bin/bash
# libmoat's sandbox API driven directly, as a program embedding it would,
# not through the CLI (tests/api/api_run.c): sandboxes one after another in
# one process with each one's status, output and accounting, the stdin
# default (/dev/null, never the caller's fd 0 unless asked: fd 0 is a pipe
# holding bytes here), and a setup error's errno.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

API="$(dirname "$MOAT")/moat-api-run"
if [ ! -x "$API" ]; then
	t_fail "the API driver is staged" "missing: $API"
	exit 0
fi
out=$(echo piped | "$API" 2>&1)
rc=$?
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*) n=$((n + 1)); t_ok "${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); t_fail "${line#not ok * - }" "$(printf '%s\n' "$out" | grep '^#' | tr '\n' ' ')" ;;
	esac
done <<<"$out"
t_eq "the driver ran every check and exited 0" "10 0" "$n $rc"
