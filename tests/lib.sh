# Shared helpers for integration tests. Each test script sources this file,
# calls t_ok / t_fail (or the assert helpers) once per check, and prints TAP
# lines that tests/run counts. Variables set by tests/run:
#   MOAT        the moat binary under test
#   MOAT_MODE   root | rootless
#   MOAT_TDIR   a private scratch folder for this script (removed afterwards)
#   MOAT_ATTACKS folder of compiled attack programs
#   MOAT_PROGRAMS folder of compiled limit-hitting programs (tests/programs)
#   MOAT_SRC    the tests folder (read-only copy)

: "${MOAT:?}" "${MOAT_MODE:?}" "${MOAT_TDIR:?}"
T_PREFIX="${T_PREFIX:-$(basename "$0" .sh)}"

t_ok() { echo "ok - [$MOAT_MODE] $T_PREFIX: $1"; }
t_fail() {
	echo "not ok - [$MOAT_MODE] $T_PREFIX: $1"
	shift
	for l in "$@"; do printf '#   %s\n' "$l"; done
}
t_skip() {
	if [ "${CI:-}" = true ]; then
		t_fail "$1" "skipped in CI: $2"
	else
		echo "ok - [$MOAT_MODE] $T_PREFIX: $1 # SKIP $2"
	fi
}

# t_na NAME WHY: a check that by design applies to the other mode only (not a
# missing kernel feature, which t_skip reports and CI counts as a failure).
t_na() { echo "ok - [$MOAT_MODE] $T_PREFIX: $1 # SKIP $2"; }

# t_check NAME CMD...: passes when CMD succeeds.
t_check() {
	name="$1"
	shift
	if out=$("$@" 2>&1); then t_ok "$name"; else t_fail "$name" "command failed: $*" "$out"; fi
}

# t_eq NAME EXPECTED ACTUAL
t_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "expected: $2" "actual:   $3"; fi
}

# t_match NAME REGEX ACTUAL
t_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_ok "$1"; else t_fail "$1" "expected to match: $2" "actual: $3"; fi
}

# t_nomatch NAME REGEX ACTUAL
t_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_fail "$1" "must not match: $2" "actual: $3"; else t_ok "$1"; fi
}

# mrun ARGS...: runs moat, capturing stdout in $OUT, stderr in $ERR, status in $RC.
mrun() {
	OUT=$("$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# json FILE EXPR: evaluates a Python expression on the parsed JSON file (j).
json() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

is_root() { [ "$MOAT_MODE" = root ]; }
