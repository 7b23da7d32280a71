#!/bin/bash
# libmoat's sandbox object driven directly (tests/api/api_sandbox.c): one
# live sandbox, commands one after another and at once with their status,
# output and accounting, a signal to one, the policy's confinement, the
# caller's signals untouched, and nothing left after stop and destroy.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

API="$(dirname "$MOAT")/moat-api-sandbox"
if [ ! -x "$API" ]; then
	t_fail "the sandbox object driver is staged" "missing: $API"
	exit 0
fi
out=$("$API" </dev/null 2>&1)
rc=$?
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*) n=$((n + 1)); t_ok "${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); t_fail "${line#not ok * - }" "$(printf '%s\n' "$out" | grep '^#' | tr '\n' ' ')" ;;
	esac
done <<<"$out"
plan=$(printf '%s\n' "$out" | sed -n 's/^1\.\.//p')
t_eq "the driver ran every check it planned and exited 0" "$plan 0" "$n $rc"
